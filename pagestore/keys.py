"""Property keys owned by the page store."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey
from pagestore.evict import DEFAULT_EVICTOR, EVICTORS

PAGE_SIZE: PropertyKey[int] = PropertyKey(
    "dora.worker.page.store.page.size",
    KeyType.SIZE,
    "1MB",
    "Size of one cached page.",
    alias="alluxio.worker.page.store.page.size",
    minimum=1024,
)
DIRS: PropertyKey[list[str]] = PropertyKey(
    "dora.worker.page.store.dirs",
    KeyType.LIST,
    "",
    "Page directories, comma separated (empty: <work dir>/pages).",
    alias="alluxio.worker.page.store.dirs",
)
SIZES: PropertyKey[list[int]] = PropertyKey(
    "dora.worker.page.store.sizes",
    KeyType.SIZE_LIST,
    "1GB",
    "Capacity of each page directory, comma separated; one value applies to every directory.",
    alias="alluxio.worker.page.store.sizes",
)
EVICTOR: PropertyKey[str] = PropertyKey(
    "dora.worker.page.store.evictor",
    KeyType.STRING,
    DEFAULT_EVICTOR,
    "Page eviction policy, one evictor per page directory: s3fifo (a one-pass scan leaves the "
    "hot set cached, a new hot set read twice is cached), tinylfu (W-TinyLFU), slru, lru, lfu "
    "(counts never age).",
    choices=EVICTORS,
)

PACK_LIMIT: PropertyKey[int] = PropertyKey(
    "dora.worker.page.store.pack.limit",
    KeyType.SIZE,
    "64KB",
    "Pages of up to this many bytes, short of a whole page (a small file's, or the end of a "
    "larger file), are appended to shared pack files instead of a file each, so that loading "
    "many small files creates few files; 0 turns packing off.",
    minimum=0,
)

MEMORY_SIZE: PropertyKey[int] = PropertyKey(
    "dora.worker.page.store.memory.size",
    KeyType.SIZE,
    "0",
    "Bytes of a memory tier in front of the page directories, holding copies of small pages "
    "as they are stored (pagestore.tiered); 0 turns it off.",
    minimum=0,
)
MEMORY_PAGE_LIMIT: PropertyKey[int] = PropertyKey(
    "dora.worker.page.store.memory.page.limit",
    KeyType.SIZE,
    "64KB",
    "Largest page the memory tier keeps a copy of.",
    minimum=1,
)
PIN_MAX: PropertyKey[str] = PropertyKey(
    "dora.worker.page.store.pin.max",
    KeyType.STRING,
    "0.5",
    "Bound on the bytes pinned pages may hold: a share of the capacity from 0 to 1 (of each "
    "store: the directories together, the memory tier) or a size such as 10GB. A pin that "
    "would pass it is refused; a page of a pinned file past it is stored evictable.",
)

KEYS: list[PropertyKey[Any]] = [
    PAGE_SIZE,
    DIRS,
    SIZES,
    EVICTOR,
    PACK_LIMIT,
    MEMORY_SIZE,
    MEMORY_PAGE_LIMIT,
    PIN_MAX,
]
