"""Building the page cache: which stores, and which tiers in front of them, the keys ask for.

The worker builds its cache here and nowhere else (:func:`page_cache`); a new tier is a store
(:class:`~pagestore.api.Store`), its keys in :mod:`pagestore.keys` and a few lines here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from config import Config, ConfigError
from pagestore import keys
from pagestore.cache import PageCache
from pagestore.memory import MemoryStore
from pagestore.options import PageStoreOptions
from pagestore.store import DiskStore


def page_cache(config: Config, options: PageStoreOptions | None = None) -> PageCache:
    """The worker's page cache: the disk store of ``options`` (from ``config`` when None), with
    a memory tier in front when ``dora.worker.page.store.memory.size`` is above 0. Not started.
    Raises ConfigError naming the keys when the tier cannot hold one page of its limit."""
    options = options or PageStoreOptions.from_config(config)
    size, limit = config.get(keys.MEMORY_SIZE), config.get(keys.MEMORY_PAGE_LIMIT)
    if size and size < limit:
        raise ConfigError(
            f"{keys.MEMORY_SIZE.name}={size} cannot hold one page of "
            f"{keys.MEMORY_PAGE_LIMIT.name}={limit}; expected at least {limit}, or 0 for no "
            "memory tier"
        )
    return on_disk(options, memory=size, memory_limit=limit)


def on_disk(
    options: PageStoreOptions,
    clock: Callable[[], float] = time.monotonic,
    memory: int = 0,
    memory_limit: int = 0,
) -> PageCache:
    """A page cache over the disk store of ``options``, with a memory tier of ``memory`` bytes
    for pages up to ``memory_limit`` when ``memory`` is above 0. Not started."""
    tier = MemoryStore(options.page_size, memory, options.evictor) if memory else None
    return PageCache(DiskStore(options, clock), tier, memory_limit)


def in_memory(options: PageStoreOptions) -> PageCache:
    """A page cache over a memory store as large as the directories of ``options`` (which are
    never touched), with their eviction policy: for tests of what uses a page cache."""
    return PageCache(MemoryStore(options.page_size, options.capacity_bytes, options.evictor))
