"""PageCache after a restart: the index rebuilt in the background from the directories."""

from __future__ import annotations

import logging
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pagestore.api import PutResult
from pagestore.cache import PageCache
from pagestore.disk import PageDir, ScanEntry
from pagestore.factory import on_disk
from pagestore.layout import layout_name
from pagestore.options import PageStoreOptions
from pagestore.page import PageId
from tests.pagestore.support import (
    FILE_A,
    FILE_B,
    PAGE_SIZE,
    content,
    make_options,
    open_local,
    page_files,
    record_files,
    uri,
)

LocalStores = Callable[[PageStoreOptions], PageCache]


def fill(options: PageStoreOptions, pages: list[PageId]) -> None:
    """Store pages with a store that is then closed, as a previous run of the worker would."""
    store = open_local(options)
    try:
        for page_id in pages:
            assert store.put(page_id, content(page_id), uri(page_id)) is PutResult.OK
    finally:
        store.close()


def names(root: Path) -> set[str]:
    return {p.name for p in page_files(root)}


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Holds every restore scan until the test sets the event."""
    event = threading.Event()
    original = PageDir.scan

    def gated_scan(self: PageDir) -> Iterator[list[ScanEntry]]:
        event.wait()
        yield from original(self)

    monkeypatch.setattr(PageDir, "scan", gated_scan)
    yield event
    event.set()


def test_pages_survive_a_restart(tmp_path: Path, local_stores: LocalStores) -> None:
    options = make_options(tmp_path, pages=32, dirs=2)
    pages = [PageId(f, '"v-1"', i) for f in (FILE_A, FILE_B) for i in range(5)]
    fill(options, pages)
    store = local_stores(options)
    assert all(store.get(p) == content(p) for p in pages)
    assert store.cached_bytes(FILE_A, '"v-1"') == 5 * PAGE_SIZE
    stats = store.stats()
    assert (stats.restored_pages, stats.pages, stats.used_bytes) == (10, 10, 10 * PAGE_SIZE)
    assert stats.restore_seconds > 0


def test_reads_before_the_restore_ends_are_misses_and_puts_wait(
    tmp_path: Path, gate: threading.Event
) -> None:
    options = make_options(tmp_path)
    old, new = PageId(FILE_A, "v", 0), PageId(FILE_A, "v", 1)
    gate.set()
    fill(options, [old])
    gate.clear()
    store = on_disk(options)
    store.start()
    try:
        assert not store.ready and not store.wait_ready(0)
        assert store.get(old) is None
        assert store.put(new, content(new), uri(new)) is PutResult.REJECTED
        assert store.get_or_fill(new, lambda: content(new), uri(new)).data == content(new)
        gate.set()
        assert store.wait_ready(30)
        assert store.get(old) == content(old)
        assert store.put(new, content(new), uri(new)) is PutResult.OK
    finally:
        store.close()


def test_a_file_invalidated_during_the_restore_is_not_revived(
    tmp_path: Path, gate: threading.Event
) -> None:
    options = make_options(tmp_path)
    gate.set()
    fill(options, [PageId(FILE_A, "v1", 0), PageId(FILE_A, "v2", 0), PageId(FILE_B, "v1", 0)])
    gate.clear()
    store = on_disk(options)
    store.start()
    try:
        store.delete_file(FILE_A, "v1")
        gate.set()
        assert store.wait_ready(30)
        assert not store.has_page(PageId(FILE_A, "v1", 0))
        assert store.has_page(PageId(FILE_A, "v2", 0)) and store.has_page(PageId(FILE_B, "v1", 0))
    finally:
        store.close()
    assert len(names(tmp_path)) == 2


def test_a_prefix_invalidation_after_a_restart_finds_the_pages(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    options = make_options(tmp_path, pages=32, dirs=2)
    pages = [PageId(f, v, i) for f in (FILE_A, FILE_B) for v in ("v1", "v2") for i in range(3)]
    fill(options, pages)
    store = local_stores(options)
    assert store.delete_prefix(uri(PageId(FILE_A, "v1", 0))) == 6
    assert store.page_count == 6 and all(store.has_page(p) for p in pages if p.file_id == FILE_B)
    store.close()
    assert {p.name for p in record_files(tmp_path)} == {f"uri.{FILE_B}"}


def test_a_prefix_invalidated_during_the_restore_is_not_revived(
    tmp_path: Path, gate: threading.Event
) -> None:
    options = make_options(tmp_path)
    gate.set()
    fill(options, [PageId(FILE_A, "v1", 0), PageId(FILE_B, "v1", 0)])
    gate.clear()
    store = on_disk(options)
    store.start()
    try:
        assert store.delete_prefix(uri(PageId(FILE_A, "v1", 0))) == 0  # nothing restored yet
        gate.set()
        assert store.wait_ready(30)
        assert not store.has_page(PageId(FILE_A, "v1", 0))
        assert store.has_page(PageId(FILE_B, "v1", 0))
    finally:
        store.close()
    assert {p.name for p in record_files(tmp_path)} == {f"uri.{FILE_B}"}


def test_pages_without_a_readable_uri_record_and_records_without_pages_are_removed(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    options = make_options(tmp_path)
    torn, kept = PageId(FILE_A, "v", 0), PageId(FILE_B, "v", 0)
    fill(options, [torn, kept])
    layout = tmp_path / "dir0" / layout_name(PAGE_SIZE)
    record = layout / FILE_A[:2] / f"uri.{FILE_A}"
    record.write_bytes(record.read_bytes()[:-3])  # torn by a power cut
    lonely = layout / "cc" / f"uri.{'c' * 64}"
    lonely.parent.mkdir()
    lonely.write_bytes((layout / FILE_B[:2] / f"uri.{FILE_B}").read_bytes())
    store = local_stores(options)
    assert store.get(torn) is None and store.get(kept) == content(kept)
    assert {p.name for p in record_files(tmp_path)} == {f"uri.{FILE_B}"}
    assert names(tmp_path) == {kept.key.file_name}


def test_temporary_files_unusable_pages_and_old_layouts_are_cleaned(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    options = make_options(tmp_path)
    page_id = PageId(FILE_A, "v", 0)
    fill(options, [page_id])
    bucket = tmp_path / "dir0" / layout_name(PAGE_SIZE) / FILE_A[:2]
    (bucket / f"{page_id.key.file_name}.77-0.tmp").write_bytes(b"half a page")
    short = PageId(FILE_A, "v", 1).key.file_name
    (bucket / short).write_bytes(b"tiny")  # shorter than a header
    old_layout = tmp_path / "dir0" / "8192" / "aa"
    old_layout.mkdir(parents=True)
    (old_layout / PageId(FILE_A, "v", 3).key.file_name).write_bytes(b"old")
    format2 = tmp_path / "dir0" / f"v2-{PAGE_SIZE}" / FILE_A[:2]  # 64 KiB blocks: not read now
    format2.mkdir(parents=True)
    (format2 / PageId(FILE_A, "v", 4).key.file_name).write_bytes(b"DPG2")
    store = local_stores(options)
    assert names(bucket) == {page_id.key.file_name}
    assert store.page_count == 1
    store.close()
    assert not (tmp_path / "dir0" / "8192").exists()
    assert not format2.parent.exists()


def test_files_the_store_did_not_name_are_never_removed(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    options = make_options(tmp_path)
    page_id = PageId(FILE_A, "v", 0)
    fill(options, [page_id])
    layout = tmp_path / "dir0" / layout_name(PAGE_SIZE)
    foreign = [
        layout / FILE_A[:2] / "notes.txt",
        layout / FILE_A[:2] / PageId(FILE_B, "v", 0).key.file_name,  # a page in the wrong bucket
        layout / "not-a-bucket" / "x",
        tmp_path / "dir0" / "8192" / "aa" / "mine.parquet",
        tmp_path / "dir0" / "8192" / "report.csv",
    ]
    for path in foreign:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"somebody's data")
    old_page = tmp_path / "dir0" / "8192" / "aa" / PageId(FILE_A, "v", 3).key.file_name
    old_page.write_bytes(b"old")
    store = local_stores(options)
    assert store.get(page_id) == content(page_id)
    store.close()
    assert all(path.read_bytes() == b"somebody's data" for path in foreign)
    assert not old_page.exists()


def test_a_smaller_capacity_drops_the_pages_that_no_longer_fit(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    pages = [PageId(FILE_A, "v", i) for i in range(8)]
    fill(make_options(tmp_path, pages=8), pages)
    store = local_stores(make_options(tmp_path, pages=3))
    assert store.page_count == 3 and store.used_bytes == 3 * PAGE_SIZE
    assert len(names(tmp_path)) == 3


def test_the_restores_outcome_is_logged_once(
    tmp_path: Path, local_stores: LocalStores, caplog: pytest.LogCaptureFixture
) -> None:
    fill(make_options(tmp_path, pages=8), [PageId(FILE_A, "v", i) for i in range(8)])
    with caplog.at_level(logging.INFO, logger="pagestore.store"):
        local_stores(make_options(tmp_path, pages=3))
    (line,) = [r.getMessage() for r in caplog.records if "restore" in r.getMessage()]
    assert re.fullmatch(r"page store ready: 3 pages restored, 5 files dropped in [0-9.]+s", line)


def test_a_page_found_in_two_dirs_is_kept_once(tmp_path: Path, local_stores: LocalStores) -> None:
    options = make_options(tmp_path, dirs=2)
    page_id = PageId(FILE_A, "v", 0)
    fill(options, [page_id])
    (found,) = tmp_path.rglob(page_id.key.file_name)
    other = "dir1" if "dir0" in str(found) else "dir0"
    copy = tmp_path / other / layout_name(PAGE_SIZE) / FILE_A[:2] / page_id.key.file_name
    copy.parent.mkdir(exist_ok=True)
    shutil.copy(found, copy)
    store = local_stores(options)
    assert store.page_count == 1 and store.get(page_id) == content(page_id)
    assert len(list(tmp_path.rglob(page_id.key.file_name))) == 1


def test_a_new_page_size_starts_empty(tmp_path: Path, local_stores: LocalStores) -> None:
    page_id = PageId(FILE_A, "v", 0)
    fill(make_options(tmp_path), [page_id])
    store = local_stores(make_options(tmp_path, page_size=2 * PAGE_SIZE))
    assert store.get(page_id) is None and store.page_count == 0


def test_closing_during_the_restore_stops_it(
    tmp_path: Path, gate: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    options = make_options(tmp_path)
    gate.set()
    fill(options, [PageId(FILE_A, "v", 0)])
    gate.clear()
    store = on_disk(options)
    with caplog.at_level(logging.INFO, logger="pagestore.store"):
        store.start()
        closer = threading.Thread(target=store.close)
        closer.start()
        gate.set()
        closer.join()
    (line,) = [r.getMessage() for r in caplog.records if "restore" in r.getMessage()]
    assert re.fullmatch(
        r"page store restore stopped: 0 pages restored, 0 files dropped in .*s", line
    )
    assert (
        store.put(PageId(FILE_A, "v", 1), b"x", uri(PageId(FILE_A, "v", 1))) is PutResult.REJECTED
    )
