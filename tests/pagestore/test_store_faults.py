"""PageCache under faults: corrupt pages, full, read-only, vanishing and busy directories.
Whatever happens, reads return right bytes or miss, and writes return an outcome."""

from __future__ import annotations

import errno
import functools
import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pagestore.api import Lookup, PageRead, PutResult
from pagestore.cache import PageCache
from pagestore.disk import PageDir
from pagestore.layout import TEMP_SUFFIX
from pagestore.options import PageDirOptions, PageStoreOptions
from pagestore.page import PageId
from pagestore.pagefile import BLOCK_SIZE, header_size
from pagestore.store import DiskStore
from tests.pagestore.support import FILE_A, PAGE_SIZE, content, make_options, page_files, uri

LocalStores = Callable[[PageStoreOptions], PageCache]


def file_ids(count: int) -> list[str]:
    return [f"{n:02x}" * 32 for n in range(count)]


def page_path(store: PageCache, page_id: PageId) -> Path:
    disk = store.store
    assert isinstance(disk, DiskStore)
    for d in disk.options.dirs:
        path = Path(PageDir(d.path, store.page_size).path(page_id.key))
        if path.exists():
            return path
    raise AssertionError(f"no file for {page_id}")


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str, str], Path]]:
    """Mounts small tmpfs file systems (root only); unmounted at teardown, after the stores that
    use them are closed (fixtures requested later are torn down first)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted: list[Path] = []

    def mount(name: str, size: str) -> Path:
        path = tmp_path / name
        path.mkdir()
        command = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)]
        subprocess.run(command, check=True)
        mounted.append(path)
        return path

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], check=False)


# -- corrupt and missing pages ----------------------------------------------------------------


@pytest.fixture
def stored(tmp_path: Path, local_stores: LocalStores) -> tuple[PageCache, PageId, Path]:
    store = local_stores(make_options(tmp_path))
    page_id = PageId(FILE_A, '"etag-1"', 0)
    assert store.put(page_id, content(page_id), uri(page_id)) is PutResult.OK
    return store, page_id, page_path(store, page_id)


def flip_byte(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("position", [0, 10, 30, 2000, -1], ids=lambda p: f"byte{p}")
def test_a_flipped_byte_is_a_miss_then_refetched(
    stored: tuple[PageCache, PageId, Path], position: int
) -> None:
    store, page_id, path = stored
    flip_byte(path, position)
    assert store.read(page_id) == PageRead(Lookup.FAILED)
    assert store.stats().corrupt_pages == 1
    assert not path.exists() and not store.has_page(page_id)
    assert store.get_or_fill(page_id, lambda: content(page_id), uri(page_id)).data == content(
        page_id
    )
    assert store.get(page_id) == content(page_id)


def test_a_flipped_byte_fails_only_reads_of_its_block(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    page_size = 4 * BLOCK_SIZE
    store = local_stores(make_options(tmp_path, page_size=page_size))
    page_id = PageId(FILE_A, "v", 0)
    data = content(page_id, page_size)
    store.put(page_id, data, uri(page_id))
    flip_byte(page_path(store, page_id), header_size(page_size) + 3 * BLOCK_SIZE + 1)
    assert store.get(page_id, 0, 3 * BLOCK_SIZE) == data[: 3 * BLOCK_SIZE]
    assert store.get(page_id, BLOCK_SIZE + 5, 10) == data[BLOCK_SIZE + 5 : BLOCK_SIZE + 15]
    assert store.read(page_id, 3 * BLOCK_SIZE + 1000, 10) == PageRead(Lookup.FAILED)
    assert store.stats().corrupt_pages == 1 and not store.has_page(page_id)


def test_a_short_page_is_a_miss(stored: tuple[PageCache, PageId, Path]) -> None:
    store, page_id, path = stored
    os.truncate(path, 1000)
    fill = store.get_or_fill(page_id, lambda: content(page_id), uri(page_id))
    assert (fill.data, fill.fetched, fill.cache_failure) == (content(page_id), True, True)
    assert store.get(page_id) == content(page_id)


def test_a_page_removed_behind_our_back_is_a_miss(
    stored: tuple[PageCache, PageId, Path],
) -> None:
    store, page_id, path = stored
    path.unlink()
    assert store.read(page_id) == PageRead(Lookup.FAILED)
    assert not store.has_page(page_id)
    assert store.stats().dirs_in_service == 1


def test_an_unreadable_page_is_a_miss(
    stored: tuple[PageCache, PageId, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, page_id, _ = stored

    def failing_read(self: PageDir, key: object, size: int, offset: int, length: int) -> bytes:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(PageDir, "read", failing_read)
    assert store.get(page_id) is None
    assert store.stats().io_errors == 1


# -- full and read-only disks -----------------------------------------------------------------


def test_a_full_disk_fails_puts_cleanly_and_reads_go_on(
    tmpfs: Callable[[str, str], Path], local_stores: LocalStores
) -> None:
    root = tmpfs("full", "1m")
    page_size = 64 << 10
    # The store believes it has 4 MB; the file system has 1 MB.
    store = local_stores(PageStoreOptions((PageDirOptions(root, 4 << 20),), page_size))
    pages = [PageId(file_id, "v", 0) for file_id in file_ids(24)]
    results = [store.put(p, content(p, page_size), uri(p)) for p in pages]
    assert PutResult.OK in results and PutResult.NO_SPACE in results
    assert store.stats().put_failures[PutResult.NO_SPACE] == results.count(PutResult.NO_SPACE)
    assert page_files(root, TEMP_SUFFIX) == []  # failed writes leave nothing behind
    extra = PageId(FILE_A, "v", 1)
    assert store.get_or_fill(extra, lambda: content(extra, page_size), uri(extra)).data == content(
        extra, page_size
    )
    for page_id, result in zip(pages, results, strict=True):
        expected = content(page_id, page_size) if result is PutResult.OK else None
        assert store.get(page_id) == expected


def test_a_full_disk_fails_packed_puts_cleanly(
    tmpfs: Callable[[str, str], Path], local_stores: LocalStores
) -> None:
    root = tmpfs("full-packs", "1m")
    page_size = 64 << 10
    options = PageStoreOptions((PageDirOptions(root, 64 << 20),), page_size, pack_limit=page_size)
    store = local_stores(options)
    small = 20_000
    batches = [[PageId(f, "v", 0) for f in file_ids(120)[n : n + 10]] for n in range(0, 120, 10)]
    results: list[PutResult] = []
    for batch in batches:
        pages = [(p, content(p, small), uri(p)) for p in batch]
        results += store.put_many(pages, store.mark())
    assert PutResult.OK in results and PutResult.NO_SPACE in results
    stored = [p for batch in batches for p in batch]
    for page_id, result in zip(stored, results, strict=True):
        expected = content(page_id, small) if result is PutResult.OK else None
        assert store.get(page_id) == expected
    store.close()
    again = local_stores(options)  # a pack torn by the full disk keeps the entries before it
    for page_id, result in zip(stored, results, strict=True):
        assert again.get(page_id) in (None, content(page_id, small))
        assert (result is PutResult.OK) or not again.has_page(page_id)


def test_a_read_only_dir_fails_puts_and_still_serves_reads(
    tmpfs: Callable[[str, str], Path], local_stores: LocalStores
) -> None:
    root = tmpfs("ro", "4m")
    store = local_stores(make_options(root))
    before, after = PageId(FILE_A, "v", 0), PageId(FILE_A, "v", 1)
    assert store.put(before, content(before), uri(before)) is PutResult.OK
    subprocess.run(["mount", "-o", "remount,ro", str(root)], check=True)
    assert store.put(after, content(after), uri(after)) is PutResult.FAILED
    fill = store.get_or_fill(after, lambda: content(after), uri(after))
    assert (fill.data, fill.cache_failure) == (content(after), True)
    assert store.get(before) == content(before)
    stats = store.stats()
    assert stats.put_failures[PutResult.FAILED] == 2 and stats.io_errors == 2


# -- directories that vanish, cannot be opened, or are taken --------------------------------


def test_a_vanished_dir_is_taken_out_of_service_and_puts_go_elsewhere(
    tmp_path: Path, local_stores: LocalStores, caplog: pytest.LogCaptureFixture
) -> None:
    store = local_stores(make_options(tmp_path, pages=64, dirs=2))
    pages = [PageId(file_id, "v", 0) for file_id in file_ids(32)]
    for page_id in pages:
        assert store.put(page_id, content(page_id), uri(page_id)) is PutResult.OK
    lost = [p for p in pages if str(page_path(store, p)).startswith(str(tmp_path / "dir1"))]
    assert lost, "rendezvous hashing should use both directories"
    shutil.rmtree(tmp_path / "dir1")
    with caplog.at_level(logging.ERROR, logger="pagestore"):
        assert store.get(lost[0]) is None
    assert "out of service" in caplog.text
    assert store.stats().dirs_in_service == 1
    assert store.capacity_bytes == 64 * PAGE_SIZE
    for page_id in pages:
        assert store.get_or_fill(
            page_id, functools.partial(content, page_id), uri(page_id)
        ).data == content(page_id)
        assert store.has_page(page_id)  # the lost ones were stored again in dir0


def test_a_put_that_finds_its_dir_gone_fails_once_then_goes_elsewhere(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    store = local_stores(make_options(tmp_path, pages=64, dirs=2))
    shutil.rmtree(tmp_path / "dir0")
    results = [store.put(PageId(f, "v", 0), b"x", uri(PageId(f, "v", 0))) for f in file_ids(32)]
    assert results.count(PutResult.FAILED) == 1
    assert results.count(PutResult.OK) == 31


def test_losing_the_only_dir_fails_puts_but_not_reads(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    store = local_stores(make_options(tmp_path))
    page_id = PageId(FILE_A, "v", 0)
    store.put(page_id, content(page_id), uri(page_id))
    shutil.rmtree(tmp_path / "dir0")
    assert store.get(page_id) is None
    assert store.put(page_id, content(page_id), uri(page_id)) is PutResult.FAILED
    assert store.get_or_fill(page_id, lambda: content(page_id), uri(page_id)).data == content(
        page_id
    )
    assert (store.stats().dirs_in_service, store.capacity_bytes) == (0, 0)


def test_a_dir_that_cannot_be_opened_is_out_of_service_from_the_start(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    (tmp_path / "dir1").write_text("a file where a directory should be")
    store = local_stores(make_options(tmp_path, dirs=2))
    assert store.ready and store.stats().dirs_in_service == 1
    assert all(
        store.put(PageId(f, "v", 0), b"x", uri(PageId(f, "v", 0))) is PutResult.OK
        for f in file_ids(8)
    )


def test_two_stores_never_share_a_dir(tmp_path: Path, local_stores: LocalStores) -> None:
    first = local_stores(make_options(tmp_path))
    second = local_stores(make_options(tmp_path))
    page_id = PageId(FILE_A, "v", 0)
    assert second.put(page_id, b"x", uri(page_id)) is PutResult.FAILED
    assert first.put(page_id, b"x", uri(page_id)) is PutResult.OK
    assert second.stats().dirs_in_service == 0
