"""The PageStore contract, run against every store implementation with every evictor."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import pytest

from pagestore.api import Fill, Lookup, PageRead, PageStore, PutResult
from pagestore.page import PageId
from tests.pagestore.support import FILE_A, FILE_B, PAGE_SIZE, StoreFactory, content, uri


def page(index: int, file_id: str = FILE_A, version: str = "v1") -> PageId:
    return PageId(file_id, version, index)


def fill_with(store: PageStore, pages: list[PageId]) -> None:
    for page_id in pages:
        assert store.put(page_id, content(page_id), uri(page_id)) is PutResult.OK


def test_a_stored_page_reads_back_whole_and_in_ranges(store: PageStore) -> None:
    page_id = page(0)
    data = content(page_id)
    assert store.put(page_id, data, uri(page_id)) is PutResult.OK
    assert store.get(page_id) == data
    assert store.get(page_id, 100, 50) == data[100:150]
    assert store.get(page_id, 4000) == data[4000:]
    assert store.get(page_id, 4000, 1000) == data[4000:]
    assert store.get(page_id, PAGE_SIZE + 10) == b""


def test_locate_lists_only_stored_pages(store: PageStore) -> None:
    fill_with(store, [page(0), page(2)])
    listed = store.locate(FILE_A, "v1").pages
    assert {p.index for p in listed} <= {0, 2}  # a store without page files lists none
    assert all(p.size == PAGE_SIZE for p in listed)
    assert store.locate(FILE_B, "v1").pages == ()


def test_a_short_last_page_keeps_its_size(store: PageStore) -> None:
    page_id = page(3)
    assert store.put(page_id, b"tail", uri(page_id)) is PutResult.OK
    assert store.get(page_id) == b"tail"
    assert store.cached_bytes(FILE_A, "v1") == 4


def test_an_unknown_page_is_a_miss_and_counted(store: PageStore) -> None:
    assert store.get(page(0)) is None
    assert not store.has_page(page(0))
    stats = store.stats()
    assert (stats.hits, stats.misses) == (0, 1)


def test_counters_follow_reads_and_writes(store: PageStore) -> None:
    fill_with(store, [page(0)])
    store.get(page(0), 0, 10)
    store.get(page(1))
    stats = store.stats()
    assert (stats.hits, stats.misses, stats.bytes_read) == (1, 1, 10)
    assert (stats.puts, stats.bytes_written) == (1, PAGE_SIZE)
    assert (stats.pages, stats.used_bytes) == (1, PAGE_SIZE)


def test_a_negative_range_is_a_caller_error(store: PageStore) -> None:
    with pytest.raises(ValueError):
        store.get(page(0), -1)
    with pytest.raises(ValueError):
        store.get(page(0), 0, -5)


def test_versions_never_share_pages(store: PageStore) -> None:
    fill_with(store, [page(0, version='"etag-1"')])
    assert store.get(page(0, version='"etag-2"')) is None
    assert store.get(page(0, version='"etag-1"')) == content(page(0, version='"etag-1"'))


def test_storing_a_page_twice_counts_it_once(store: PageStore) -> None:
    fill_with(store, [page(0), page(0)])
    assert (store.page_count, store.used_bytes) == (1, PAGE_SIZE)


def test_data_larger_than_a_page_is_refused(store: PageStore) -> None:
    assert store.put(page(0), b"x" * (PAGE_SIZE + 1), uri(page(0))) is PutResult.TOO_LARGE
    assert store.stats().put_failures[PutResult.TOO_LARGE] == 1
    assert not store.has_page(page(0))


def test_usage_stays_within_capacity_by_evicting(make_store: StoreFactory) -> None:
    store = make_store(pages=4)
    fill_with(store, [page(i) for i in range(10)])
    assert store.used_bytes <= store.capacity_bytes == 4 * PAGE_SIZE
    assert store.page_count == 4
    assert store.stats().evictions == 6
    # Which older pages stay is the policy's business (tests/pagestore/test_evict.py): W-TinyLFU
    # may keep an older page over a newer one read as often.
    assert store.has_page(page(9))


def test_the_policy_keeps_the_page_that_was_read(make_store: StoreFactory) -> None:
    # Every policy keeps page 0 here: LRU (read most recently), LFU and W-TinyLFU (read most
    # often), SLRU (read again), S3-FIFO (read since it was stored).
    store = make_store(pages=4)
    fill_with(store, [page(i) for i in range(4)])
    assert store.get(page(0)) is not None
    fill_with(store, [page(4)])
    assert store.has_page(page(0))
    assert store.has_page(page(4))
    assert store.page_count == 4


def test_deleting_a_file_drops_every_version(store: PageStore) -> None:
    fill_with(store, [page(0, version="v1"), page(1, version="v2"), page(0, FILE_B)])
    assert store.delete_file(FILE_A) == 2
    assert not store.has_page(page(0, version="v1"))
    assert not store.has_page(page(1, version="v2"))
    assert store.has_page(page(0, FILE_B))
    assert (store.page_count, store.used_bytes) == (1, PAGE_SIZE)
    assert store.stats().invalidated_pages == 2


def test_deleting_one_version_keeps_the_others(store: PageStore) -> None:
    fill_with(store, [page(0, version="v1"), page(1, version="v1"), page(0, version="v2")])
    assert store.cached_bytes(FILE_A, "v1") == 2 * PAGE_SIZE
    assert store.delete_file(FILE_A, "v1") == 2
    assert store.cached_bytes(FILE_A, "v1") == 0
    assert store.cached_bytes(FILE_A, "v2") == PAGE_SIZE
    assert store.delete_file(FILE_A, "v1") == 0


def test_a_deleted_page_can_be_stored_again(store: PageStore) -> None:
    fill_with(store, [page(0)])
    store.delete_file(FILE_A)
    # The unlink may still be pending in the background: the put is then refused, never lost.
    result = store.put(page(0), content(page(0)), uri(page(0)))
    assert result in (PutResult.OK, PutResult.REJECTED)
    assert store.get_or_fill(page(0), lambda: content(page(0)), uri(page(0))).data == content(
        page(0)
    )


def test_get_or_fill_stores_what_it_fetched(store: PageStore) -> None:
    calls: list[int] = []

    def fill() -> bytes:
        calls.append(1)
        return content(page(0))

    assert store.get_or_fill(page(0), fill, uri(page(0))).data == content(page(0))
    assert store.get_or_fill(page(0), fill, uri(page(0))).data == content(page(0))
    assert len(calls) == 1
    assert store.get(page(0)) == content(page(0))


def test_get_or_fill_says_whether_it_fetched_and_whether_the_store_failed(
    store: PageStore,
) -> None:
    first = store.get_or_fill(page(0), lambda: content(page(0)), uri(page(0)))
    again = store.get_or_fill(page(0), lambda: content(page(0)), uri(page(0)))
    assert (first.fetched, first.cache_failure) == (True, False)
    assert (again.fetched, again.cache_failure) == (False, False)
    assert store.read(page(0), 10, 5) == PageRead(Lookup.HIT, content(page(0))[10:15])
    assert store.read(page(1)) == PageRead(Lookup.MISS)


def run_threads(count: int, target: Callable[[], None]) -> None:
    threads = [threading.Thread(target=target) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_concurrent_fills_of_one_page_fetch_it_once(store: PageStore) -> None:
    readers = 8
    calls: list[int] = []
    results: list[Fill] = []

    def fill() -> bytes:
        calls.append(1)
        # Hold the flight open until every reader has missed, so they all pile up on it.
        while store.stats().misses < readers:
            threading.Event().wait(0.001)
        return content(page(0))

    run_threads(readers, lambda: results.append(store.get_or_fill(page(0), fill, uri(page(0)))))
    assert len(calls) == 1
    assert [r.data for r in results] == [content(page(0))] * readers
    assert [r.fetched for r in results].count(True) == 1


def test_a_failed_fill_reaches_every_waiter_and_stores_nothing(store: PageStore) -> None:
    readers = 4
    errors: list[BaseException] = []

    def fill() -> bytes:
        while store.stats().misses < readers:
            threading.Event().wait(0.001)
        raise ConnectionError("the UFS is down")

    def read() -> None:
        try:
            store.get_or_fill(page(0), fill, uri(page(0)))
        except ConnectionError as exc:
            errors.append(exc)

    run_threads(readers, read)
    assert len(errors) == readers
    assert not store.has_page(page(0))
    assert store.get_or_fill(page(0), lambda: b"retried", uri(page(0))).data == b"retried"


def test_a_file_invalidated_during_its_fill_is_not_stored(store: PageStore) -> None:
    def fill() -> bytes:
        store.delete_file(FILE_A)  # the metadata listener drops the file mid-fetch
        return content(page(0))

    assert store.get_or_fill(page(0), fill, uri(page(0))).data == content(page(0))
    assert not store.has_page(page(0))
    assert store.stats().put_failures[PutResult.REJECTED] == 1


def test_invalidating_another_file_does_not_stop_a_fill(store: PageStore) -> None:
    def fill() -> bytes:
        store.delete_file(FILE_B)
        store.delete_file(FILE_A, "v0")
        return content(page(0))

    store.get_or_fill(page(0), fill, uri(page(0)))
    assert store.has_page(page(0))


FILES_BY_URI = {
    "s3://b/a": "0a" * 32,
    "s3://b/a/x": "1a" * 32,
    "s3://b/a/deep/y": "2a" * 32,
    "s3://b/ab": "3a" * 32,
    "s3://b/ab/z": "4a" * 32,
    "s3://c/a/x": "5a" * 32,
}


def fill_uris(store: PageStore) -> None:
    for uri_, file_id in FILES_BY_URI.items():
        for page_id in (page(0, file_id, "v1"), page(1, file_id, "v1"), page(0, file_id, "v2")):
            assert store.put(page_id, content(page_id), uri_) is PutResult.OK


def files_left(store: PageStore) -> set[str]:
    return {
        uri_
        for uri_, file_id in FILES_BY_URI.items()
        if store.cached_bytes(file_id, "v1") or store.cached_bytes(file_id, "v2")
    }


@pytest.mark.parametrize(
    ("prefix", "dropped"),
    [
        ("s3://b/a", {"s3://b/a", "s3://b/a/x", "s3://b/a/deep/y"}),
        ("s3://b/a/", {"s3://b/a/x", "s3://b/a/deep/y"}),
        ("s3://b/a/x", {"s3://b/a/x"}),
        ("s3://b/", set(FILES_BY_URI) - {"s3://c/a/x"}),
        ("s3://b/a/x/more", set()),
        ("s3://b/abc", set()),
    ],
)
def test_deleting_a_prefix_drops_every_file_under_it_and_nothing_else(
    make_store: StoreFactory, prefix: str, dropped: set[str]
) -> None:
    store = make_store(pages=32)
    fill_uris(store)
    assert store.delete_prefix(prefix) == 3 * len(dropped)
    assert files_left(store) == set(FILES_BY_URI) - dropped
    assert store.page_count == 3 * (len(FILES_BY_URI) - len(dropped))


def test_a_file_under_a_prefix_invalidated_during_its_fill_is_not_stored(
    store: PageStore,
) -> None:
    def fill() -> bytes:
        store.delete_prefix("s3://bucket/files")
        return content(page(0))

    assert store.get_or_fill(page(0), fill, uri(page(0))).data == content(page(0))
    assert not store.has_page(page(0))
    assert store.delete_prefix("s3://bucket/other") == 0
    assert store.get_or_fill(page(0), lambda: content(page(0)), uri(page(0))).data == content(
        page(0)
    )
    assert store.has_page(page(0))


def test_many_threads_reading_and_filling_only_ever_see_right_bytes(
    make_store: StoreFactory,
) -> None:
    store = make_store(pages=6)
    wrong: list[PageId] = []

    def worker(seed: int) -> None:
        for step in range(150):
            page_id = page((seed * 7 + step * 5) % 20, file_id=FILE_A if step % 3 else FILE_B)
            if step % 29 == 0:
                store.delete_file(page_id.file_id)
            data = store.get_or_fill(
                page_id, functools.partial(content, page_id), uri(page_id)
            ).data
            if data != content(page_id):
                wrong.append(page_id)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
    assert store.used_bytes <= store.capacity_bytes
    for index in range(20):
        for file_id in (FILE_A, FILE_B):
            cached = store.get(page(index, file_id))
            assert cached is None or cached == content(page(index, file_id))


def fetcher(calls: list[tuple[int, int]], hold: Callable[[], None] = lambda: None) -> Any:
    """A ``fill_run`` fetch of FILE_A's v1 pages that records each (first, count) it serves."""

    def fetch(first: int, count: int) -> list[bytes]:
        calls.append((first, count))
        hold()
        return [content(page(i)) for i in range(first, first + count)]

    return fetch


def test_fill_run_fetches_each_run_of_missing_pages_once(store: PageStore) -> None:
    fill_with(store, [page(2)])
    calls: list[tuple[int, int]] = []
    pages = [page(i) for i in range(6)]
    fills = store.fill_run(pages, fetcher(calls), uri(page(0)))
    assert calls == [(0, 2), (3, 3)]  # page 2 was cached: two runs around it
    assert [f.data for f in fills] == [content(p) for p in pages]
    assert [f.fetched for f in fills] == [True, True, False, True, True, True]
    again = store.fill_run(pages, fetcher(calls), uri(page(0)))
    assert len(calls) == 2 and not any(f.fetched for f in again)


def test_concurrent_fill_runs_over_overlapping_pages_fetch_each_page_once(
    store: PageStore,
) -> None:
    readers = 6
    calls: list[tuple[int, int]] = []
    results: list[tuple[int, list[Fill]]] = []

    def hold() -> None:
        # Keep the first fetch open until every reader has missed, so the others join.
        while store.stats().misses < readers:
            threading.Event().wait(0.001)

    def read(first: int) -> None:
        pages = [page(i) for i in range(first, first + 4)]
        results.append((first, store.fill_run(pages, fetcher(calls, hold), uri(page(0)))))

    starts = iter(range(readers))
    run_threads(readers, lambda: read(next(starts) % 3))
    fetched = sorted(i for first, count in calls for i in range(first, first + count))
    assert fetched == sorted(set(fetched)), calls  # no page fetched twice
    assert set(fetched) == set(range(6))
    for first, fills in results:
        assert [f.data for f in fills] == [content(page(i)) for i in range(first, first + 4)]


def test_a_failed_fill_run_reaches_its_waiters_and_stores_nothing(store: PageStore) -> None:
    def fetch(first: int, count: int) -> list[bytes]:
        raise ConnectionError("the UFS is down")

    with pytest.raises(ConnectionError):
        store.fill_run([page(0), page(1)], fetch, uri(page(0)))
    assert not store.has_page(page(0)) and not store.has_page(page(1))
    calls: list[tuple[int, int]] = []
    fills = store.fill_run([page(0), page(1)], fetcher(calls), uri(page(0)))
    assert calls == [(0, 2)] and [f.data for f in fills] == [content(page(0)), content(page(1))]


def test_a_caller_that_joined_a_fill_its_leader_stopped_waiting_for_fetches_it_itself(
    store: PageStore,
) -> None:
    """The leader's fetch gives up at its own caller's deadline (a TimeoutError) once another
    caller has joined: that caller is not failed by a deadline not its own, it fetches the
    page with its own fetch. Any other error reaches the joined caller (the test above)."""
    fills: list[Fill] = []
    follower_calls: list[tuple[int, int]] = []

    def follow() -> None:
        fills.extend(store.fill_run([page(0)], fetcher(follower_calls), uri(page(0))))

    follower = threading.Thread(target=follow)

    def leader_fetch(first: int, count: int) -> list[bytes]:
        follower.start()  # now that this caller leads the page's fill
        # Until the follower has joined this fill (the cache's flights, as no counter says).
        while store._flights.waiting(page(0)) < 1:  # type: ignore[attr-defined]
            threading.Event().wait(0.001)
        raise TimeoutError("the leader's client stopped waiting")

    with pytest.raises(TimeoutError):
        store.fill_run([page(0)], leader_fetch, uri(page(0)))
    follower.join(30)
    assert follower_calls == [(0, 1)]
    assert [(f.data, f.fetched) for f in fills] == [(content(page(0)), True)]
    assert store.has_page(page(0))


def test_cached_bytes_of_many_files_at_once(store: PageStore) -> None:
    fill_with(store, [page(0), page(1)])
    asked = [(FILE_A, "v1"), (FILE_A, "v2"), (FILE_B, "v1"), (FILE_A, "v1")]
    assert store.cached_bytes_many(asked) == [store.cached_bytes(*f) for f in asked]
    assert store.cached_bytes_many(asked)[0] == 2 * PAGE_SIZE
    assert store.cached_bytes_many([]) == []
