"""PageCache behaviour beyond the shared contract: background deletion, placement across
directories, the injected clock."""

from __future__ import annotations

import errno
import itertools
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pagestore.api import PutResult
from pagestore.cache import PageCache
from pagestore.dirs import StoreDir, place
from pagestore.disk import PageDir
from pagestore.factory import on_disk
from pagestore.options import PageDirOptions, PageStoreOptions
from pagestore.page import PageId, PageKey
from pagestore.pagefile import header_size
from pagestore.pins import PinState
from pagestore.store import STORM_MIN_PAGES
from tests.pagestore.support import (
    FILE_A,
    FILE_B,
    PAGE_SIZE,
    content,
    make_options,
    page_files,
    record_files,
    uri,
)

LocalStores = Callable[[PageStoreOptions], PageCache]


def test_deleting_a_file_returns_before_its_files_are_unlinked(
    tmp_path: Path, local_stores: LocalStores, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = local_stores(make_options(tmp_path, pages=32))
    doomed = [PageId(FILE_A, "v", i) for i in range(10)]
    kept = PageId(FILE_B, "v", 0)
    for page_id in [*doomed, kept]:
        store.put(page_id, content(page_id), uri(page_id))
    release = threading.Event()
    original = PageDir.unlink

    def slow_unlink(self: PageDir, key: PageKey) -> None:
        release.wait()
        original(self, key)

    monkeypatch.setattr(PageDir, "unlink", slow_unlink)
    assert store.delete_file(FILE_A) == 10  # returns while every unlink is still held
    assert store.get(kept) == content(kept)
    assert not store.has_page(doomed[0]) and store.used_bytes == PAGE_SIZE
    assert (
        store.put(doomed[0], content(doomed[0]), uri(doomed[0])) is PutResult.REJECTED
    )  # still being unlinked
    release.set()
    store.close()
    assert list(tmp_path.rglob(f"{FILE_A}.*")) == []


def test_a_page_whose_old_file_is_unlinked_is_stored_again_before_the_rest_of_its_file(
    tmp_path: Path, local_stores: LocalStores, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = local_stores(make_options(tmp_path, pages=32))
    doomed = [PageId(FILE_A, "v", i) for i in range(10)]
    for page_id in doomed:
        store.put(page_id, content(page_id), uri(page_id))
    unlinked: list[PageKey] = []
    first_gone, release = threading.Event(), threading.Event()
    original = PageDir.unlink

    def hold_the_second(self: PageDir, key: PageKey) -> None:
        if unlinked:
            first_gone.set()
            release.wait(10)
        original(self, key)
        unlinked.append(key)

    monkeypatch.setattr(PageDir, "unlink", hold_the_second)
    store.delete_file(FILE_A)
    assert first_gone.wait(10)
    gone = next(page_id for page_id in doomed if page_id.key == unlinked[0])
    waiting = next(page_id for page_id in doomed if page_id != gone)
    # The file read again at once (same version): the page whose old file is gone is stored,
    # while the other nine old files still wait to be unlinked.
    assert store.put(gone, content(gone), uri(gone)) is PutResult.OK
    assert store.put(waiting, content(waiting), uri(waiting)) is PutResult.REJECTED
    release.set()
    store.close()
    assert store.cached_bytes(FILE_A, "v") == PAGE_SIZE
    assert len(page_files(tmp_path)) == 1


def _dir(number: int, path: Path, capacity: int) -> StoreDir:
    return StoreDir(number, PageDirOptions(path, capacity), 4096, "lru", PinState(0), len)


def test_losing_a_dir_moves_only_its_files(tmp_path: Path) -> None:
    dirs = [_dir(n, tmp_path / f"d{n}", 1 << 30) for n in range(3)]
    files = [f"{n:064x}" for n in range(300)]
    before = {f: place(dirs, f) for f in files}
    assert {d.number for d in before.values() if d} == {0, 1, 2}
    dirs[1].take_out_of_service()
    after = {f: place(dirs, f) for f in files}
    moved = [f for f in files if before[f] is not after[f]]
    assert moved and all(before[f] is dirs[1] for f in moved)


def test_bigger_dirs_get_more_files(tmp_path: Path) -> None:
    small = _dir(0, tmp_path / "small", 1 << 30)
    big = _dir(1, tmp_path / "big", 3 << 30)
    chosen = [place([small, big], f"{n:064x}") for n in range(2000)]
    assert chosen.count(big) > 2 * chosen.count(small)


def test_the_restore_is_timed_with_the_injected_clock(tmp_path: Path) -> None:
    ticks = itertools.count(start=100, step=7)
    store = on_disk(make_options(tmp_path), clock=lambda: float(next(ticks)))
    store.start()
    try:
        assert store.wait_ready(30)
        assert store.stats().restore_seconds == 7.0
    finally:
        store.close()


def test_an_eviction_storm_is_warned_about_once_with_its_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = on_disk(make_options(tmp_path, pages=8), clock=lambda: 0.0)
    store.start()
    pages = [PageId(FILE_A, "v", i) for i in range(8 + 3 * STORM_MIN_PAGES)]
    try:
        assert store.wait_ready(30)
        with caplog.at_level(logging.WARNING, logger="pagestore"):
            for page_id in pages[: 8 + STORM_MIN_PAGES - 1]:
                assert store.put(page_id, content(page_id), uri(page_id)) is PutResult.OK
            assert "eviction storm" not in caplog.text
            for page_id in pages[8 + STORM_MIN_PAGES - 1 :]:
                assert store.put(page_id, content(page_id), uri(page_id)) is PutResult.OK
    finally:
        store.close()
    storms = [r.getMessage() for r in caplog.records if "eviction storm" in r.getMessage()]
    assert len(storms) == 1
    assert storms[0].startswith(
        f"eviction storm: {STORM_MIN_PAGES} pages evicted in 0.0s "
        f"({STORM_MIN_PAGES} since the last such warning; a storm is {STORM_MIN_PAGES} in 10s)"
    )


def test_puts_spread_over_dirs_and_are_counted_per_dir_capacity(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    store = local_stores(make_options(tmp_path, pages=4, dirs=2))
    files = [f"{n:064x}" for n in range(40)]
    for file_id in files:
        page_id = PageId(file_id, "v", 0)
        assert store.put(page_id, content(page_id), uri(page_id)) is PutResult.OK
    assert store.page_count == 8 and store.used_bytes == store.capacity_bytes == 8 * PAGE_SIZE
    for n in range(2):
        assert len(list((tmp_path / f"dir{n}").rglob("*.*.*"))) == 4


def test_a_store_that_was_never_started_misses_and_refuses(tmp_path: Path) -> None:
    store = on_disk(make_options(tmp_path))
    page_id = PageId(FILE_A, "v", 0)
    assert store.get(page_id) is None
    assert store.put(page_id, b"x", uri(page_id)) is PutResult.REJECTED
    assert store.get_or_fill(page_id, lambda: b"x", uri(page_id)).data == b"x"
    store.close()


def test_a_file_has_a_uri_record_exactly_while_it_has_pages(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    store = local_stores(make_options(tmp_path, pages=3))
    a = [PageId(FILE_A, "v", i) for i in range(2)]
    for page_id in a:
        store.put(page_id, content(page_id), uri(page_id))
    assert [p.name for p in record_files(tmp_path)] == [f"uri.{FILE_A}"]
    store.delete_file(FILE_A, "other version")
    b = [PageId(FILE_B, "v", i) for i in range(3)]  # evicts both pages of FILE_A
    for page_id in b:
        assert store.put(page_id, content(page_id), uri(page_id)) is PutResult.OK
    assert [p.name for p in record_files(tmp_path)] == [f"uri.{FILE_B}"]
    store.delete_file(FILE_B)
    store.close()  # waits for the background unlinks
    assert record_files(tmp_path) == [] and page_files(tmp_path) == []


def test_a_failed_page_write_leaves_no_record_behind(
    tmp_path: Path, local_stores: LocalStores, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = local_stores(make_options(tmp_path))

    def full(self: PageDir, key: PageKey, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(PageDir, "write", full)
    page_id = PageId(FILE_A, "v", 0)
    assert store.put(page_id, content(page_id), uri(page_id)) is PutResult.NO_SPACE
    assert record_files(tmp_path) == []


def test_locate_lists_the_stored_pages_of_one_version_in_a_range(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    store = local_stores(make_options(tmp_path, pages=16, dirs=2))
    for index in (0, 2, 3, 7):
        page_id = PageId(FILE_A, "v1", index)
        store.put(page_id, content(page_id, 100 + index), uri(page_id))
    store.put(PageId(FILE_A, "v2", 1), b"other version", uri(PageId(FILE_A, "v2", 1)))
    every = store.locate(FILE_A, "v1")
    assert [(p.index, p.size) for p in every.pages] == [(0, 100), (2, 102), (3, 103), (7, 107)]
    assert all(os.path.isabs(p.path) and os.path.isfile(p.path) for p in every.pages)
    assert (every.page_size, every.header_size) == (PAGE_SIZE, header_size(PAGE_SIZE))
    assert [p.index for p in store.locate(FILE_A, "v1", 1, 3).pages] == [2, 3]
    assert [p.index for p in store.locate(FILE_A, "v1", 3, 1000).pages] == [3, 7]
    assert store.locate(FILE_A, "v3").pages == () and store.locate(FILE_B, "v1").pages == ()
    with pytest.raises(ValueError):
        store.locate(FILE_A, "v1", 5, 4)


def test_locating_a_page_keeps_it_from_eviction(tmp_path: Path, local_stores: LocalStores) -> None:
    store = local_stores(make_options(tmp_path, pages=2, evictor="lru"))
    first, second, third = (PageId(FILE_A, "v", i) for i in range(3))
    for page_id in (first, second):
        store.put(page_id, content(page_id), uri(page_id))
    store.locate(FILE_A, "v", 0, 0)  # a short-circuit reader is about to read it
    store.put(third, content(third), uri(third))
    assert store.has_page(first) and not store.has_page(second)
