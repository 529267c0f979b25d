"""Helpers shared by the page store tests: options, page content and opening stores."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from pagestore.api import PageStore
from pagestore.cache import PageCache
from pagestore.factory import on_disk
from pagestore.layout import record_of
from pagestore.memory import MemoryStore
from pagestore.options import PageDirOptions, PageStoreOptions
from pagestore.owner import LOCK_FILE, MARKER
from pagestore.pack import TornEntryError, parse_entry
from pagestore.page import PageId, PageKey
from pagestore.store import DiskStore
from pagestore.tiered import TieredStore

PAGE_SIZE = 4096
FILE_A = "a" * 64
FILE_B = "b" * 64

StoreFactory = Callable[..., PageStore]


def uri(page_id: PageId) -> str:
    """The URI the tests give to the file of a page."""
    return f"s3://bucket/files/{page_id.file_id}"


def content(page_id: PageId, size: int = PAGE_SIZE) -> bytes:
    """The bytes a page of a given id is expected to hold: distinct per file, version, index."""
    seed = hashlib.sha256(f"{page_id.file_id}/{page_id.version}/{page_id.index}".encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def make_options(
    root: Path,
    pages: int = 8,
    dirs: int = 1,
    evictor: str = "lru",
    page_size: int = PAGE_SIZE,
    pack_limit: int = 0,
) -> PageStoreOptions:
    """Options for a test store; pages are in page files of their own unless ``pack_limit``
    says which go to packs (``tests/pagestore/test_packs.py``)."""
    return PageStoreOptions(
        dirs=tuple(PageDirOptions(root / f"dir{n}", pages * page_size) for n in range(dirs)),
        page_size=page_size,
        evictor=evictor,
        pack_limit=pack_limit,
    )


def open_local(options: PageStoreOptions) -> PageCache:
    """A started, ready page cache on disk."""
    store = on_disk(options)
    store.start()
    assert store.wait_ready(30)
    return store


def page_files(root: Path, suffix: str = "") -> list[Path]:
    """Files under ``root`` ending in ``suffix``, but for URI records and each page directory's
    lock and marker."""
    return [
        p
        for p in root.rglob(f"*{suffix}")
        if p.is_file() and p.name not in (LOCK_FILE, MARKER) and record_of(p.name) is None
    ]


def pack_entries(pack: Path) -> list[tuple[str, bool]]:
    """The page file names a pack's entries hold (up to a torn one), each with whether it is
    stored (not marked removed)."""
    raw, offset, found = memoryview(pack.read_bytes()), 0, []
    while offset < len(raw):
        try:
            entry = parse_entry(raw, offset)
        except TornEntryError:
            break
        if entry.key is not None:
            found.append((entry.key.file_name, entry.live))
        offset = entry.end
    return found


def stored_pages(root: Path) -> list[str]:
    """The names of the pages stored under ``root``: page files, and pages in packs."""
    names = [p.name for p in root.rglob("*") if PageKey.parse(p.name) is not None]
    for pack in root.rglob("*.pack"):
        names += [name for name, live in pack_entries(pack) if live]
    return names


def record_files(root: Path) -> list[Path]:
    """The URI records under ``root``."""
    return [p for p in root.rglob("uri.*") if record_of(p.name) is not None]


def open_tiered(options: PageStoreOptions) -> PageCache:
    """A started, ready page cache over a memory tier of half the capacity over the disk."""
    front = MemoryStore(options.page_size, options.capacity_bytes // 2, options.evictor)
    store = PageCache(TieredStore(front, DiskStore(options), options.page_size))
    store.start()
    assert store.wait_ready(30)
    return store
