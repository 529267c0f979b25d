"""Pinned pages, on every store kind with every evictor: never evicted, within the bound."""

from __future__ import annotations

import pytest

from pagestore.api import PageStore
from pagestore.pins import PinMax
from tests.pagestore.support import FILE_A, FILE_B, PAGE_SIZE, StoreFactory, content, uri
from tests.pagestore.test_store_contract import fill_with, page

# make_store(pages=8) with the default bound, half the capacity: 4 pages may be pinned.
BOUND_PAGES = 4


def pressure(store: PageStore, pages: int = 24) -> None:
    """Store and read other pages, each more often than the pinned ones were used, until
    everything evictable has been evicted, more than once (a frequency-minded policy such as
    W-TinyLFU keeps pages used as often as the newcomers)."""
    others = [page(i, FILE_B) for i in range(pages)]
    for page_id in others:
        for _ in range(4):
            store.put(page_id, content(page_id), uri(page_id))
            store.get(page_id)


def held(store: PageStore, file_id: str, pages: int) -> list[int]:
    return [i for i in range(pages) if store.has_page(page(i, file_id))]


def test_a_pinned_file_survives_eviction_pressure(make_store: StoreFactory) -> None:
    store = make_store(pages=8)
    fill_with(store, [page(i) for i in range(3)])
    store.pin(FILE_A)
    pressure(store)
    assert held(store, FILE_A, 3) == [0, 1, 2]
    assert store.stats().pinned_bytes == 3 * PAGE_SIZE
    assert store.used_bytes <= store.capacity_bytes
    assert store.stats().evictions > 0


def test_pages_stored_after_the_pin_are_pinned_as_they_come(make_store: StoreFactory) -> None:
    store = make_store(pages=8)
    store.pin(FILE_A)
    fill_with(store, [page(i) for i in range(2)])
    pressure(store)
    assert held(store, FILE_A, 2) == [0, 1]


def test_pages_past_the_bound_stay_evictable(make_store: StoreFactory) -> None:
    store = make_store(pages=8)
    store.pin(FILE_A)
    fill_with(store, [page(i) for i in range(BOUND_PAGES + 2)])
    pressure(store)
    assert held(store, FILE_A, BOUND_PAGES + 2) == list(range(BOUND_PAGES))
    assert store.stats().pinned_bytes == BOUND_PAGES * PAGE_SIZE


def test_unpinning_makes_the_pages_evictable_again(make_store: StoreFactory) -> None:
    store = make_store(pages=8)
    fill_with(store, [page(i) for i in range(3)])
    store.pin(FILE_A)
    store.pin(FILE_A, pinned=False)
    assert store.stats().pinned_bytes == 0
    pressure(store)
    assert held(store, FILE_A, 3) == []


def test_a_freed_pinned_file_is_pinned_again_when_stored_again(make_store: StoreFactory) -> None:
    store = make_store(pages=8)
    store.pin(FILE_A)
    fill_with(store, [page(0)])
    assert store.delete_file(FILE_A) == 1
    assert store.stats().pinned_bytes == 0
    again = page(0, version="v2")  # the old page's unlink may still be pending
    fill_with(store, [again])
    pressure(store)
    assert store.has_page(again)


def test_files_the_predicate_covers_are_pinned_as_they_are_stored(
    make_store: StoreFactory,
) -> None:
    store = make_store(pages=8)
    store.pin_when(lambda stored: stored == uri(page(0)))
    fill_with(store, [page(i) for i in range(2)])
    pressure(store)
    assert held(store, FILE_A, 2) == [0, 1]


def test_pinning_a_prefix_pins_the_files_stored_under_it(make_store: StoreFactory) -> None:
    store = make_store(pages=8)
    fill_with(store, [page(i) for i in range(2)])
    assert store.pin_prefix(uri(page(0))) == 1
    pressure(store)
    assert held(store, FILE_A, 2) == [0, 1]
    assert store.pin_prefix(uri(page(0)), pinned=False) == 1
    assert store.stats().pinned_bytes == 0


@pytest.mark.parametrize(
    ("text", "limit"),
    [("0.5", 500), ("0", 0), ("1", 1000), (".25", 250), ("1KB", 1024), (" 2KB ", 2048)],
)
def test_the_bound_is_a_share_of_capacity_or_a_size(text: str, limit: int) -> None:
    assert PinMax.parse(text).limit(1000) == limit


@pytest.mark.parametrize("text", ["1.5", "-0.1", "half", ""])
def test_a_bound_that_is_neither_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="share of the capacity"):
        PinMax.parse(text)


def test_file_uris_names_each_file_with_pages(make_store: StoreFactory) -> None:
    """What a change of the rules' pins goes through (``worker.rules.pinned``)."""
    store = make_store(pages=8)
    fill_with(store, [page(0), page(1), page(0, FILE_B)])
    assert store.file_uris() == {
        FILE_A: uri(page(0)),
        FILE_B: uri(page(0, FILE_B)),
    }
    store.delete_file(FILE_A)
    assert store.file_uris() == {FILE_B: uri(page(0, FILE_B))}
