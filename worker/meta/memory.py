"""The memory tier: a status cache and a listing cache, both bounded and expiring on a clock.

Both take the clock as ``timer`` (epoch ms), so tests move time with a fake clock instead of
sleeping.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cachetools import TLRUCache, TTLCache

from ufs import uri as uris
from ufs.status import UfsStatus
from worker.meta.entry import Lifetimes, MetaEntry

Clock = Callable[[], int]


class _CountingTLRU(TLRUCache[str, MetaEntry, int]):
    """cachetools' TLRU, counting what it drops because it is full and what expires."""

    def __init__(self, maxsize: int, ttu: Callable[[str, MetaEntry, int], int], timer: Clock):
        super().__init__(maxsize, ttu, timer)
        self.evictions = 0
        self.expirations = 0

    def popitem(self) -> tuple[str, MetaEntry]:
        item = super().popitem()
        self.evictions += 1
        return item

    def expire(self, time: int | None = None) -> list[tuple[str, MetaEntry]]:
        expired = super().expire(time)
        self.expirations += len(expired)
        return expired


class StatusCache:
    """Statuses (and negative entries) by canonical URI: LRU bounded by ``maxsize``.

    An entry leaves memory at the earliest of: ``ttl_ms`` after it entered memory (memory
    residency), or the end of its life under ``lifetimes`` (from ``loaded_at``), so a status
    promoted from the metastore never outlives its persisted TTL.

    Thread-safe: one internal lock, held only inside each method (a leaf in any lock order).
    """

    def __init__(self, maxsize: int, ttl_ms: int, lifetimes: Lifetimes, timer: Clock) -> None:
        self._ttl_ms = ttl_ms
        self._lifetimes = lifetimes
        self._lock = threading.Lock()
        self._cache = _CountingTLRU(maxsize, self._time_to_use, timer)

    def _time_to_use(self, _uri: str, entry: MetaEntry, now: int) -> int:
        return min(now + self._ttl_ms, self._lifetimes.expires_at(entry))

    def get(self, uri: str) -> MetaEntry | None:
        with self._lock:
            return self._cache.get(uri)

    def put(self, uri: str, entry: MetaEntry) -> None:
        """Store ``entry``; one that is already past its life is not stored (and replaces none
        the caller could still see: the old entry for ``uri`` is dropped)."""
        with self._lock:
            self._cache[uri] = entry

    def pop(self, uri: str) -> MetaEntry | None:
        with self._lock:
            return self._cache.pop(uri, None)

    def pop_under(self, prefix: str) -> list[tuple[str, MetaEntry]]:
        """Drop and return every entry at or under ``prefix`` (segment boundary).

        Scans every key: O(entries), meant for explicit invalidations, not the read path.
        """
        with self._lock:
            doomed = [uri for uri in self._cache if uris.is_under(uri, prefix)]
            popped = [(uri, self._cache.pop(uri, None)) for uri in doomed]
            # An entry can expire between the scan and its pop (a real clock moves).
            return [(uri, entry) for uri, entry in popped if entry is not None]

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)

    @property
    def evictions(self) -> int:
        """Entries dropped because the cache was full."""
        return self._cache.evictions

    @property
    def expirations(self) -> int:
        """Entries dropped because their time was up."""
        return self._cache.expirations


@dataclass(frozen=True, slots=True)
class Listing:
    """A directory's children as the UFS listed them at ``loaded_at`` (epoch ms), with each
    child's version by URI (to tell in O(1) whether a child's new state makes it stale)."""

    children: tuple[UfsStatus, ...]
    loaded_at: int
    versions: dict[str, str]

    @classmethod
    def of(cls, children: Iterable[UfsStatus], loaded_at: int) -> Listing:
        kept = tuple(children)
        return cls(kept, loaded_at, {child.uri: child.version for child in kept})


class ListingCache:
    """Directory listings by canonical URI: at most ``maxsize`` directories, LRU, each kept for
    ``ttl_ms`` after it was stored.

    Thread-safe: one internal lock, held only inside each method (a leaf in any lock order).
    """

    def __init__(self, maxsize: int, ttl_ms: int, timer: Clock) -> None:
        self._lock = threading.Lock()
        self._cache: TTLCache[str, Listing, int] = TTLCache(maxsize, ttl_ms, timer)

    def get(self, uri: str) -> Listing | None:
        with self._lock:
            return self._cache.get(uri)

    def put(self, uri: str, listing: Listing) -> None:
        with self._lock:
            self._cache[uri] = listing

    def pop(self, uri: str) -> Listing | None:
        with self._lock:
            return self._cache.pop(uri, None)

    def pop_under(self, prefix: str) -> int:
        """Drop every listing at or under ``prefix``; how many were dropped."""
        with self._lock:
            doomed = [uri for uri in self._cache if uris.is_under(uri, prefix)]
            return sum(self._cache.pop(uri, None) is not None for uri in doomed)

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)
