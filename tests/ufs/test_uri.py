import pytest

from ufs.errors import UfsInvalidPath
from ufs.uri import child, is_under, name, normalize, parent


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("s3://bucket/a/b.parquet", "s3://bucket/a/b.parquet"),
        ("S3://bucket/dir/", "s3://bucket/dir"),
        ("file:///data/x.csv", "file:///data/x.csv"),
        ("/data/x.csv", "file:///data/x.csv"),
        ("file:///", "file:///"),
        ("memory://bkt/x", "memory://bkt/x"),
    ],
)
def test_normalize(raw: str, canonical: str) -> None:
    assert normalize(raw) == canonical


@pytest.mark.parametrize(
    "bad",
    [
        "s3://b/../x",
        "s3://b/a/..",
        "s3://b/./x",
        "s3://b/%2e%2e/x",
        "s3://b/%2E%2E/x",
        "s3://b/%252e%252e/x",
        "s3://b/a%2f..%2fx",
        "file:///data/../etc/passwd",
        "s3://b//x",
        "relative/path",
        "s3://",
        "file://host/x",
        "s3://b/x\x00y",
        "",
        "1s3://b/x",
    ],
)
def test_traversal_and_malformed_uris_are_rejected(bad: str) -> None:
    with pytest.raises(UfsInvalidPath, match="invalid path"):
        normalize(bad)


def test_parent_and_name() -> None:
    assert parent("s3://b/a/c") == "s3://b/a"
    assert parent("s3://b/a") == "s3://b"
    assert parent("s3://b") is None
    assert parent("file:///a") == "file:///"
    assert parent("file:///") is None
    assert name("s3://b/a/c.txt") == "c.txt"
    assert name("file:///") == ""


def test_is_under_respects_segment_boundaries() -> None:
    assert is_under("s3://b/data/x", "s3://b/data")
    assert is_under("s3://b/data", "s3://b/data")
    assert not is_under("s3://b/database/x", "s3://b/data")
    assert is_under("file:///anything", "file:///")


@pytest.mark.parametrize("directory", ["s3://b/d", "file:///data/d", "file:///", "memory://m"])
@pytest.mark.parametrize(
    "entry",
    ["x.csv", "a%2fb", "%41", "..x", "x..", "a b", "a\\b", "..", ".", "", "%2e%2e", "%252e%252e",
     "a%2f..%2fb", "x\x00y", "x\ny", "a/b"],
)  # fmt: skip
def test_child_is_normalize_of_the_joined_uri(directory: str, entry: str) -> None:
    joined = directory + entry if directory.endswith("/") else f"{directory}/{entry}"
    try:
        expected: str | None = normalize(joined)
    except UfsInvalidPath:
        expected = None
    if expected is None or "/" in entry or not entry:  # neither names one entry
        with pytest.raises(UfsInvalidPath, match="invalid path"):
            child(directory, entry)
    else:
        assert child(directory, entry) == expected == joined
