"""The state the metadata read side and write side share: the memory tier, the metastore, the
clock, the counters and the near-cache's generation counters (DESIGN.md, "Metadata semantics").

Negative entries (the path does not exist) live in both tiers, like statuses, for
``dora.worker.ufs.negative.cache.ttl`` from their ``loaded_at``; with that TTL at 0 none are kept.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

from ufs import uri as uris
from worker.meta.counters import MetaCounters
from worker.meta.entry import MetaEntry
from worker.meta.errors import MetastoreError
from worker.meta.generations import GenerationFile
from worker.meta.memory import ListingCache, StatusCache
from worker.meta.metastore import Metastore
from worker.meta.options import CacheOptions

log = logging.getLogger(__name__)

_CANONICAL_CACHE = 65536
_COUNTERS = (
    "memory_hits",
    "metastore_hits",
    "misses",
    "metastore_read_errors",
    "syncs",
    "syncs_changed",
    "ufs_calls",
    "listing_hits",
    "listing_misses",
    "listing_negatives",
    "writes",
    "invalidations",
    "stale_served",
    "revalidations",
    "revalidations_failed",
)


class Tiers:
    """Memory tier + metastore for canonical URIs, and what both sides count.

    Thread-safe. ``lock`` guards consistency across the tiers (the write side's fence and
    ``fresh_after`` live under it); it is taken before the memory caches' own locks, before
    the metastore's locks, and never held while the UFS is called or the metastore is read.
    """

    def __init__(self, options: CacheOptions, metastore: Metastore, clock: Callable[[], int]):
        self.options = options
        self.store = metastore
        self.clock = clock
        self.lock = threading.Lock()
        self.statuses = StatusCache(
            options.status_cache_size, options.status_ttl_ms, metastore.lifetimes, clock
        )
        self.listings = ListingCache(options.list_cache_dirs, options.list_ttl_ms, clock)
        self.counters = MetaCounters(_COUNTERS)
        # Entries and listings loaded before this (epoch ms, at or before: what was loaded in
        # the gap's own millisecond may predate the change) are re-checked once whatever the
        # sync interval: the cluster feed lost events it cannot replay. Written under ``lock``.
        self.fresh_after = 0
        self.generations: GenerationFile | None = None
        # Canonicalizing costs microseconds (percent-decoding rounds, segment checks), more than
        # a memory hit: remember recent answers. Errors are not cached, so a bad URI always
        # raises. lru_cache is thread-safe.
        self.canonical = functools.lru_cache(maxsize=_CANONICAL_CACHE)(uris.normalize)

    def bump(self, uri: str) -> None:
        """Tell same-host near-caches that ``uri``'s cached state changed."""
        if self.generations is not None:
            self.generations.bump(uri)

    def bump_all(self) -> None:
        if self.generations is not None:
            self.generations.bump_all()

    def read_store(self, uri: str) -> MetaEntry | None:
        """The one place a metastore read failure becomes a miss."""
        try:
            return self.store.get(uri)
        except MetastoreError as exc:
            log.warning("metastore read of %r failed, treating it as a miss: %s", uri, exc)
            self.counters.add("metastore_read_errors")
            return None

    def peek_olds(self, names: list[str]) -> dict[str, MetaEntry | None]:
        """What each URI holds now, expired or not (to learn the version a change replaces).
        Reads the metastore: never called with ``lock`` held."""
        olds = dict(zip(names, self.statuses.get_many(names), strict=True))
        unknown = [name for name, entry in olds.items() if entry is None]
        if unknown:
            try:
                olds.update(zip(unknown, self.store.peek_many(unknown), strict=True))
            except MetastoreError as exc:
                log.warning("metastore read failed; old versions are unknown: %s", exc)
                self.counters.add("metastore_read_errors")
        return olds

    def counts(self) -> dict[str, int]:
        """The counters, the memory tier's evictions and expirations, the metastore's stats."""
        counts = self.counters.snapshot()
        counts["evictions"] = self.statuses.evictions
        counts["expirations"] = self.statuses.expirations
        counts.update(self.store.stats())
        return counts
