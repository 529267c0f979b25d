"""Page directories the store may use: new, empty or marked ones, and unmarked stores of earlier
versions; anything else makes it refuse to start, and nothing in it is touched."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pagestore.api import PutResult
from pagestore.cache import PageCache
from pagestore.factory import on_disk
from pagestore.layout import layout_name
from pagestore.options import PageStoreOptions
from pagestore.owner import LOCK_FILE, MARKER, MARKER_TEXT, ForeignPageDirError
from pagestore.page import PageId
from tests.pagestore.support import FILE_A, PAGE_SIZE, content, make_options, open_local, uri

LocalStores = Callable[[PageStoreOptions], PageCache]


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every entry under ``root`` with its content (None for directories)."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in root.rglob("*")
    }


def refused(options: PageStoreOptions) -> ForeignPageDirError:
    store = on_disk(options)
    with pytest.raises(ForeignPageDirError) as caught:
        store.start()
    store.close()
    return caught.value


def test_a_new_directory_is_created_with_the_marker(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    local_stores(make_options(tmp_path / "new"))
    assert (tmp_path / "new" / "dir0" / MARKER).read_bytes() == MARKER_TEXT


def test_an_empty_directory_is_marked_and_used(tmp_path: Path, local_stores: LocalStores) -> None:
    (tmp_path / "dir0").mkdir()
    store = local_stores(make_options(tmp_path))
    page_id = PageId(FILE_A, "v", 0)
    store.put(page_id, content(page_id), uri(page_id))
    assert store.get(page_id) == content(page_id)
    assert (tmp_path / "dir0" / MARKER).is_file()


def test_a_fresh_file_system_with_lost_and_found_is_empty(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    (tmp_path / "dir0" / "lost+found").mkdir(parents=True)
    local_stores(make_options(tmp_path))
    assert (tmp_path / "dir0" / MARKER).is_file() and (tmp_path / "dir0" / "lost+found").is_dir()


def test_a_foreign_directory_named_like_a_layout_survives(tmp_path: Path) -> None:
    # The defect: a folder named like "2024/" was taken for another page size's pages and
    # deleted, with its files, when the worker started.
    photos = tmp_path / "dir0" / "2024"
    photos.mkdir(parents=True)
    (photos / "holiday.jpg").write_bytes(b"jpeg")
    before = snapshot(tmp_path)
    error = refused(make_options(tmp_path))
    assert str(tmp_path / "dir0") in str(error) and "2024" in str(error)
    assert snapshot(tmp_path) == before  # not even a lock file or a marker was added


@pytest.mark.parametrize(
    "foreign",
    [
        ".bashrc",
        "2024/ab/photo.jpg",
        "4096/aa/notes.txt",
        "4096/not-a-bucket/x",
        "4096/aa/b/c",
        "v3-4096/packs/notes.txt",
        "v3-4096/packs/0.pack/x",
    ],
)
def test_any_entry_the_store_does_not_make_is_refused(tmp_path: Path, foreign: str) -> None:
    path = tmp_path / "dir0" / foreign
    path.parent.mkdir(parents=True)
    path.write_bytes(b"data")
    before = snapshot(tmp_path)
    refused(make_options(tmp_path))
    assert snapshot(tmp_path) == before


def test_another_components_marker_is_refused(tmp_path: Path) -> None:
    (tmp_path / "dir0").mkdir()
    (tmp_path / "dir0" / MARKER).write_bytes(b"doracache metastore, value format 1\n")
    assert "another kind" in str(refused(make_options(tmp_path)))


def flip_a_marker_byte(root: Path) -> None:
    marker = root / MARKER
    text = bytearray(marker.read_bytes())
    text[3] ^= 0x20
    marker.write_bytes(bytes(text))


@pytest.mark.parametrize("size", [PAGE_SIZE, PAGE_SIZE // 2], ids=["page-files", "packs"])
def test_a_damaged_marker_on_the_stores_own_layout_is_a_failing_directory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, size: int
) -> None:
    """Issue 22 item 7: a flipped byte in the marker made the store refuse to start. Issue 36
    item 1: it still did when the layout held packs (small pages), whose directory was taken
    for somebody else's."""
    options = make_options(tmp_path, dirs=2, pack_limit=PAGE_SIZE // 2)
    store = open_local(options)
    # Pages go to a directory by hashing its path with the file id: 32 files put some on
    # each of the two (all on one has a chance of 2 in 2**32).
    kept = [PageId(f"{n:02x}" * 32, "v", 0) for n in range(32)]
    for page_id in kept:
        assert store.put(page_id, content(page_id, size), uri(page_id)) is PutResult.OK
    store.close()
    packs = list(tmp_path.glob("dir0/*/packs/*.pack"))
    assert bool(packs) == (size < PAGE_SIZE)
    flip_a_marker_byte(tmp_path / "dir0")
    before = snapshot(tmp_path / "dir0")
    with caplog.at_level(logging.ERROR, logger="pagestore"):
        store = open_local(options)
    try:
        assert store.stats().dirs_in_service == 1
        served = [store.get(page_id) == content(page_id, size) for page_id in kept]
        assert False in served and True in served  # dir0's pages miss, dir1's are served
        again = content(kept[0], size)
        assert store.put(kept[0], again, uri(kept[0])) is PutResult.OK  # in dir1
    finally:
        store.close()
    assert snapshot(tmp_path / "dir0") == before  # nothing used, deleted or rewritten
    assert any("marker is damaged" in r.getMessage() for r in caplog.records)


def test_a_damaged_marker_among_foreign_files_is_still_refused(tmp_path: Path) -> None:
    options = make_options(tmp_path)
    open_local(options).close()
    flip_a_marker_byte(tmp_path / "dir0")
    (tmp_path / "dir0" / "thesis.tex").write_text("mine")
    before = snapshot(tmp_path)
    assert "another kind" in str(refused(options))
    assert snapshot(tmp_path) == before


def test_refusing_one_directory_releases_the_others(tmp_path: Path) -> None:
    options = make_options(tmp_path, dirs=2)
    (tmp_path / "dir1").mkdir()
    (tmp_path / "dir1" / "thesis.tex").write_text("mine")
    refused(options)
    (tmp_path / "dir1" / "thesis.tex").unlink()
    open_local(options).close()  # dir0 is not still locked by the refused store


def test_a_store_of_an_earlier_version_is_adopted_and_starts_cold(
    tmp_path: Path, local_stores: LocalStores
) -> None:
    # What the previous version left: a lock file and its layout (format 1 pages under
    # <page_size>/, no URI records) with a temporary file; no marker.
    page_id = PageId(FILE_A, "v", 0)
    old_layout = tmp_path / "dir0" / str(PAGE_SIZE)
    bucket = old_layout / FILE_A[:2]
    bucket.mkdir(parents=True)
    (tmp_path / "dir0" / LOCK_FILE).touch()
    (bucket / page_id.key.file_name).write_bytes(b"DPG1" + bytes(20) + content(page_id))
    (bucket / f"{page_id.key.file_name}.12-0.tmp").write_bytes(b"half")
    store = local_stores(make_options(tmp_path))
    assert (tmp_path / "dir0" / MARKER).read_bytes() == MARKER_TEXT
    # Its pages name no URI, so no prefix invalidation could find them: they go.
    assert store.get(page_id) is None
    assert store.put(page_id, content(page_id), uri(page_id)) is PutResult.OK
    store.close()
    assert not old_layout.exists()


def test_a_symlinked_bucket_is_not_followed(tmp_path: Path, local_stores: LocalStores) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / PageId(FILE_A, "v", 0).key.file_name
    victim.write_bytes(b"not a page")
    options = make_options(tmp_path)
    open_local(options).close()
    os.symlink(outside, tmp_path / "dir0" / layout_name(PAGE_SIZE) / "aa")
    os.makedirs(tmp_path / "dir0" / "8192")
    os.symlink(outside, tmp_path / "dir0" / "8192" / "aa")
    store = local_stores(options)
    assert store.page_count == 0
    store.close()
    assert victim.read_bytes() == b"not a page"
