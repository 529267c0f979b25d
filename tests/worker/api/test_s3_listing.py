"""ListObjectsV2 and ListObjects (v1) over a real service on a local directory: S3's order
(UTF-8 bytes: ``a-c`` before ``a/b``), prefixes, delimiters and pages."""

from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from tests.worker.api.s3_support import S3Api

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
KEYS = ["a-c", "a/b", "a/c/d", "a/c/e", "a/ca", "b", "b c+d", "z/y/x"]


@pytest.fixture
def tree(data_dir: Path) -> list[str]:
    for key in KEYS:
        (data_dir / key).parent.mkdir(parents=True, exist_ok=True)
        (data_dir / key).write_bytes(key.encode())
    return KEYS


def listed(s3: S3Api, **params: Any) -> tuple[list[str], list[str], ElementTree.Element]:
    answer = s3.get("/data", params=params)
    assert answer.status_code == 200, answer.text
    root = ElementTree.fromstring(answer.content)
    keys = [node.findtext(NS + "Key") or "" for node in root.iter(NS + "Contents")]
    prefixes = [node.findtext(NS + "Prefix") or "" for node in root.iter(NS + "CommonPrefixes")]
    return keys, prefixes, root


def test_everything_in_s3_order(s3: S3Api, tree: list[str]) -> None:
    keys, prefixes, root = listed(s3, **{"list-type": "2"})
    assert keys == sorted(KEYS) and not prefixes
    assert root.findtext(NS + "KeyCount") == str(len(KEYS))
    first = root.find(NS + "Contents")
    assert first is not None and first.findtext(NS + "Size") == "3"
    assert first.find(NS + "Owner") is None


def test_prefix_and_delimiter(s3: S3Api, tree: list[str]) -> None:
    assert listed(s3, **{"list-type": "2", "delimiter": "/"})[:2] == (["a-c", "b", "b c+d"],
                                                                       ["a/", "z/"])  # fmt: skip
    assert listed(s3, **{"list-type": "2", "prefix": "a/c"})[0] == ["a/c/d", "a/c/e", "a/ca"]
    assert listed(s3, **{"list-type": "2", "prefix": "a/", "delimiter": "/"})[:2] == (
        ["a/b", "a/ca"],
        ["a/c/"],
    )
    assert listed(s3, **{"list-type": "2", "prefix": "nothing/"})[:2] == ([], [])
    # A delimiter other than "/" groups by itself.
    grouped = listed(s3, **{"list-type": "2", "delimiter": "c"})[:2]
    assert grouped == (["a/b", "b", "z/y/x"], ["a-c", "a/c", "b c"])


def test_pages_with_continuation_tokens(s3: S3Api, tree: list[str]) -> None:
    seen: list[str] = []
    params = {"list-type": "2", "max-keys": "3"}
    while True:
        keys, prefixes, root = listed(s3, **params)
        seen += keys + prefixes
        if root.findtext(NS + "IsTruncated") == "false":
            break
        params["continuation-token"] = root.findtext(NS + "NextContinuationToken") or ""
    assert seen == sorted(KEYS)
    assert listed(s3, **{"list-type": "2", "start-after": "a/c/e"})[0] == ["a/ca", "b", "b c+d",
                                                                            "z/y/x"]  # fmt: skip
    delimited = listed(s3, **{"list-type": "2", "delimiter": "/", "max-keys": "2"})[2]
    token = delimited.findtext(NS + "NextContinuationToken") or ""
    assert listed(s3, **{"list-type": "2", "delimiter": "/", "continuation-token": token})[:2] == (
        ["b", "b c+d"],
        ["z/"],
    )


def test_url_encoding_and_owner(s3: S3Api, tree: list[str]) -> None:
    keys, _, root = listed(s3, **{"list-type": "2", "prefix": "b", "encoding-type": "url",
                                  "fetch-owner": "true"})  # fmt: skip
    assert keys == ["b", "b%20c%2Bd"] and root.findtext(NS + "EncodingType") == "url"
    assert root.find(f"{NS}Contents/{NS}Owner") is not None


def test_v1_with_marker(s3: S3Api, tree: list[str]) -> None:
    keys, _, root = listed(s3, marker="b")
    assert keys == ["b c+d", "z/y/x"] and root.findtext(NS + "Marker") == "b"
    keys, prefixes, root = listed(s3, delimiter="/", **{"max-keys": "2"})
    assert (keys, prefixes) == (["a-c"], ["a/"])
    assert root.findtext(NS + "NextMarker") == "a/"
    assert listed(s3, delimiter="/", marker="a/")[:2] == (["b", "b c+d"], ["z/"])


def test_bad_parameters(s3: S3Api, tree: list[str]) -> None:
    for params in ({"max-keys": "x"}, {"encoding-type": "base64"},
                   {"list-type": "2", "continuation-token": "%%%"}):  # fmt: skip
        answer = s3.get("/data", params=params)
        assert answer.status_code == 400, params
