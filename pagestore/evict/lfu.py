"""Least frequently used: the page read the fewest times leaves first; among equals, the one
used longest ago (so a burst of new pages does not push out each other at random)."""

from __future__ import annotations

from typing import Generic

from pagestore.evict.base import K


class LfuEvictor(Generic[K]):
    """LFU with frequency buckets: O(1) for every call except :meth:`evict` after the least
    frequent bucket empties, which scans the (few) distinct frequencies once. Counts never
    decay, so pages that were hot long ago stay until newer pages are read as often; prefer
    LRU for shifting workloads. Not thread-safe (see Evictor).
    """

    def __init__(self) -> None:
        self._counts: dict[K, int] = {}
        # Count -> keys with that count, oldest access first (dicts keep insertion order).
        self._buckets: dict[int, dict[K, None]] = {}
        self._least: int | None = None

    def on_put(self, key: K) -> None:
        if key in self._counts:
            self.on_get(key)
            return
        self._counts[key] = 1
        self._buckets.setdefault(1, {})[key] = None
        self._least = 1

    def on_get(self, key: K) -> None:
        count = self._counts.get(key)
        if count is None:
            return
        self._take_from_bucket(key, count)
        self._counts[key] = count + 1
        self._buckets.setdefault(count + 1, {})[key] = None
        if self._least == count and count not in self._buckets:
            self._least = count + 1

    def on_delete(self, key: K) -> None:
        count = self._counts.pop(key, None)
        if count is None:
            return
        self._take_from_bucket(key, count)
        if self._least == count and count not in self._buckets:
            self._least = None

    def evict(self) -> K | None:
        if not self._counts:
            return None
        if self._least is None:
            self._least = min(self._buckets)
        return next(iter(self._buckets[self._least]))

    def __len__(self) -> int:
        return len(self._counts)

    def _take_from_bucket(self, key: K, count: int) -> None:
        bucket = self._buckets[count]
        del bucket[key]
        if not bucket:
            del self._buckets[count]
