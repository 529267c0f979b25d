"""Page identity and file names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pagestore.page import PageId, PageKey

FILE = "f" * 64


def test_a_page_id_is_immutable_and_hashable() -> None:
    page = PageId(FILE, "v", 0)
    assert {page: 1}[PageId(FILE, "v", 0)] == 1
    with pytest.raises(AttributeError):
        page.index = 2  # type: ignore[misc]


@pytest.mark.parametrize("file_id", ["", "a/b", "a.b", "x" * 129, "s3://bucket/key"])
def test_a_file_id_that_cannot_be_a_file_name_is_refused(file_id: str) -> None:
    with pytest.raises(ValueError, match="file id"):
        PageId(file_id, "v", 0)


def test_a_negative_index_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        PageId(FILE, "v", -1)


@given(st.text(max_size=300))
def test_any_version_makes_a_safe_file_name_that_parses_back(version: str) -> None:
    key = PageId(FILE, version, 12).key
    assert "/" not in key.file_name and len(key.file_name) < 255
    assert PageKey.parse(key.file_name) == key


def test_s3_etags_that_differ_get_different_keys() -> None:
    etags = ['"abc-3"', '"abc-4"', "abc-3", '"a/b"', '"a\\"b"']
    assert len({PageId(FILE, etag, 0).key for etag in etags}) == len(etags)


@pytest.mark.parametrize("name", ["x", f"{FILE}.v.1", f"{FILE}.{'0' * 32}.1.tmp", ".lock"])
def test_other_file_names_are_not_pages(name: str) -> None:
    assert PageKey.parse(name) is None
