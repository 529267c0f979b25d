"""The page index: pages by key and by file version."""

from __future__ import annotations

from pagestore.index import PageEntry, PageIndex
from pagestore.page import PageKey

V1, V2 = "1" * 32, "2" * 32


def test_pages_are_grouped_by_file_and_version() -> None:
    index = PageIndex()
    index.add(PageKey("f", V1, 0), PageEntry(0, 10))
    index.add(PageKey("f", V1, 1), PageEntry(0, 5))
    index.add(PageKey("f", V2, 0), PageEntry(1, 7))
    index.add(PageKey("g", V1, 0), PageEntry(0, 1))
    assert index.bytes_of("f", V1) == 15
    assert sorted(index.pages_of("f", None)) == [
        PageKey("f", V1, 0),
        PageKey("f", V1, 1),
        PageKey("f", V2, 0),
    ]
    assert index.pages_of("f", V2) == [PageKey("f", V2, 0)]
    assert index.pages_of("h", None) == [] == index.pages_of("f", "9" * 32)


def test_removing_the_last_page_forgets_the_file() -> None:
    index = PageIndex()
    key = PageKey("f", V1, 0)
    index.add(key, PageEntry(0, 10))
    assert index.remove(key) is not None
    assert len(index) == 0 and key not in index
    assert index.bytes_of("f", V1) == 0
    assert index.remove(key) is None


def test_a_replaced_entry_is_not_removed_by_a_stale_holder() -> None:
    index = PageIndex()
    key = PageKey("f", V1, 0)
    old = PageEntry(0, 10)
    index.add(key, old)
    index.remove(key)
    index.add(key, PageEntry(0, 10))
    assert index.remove(key, old) is None
    assert key in index
