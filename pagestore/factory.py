"""Building the page cache over the store the keys ask for.

The worker builds its cache here and nowhere else (:func:`page_cache`); a new kind of store
(:class:`~pagestore.api.Store`) is its module, its keys in :mod:`pagestore.keys` and a few lines
here (see docs/architecture.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from config import Config
from pagestore import keys
from pagestore.cache import PageCache
from pagestore.memory import MemoryStore
from pagestore.options import PageStoreOptions
from pagestore.store import DiskStore
from pagestore.tiered import TieredStore


def page_cache(config: Config, options: PageStoreOptions | None = None) -> PageCache:
    """The worker's page cache: the disk store of ``options`` (from ``config`` when None),
    behind a memory tier when ``dora.worker.page.store.memory.size`` is above 0. Not started.
    Raises ConfigError for a memory tier that cannot hold one page of its limit."""
    options = options or PageStoreOptions.from_config(config)
    memory, limit = config.get(keys.MEMORY_SIZE), config.get(keys.MEMORY_PAGE_LIMIT)
    if not memory:
        return on_disk(options)
    if memory < limit:
        raise config.invalid(
            keys.MEMORY_SIZE,
            f"a memory tier smaller than its page limit {keys.MEMORY_PAGE_LIMIT.name}={limit} "
            "holds no page; expected 0 (off) or at least the limit",
        )
    front = MemoryStore(options.page_size, memory, options.evictor, options.pin_max)
    return PageCache(TieredStore(front, DiskStore(options, time.monotonic), limit))


def on_disk(options: PageStoreOptions, clock: Callable[[], float] = time.monotonic) -> PageCache:
    """A page cache over the disk store of ``options``. Not started."""
    return PageCache(DiskStore(options, clock))


def in_memory(options: PageStoreOptions) -> PageCache:
    """A page cache over a memory store as large as the directories of ``options`` (which are
    never touched), with their eviction policy: for tests of what uses a page cache."""
    store = MemoryStore(options.page_size, options.capacity_bytes, options.evictor, options.pin_max)
    return PageCache(store)
