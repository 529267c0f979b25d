"""The memory tier: a status cache and a listing cache, both bounded and expiring on a clock.

Both take the clock as ``timer`` (epoch ms), so tests move time with a fake clock instead of
sleeping.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cachetools import TTLCache

from ufs import uri as uris
from ufs.status import UfsStatus
from worker.meta.entry import Lifetimes, MetaEntry

Clock = Callable[[], int]


class StatusCache:
    """Statuses (and negative entries) by canonical URI: LRU bounded by ``maxsize``.

    An entry leaves memory at the earliest of: ``ttl_ms`` after it entered memory (memory
    residency), or the end of its life under ``lifetimes`` (from ``loaded_at``), so a status
    promoted from the metastore never outlives its persisted TTL.

    Each entry carries its deadline, and an expired one is dropped when it is next looked at,
    when it reaches the least recently used end (every put sweeps expired entries from there)
    or when it is the one a full cache evicts; the bound holds either way. This costs a dict
    operation per call, where cachetools' TLRU keeps a heap and reads the clock several times
    (7x slower: a load job puts and looks up every status it lists).

    Thread-safe: one internal lock, held only inside each method (a leaf in any lock order).
    """

    def __init__(self, maxsize: int, ttl_ms: int, lifetimes: Lifetimes, timer: Clock) -> None:
        self._maxsize = maxsize
        self._ttl_ms = ttl_ms
        self._lifetimes = lifetimes
        self._timer = timer
        self._lock = threading.Lock()
        # uri -> (entry, deadline in epoch ms), least recently used first.
        self._items: OrderedDict[str, tuple[MetaEntry, int]] = OrderedDict()
        self.evictions = 0
        self.expirations = 0

    def get(self, uri: str) -> MetaEntry | None:
        with self._lock:
            return self._get(uri, self._timer())

    def get_many(self, uris: Iterable[str]) -> list[MetaEntry | None]:
        """:meth:`get` of each URI, under one lock and one reading of the clock."""
        with self._lock:
            now = self._timer()
            return [self._get(uri, now) for uri in uris]

    def put(self, uri: str, entry: MetaEntry) -> None:
        """Store ``entry``; one that is already past its life is not stored (and replaces none
        the caller could still see: the old entry for ``uri`` is dropped)."""
        with self._lock:
            self._put(uri, entry, self._timer())

    def put_many(self, items: Iterable[tuple[str, MetaEntry]]) -> None:
        """:meth:`put` of each item, under one lock and one reading of the clock."""
        with self._lock:
            now = self._timer()
            for uri, entry in items:
                self._put(uri, entry, now)

    def pop(self, uri: str) -> MetaEntry | None:
        """Drop ``uri``'s entry; return it, None if there was none or it had expired."""
        with self._lock:
            item = self._items.pop(uri, None)
            return None if item is None or self._timer() >= item[1] else item[0]

    def pop_under(self, prefix: str) -> list[tuple[str, MetaEntry]]:
        """Drop and return every live entry at or under ``prefix`` (segment boundary).

        Scans every key: O(entries), meant for explicit invalidations, not the read path.
        """
        with self._lock:
            now = self._timer()
            doomed = [uri for uri in self._items if uris.is_under(uri, prefix)]
            popped = [(uri, self._items.pop(uri)) for uri in doomed]
            return [(uri, entry) for uri, (entry, deadline) in popped if now < deadline]

    def __len__(self) -> int:
        """Entries held, including expired ones not yet dropped."""
        with self._lock:
            return len(self._items)

    def _get(self, uri: str, now: int) -> MetaEntry | None:
        item = self._items.get(uri)
        if item is None:
            return None
        if now >= item[1]:
            del self._items[uri]
            self.expirations += 1
            return None
        self._items.move_to_end(uri)
        return item[0]

    def _put(self, uri: str, entry: MetaEntry, now: int) -> None:
        deadline = min(now + self._ttl_ms, self._lifetimes.expires_at(entry))
        if now >= deadline:
            self._items.pop(uri, None)
            return
        items = self._items
        items[uri] = (entry, deadline)
        items.move_to_end(uri)
        while items:
            oldest, (_, oldest_deadline) = next(iter(items.items()))
            if now >= oldest_deadline:
                del items[oldest]
                self.expirations += 1
            elif len(items) > self._maxsize:
                del items[oldest]
                self.evictions += 1
            else:
                break


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
