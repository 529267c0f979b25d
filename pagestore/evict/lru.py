"""Least recently used: the page read or written longest ago leaves first."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic

from pagestore.evict.base import K


class LruEvictor(Generic[K]):
    """LRU over an ordered dict: O(1) for every call. Not thread-safe (see Evictor)."""

    def __init__(self) -> None:
        self._order: OrderedDict[K, None] = OrderedDict()

    def on_put(self, key: K) -> None:
        self._order[key] = None
        self._order.move_to_end(key)

    def on_get(self, key: K) -> None:
        if key in self._order:
            self._order.move_to_end(key)

    def on_delete(self, key: K) -> None:
        self._order.pop(key, None)

    def evict(self) -> K | None:
        return next(iter(self._order), None)

    def __len__(self) -> int:
        return len(self._order)
