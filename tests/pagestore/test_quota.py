"""Quotas, on every store kind with every evictor: the bytes charged to an account stay within
its limit, an account over it gives up its own pages first, and never a pinned one."""

from __future__ import annotations

from pathlib import Path

from pagestore.api import PageStore, PutResult
from pagestore.factory import on_disk
from pagestore.page import PageKey
from pagestore.quota import Account, QuotaBook
from tests.pagestore.support import (
    FILE_A,
    FILE_B,
    PAGE_SIZE,
    StoreFactory,
    content,
    make_options,
    open_local,
    uri,
)
from tests.pagestore.test_store_contract import page

FILE_C = "c" * 64
A = Account("s3://bucket/a/**", 3 * PAGE_SIZE)
B = Account("caller:bob", 4 * PAGE_SIZE)


def put(store: PageStore, file_id: str, index: int, *charge: Account) -> PutResult:
    page_id = page(index, file_id)
    return store.put(page_id, content(page_id), uri(page_id), charge)


def held(store: PageStore, file_id: str, pages: int) -> list[int]:
    return [i for i in range(pages) if store.has_page(page(i, file_id))]


def pages_of(store: PageStore, file_id: str) -> int:
    """Pages of the file in the store of record (a tiered store's front holds copies)."""
    return store.cached_bytes(file_id, "v1") // PAGE_SIZE


def test_an_account_over_its_limit_evicts_its_own_pages_not_others(
    make_store: StoreFactory,
) -> None:
    store = make_store(pages=16)
    for i in range(6):
        assert put(store, FILE_B, i) is PutResult.OK  # uncharged: room for all of them
    for i in range(5):
        assert put(store, FILE_A, i, A) is PutResult.OK
    assert held(store, FILE_B, 6) == list(range(6))
    assert pages_of(store, FILE_A) == 3
    usage = store.stats().quotas[A.name]
    assert (usage.used_bytes, usage.limit_bytes, usage.evictions) == (3 * PAGE_SIZE, A.limit, 2)
    assert store.stats().evictions == 2
    assert store.used_bytes == 9 * PAGE_SIZE


def test_a_page_charged_to_two_accounts_counts_against_both(make_store: StoreFactory) -> None:
    store = make_store(pages=16)
    for i in range(3):
        assert put(store, FILE_C, i, B) is PutResult.OK
    for i in range(3):
        assert put(store, FILE_A, i, A, B) is PutResult.OK
    quotas = store.stats().quotas
    # Bob's quota made room from its own pages: its file C pages, or file A's charged to it
    # (a frequency-minded policy may give up the newest).
    assert pages_of(store, FILE_C) + pages_of(store, FILE_A) == 4
    assert quotas[A.name].used_bytes == pages_of(store, FILE_A) * PAGE_SIZE
    assert quotas[B.name].used_bytes == B.limit


def test_a_pinned_page_counts_but_is_never_the_quotas_victim(make_store: StoreFactory) -> None:
    store = make_store(pages=16)
    store.pin(FILE_A)
    for i in range(3):
        assert put(store, FILE_A, i, A) is PutResult.OK
    # File A fills the quota with pinned pages: nothing of A's may go, so C's page is refused.
    assert put(store, FILE_C, 0, A) is PutResult.OVER_QUOTA
    assert held(store, FILE_A, 3) == [0, 1, 2]
    store.pin(FILE_A, pinned=False)
    assert put(store, FILE_C, 0, A) is PutResult.OK
    assert pages_of(store, FILE_A) == 2
    assert store.stats().quotas[A.name].used_bytes == 3 * PAGE_SIZE


def test_a_page_larger_than_its_quota_is_refused(make_store: StoreFactory) -> None:
    store = make_store(pages=16)
    tiny = Account("tiny", PAGE_SIZE - 1)
    assert put(store, FILE_A, 0, tiny) is PutResult.OVER_QUOTA
    assert store.page_count == 0


def test_freed_pages_give_their_bytes_back(make_store: StoreFactory) -> None:
    store = make_store(pages=16)
    for i in range(3):
        assert put(store, FILE_A, i, A) is PutResult.OK
    store.delete_file(FILE_A)
    assert store.stats().quotas[A.name].used_bytes == 0
    for i in range(3):
        assert put(store, FILE_C, i, A) is PutResult.OK
    assert store.stats().quotas[A.name].evictions == 0


def test_the_global_eviction_uncharges_what_it_evicts(make_store: StoreFactory) -> None:
    store = make_store(pages=8)
    for i in range(3):
        assert put(store, FILE_A, i, A) is PutResult.OK
    for i in range(16):
        for _ in range(3):  # read often, so every policy prefers these to A's pages
            put(store, FILE_B, i)
            store.get(page(i, FILE_B))
    stored = pages_of(store, FILE_A)
    assert store.stats().quotas[A.name].used_bytes == stored * PAGE_SIZE
    assert store.used_bytes <= store.capacity_bytes


def test_a_quota_spans_directories(tmp_path: Path) -> None:
    """An account's victim may live in another directory than the page it makes room for."""
    store = open_local(make_options(tmp_path, pages=16, dirs=3))
    try:
        files = [f"{n:x}" * 64 for n in range(1, 9)]
        for file_id in files:
            assert put(store, file_id[:64], 0, A) is PutResult.OK
        assert store.stats().quotas[A.name].used_bytes == 3 * PAGE_SIZE
        assert sum(store.has_page(page(0, f[:64])) for f in files) == 3
        assert store.stats().used_bytes == 3 * PAGE_SIZE
    finally:
        store.close()


def test_the_book_names_the_accounts_own_victims_never_pinned_ones() -> None:
    book = QuotaBook("lru")
    keys = [PageKey(FILE_A, "v" * 32, n) for n in range(4)]
    for key in keys[:3]:
        assert book.next_victim((A,), PAGE_SIZE) is None
        book.expect(key, (A,))
        book.added(key, PAGE_SIZE)
        book.evictable(key)
    assert book.can_fit((A,), PAGE_SIZE)
    assert book.next_victim((A,), PAGE_SIZE) == keys[0]  # LRU: the oldest
    book.unevictable(keys[0])  # pinned meanwhile
    assert book.next_victim((A,), PAGE_SIZE) == keys[1]
    for key in keys[1:3]:
        book.unevictable(key)
    assert not book.can_fit((A,), PAGE_SIZE)
    assert book.usage()[A.name].used_bytes == 3 * PAGE_SIZE


def test_restored_pages_are_charged_by_their_uri(tmp_path: Path) -> None:
    options = make_options(tmp_path, pages=16, dirs=2)
    store = open_local(options)
    for i in range(3):
        assert put(store, FILE_A, i, A) is PutResult.OK
    assert put(store, FILE_B, 0) is PutResult.OK
    store.close()
    again = on_disk(options)
    again.charge_restored(lambda u: (A,) if u.endswith(FILE_A) else ())
    again.start()
    try:
        assert again.wait_ready(30)
        assert again.stats().quotas[A.name].used_bytes == 3 * PAGE_SIZE
        assert put(again, FILE_C, 0, A) is PutResult.OK  # makes room from A's restored pages
        assert pages_of(again, FILE_A) == 2
        assert pages_of(again, FILE_B) == 1
    finally:
        again.close()
