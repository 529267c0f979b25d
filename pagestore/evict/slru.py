"""Segmented LRU: a page read again after it was stored moves from the probation segment to the
protected one; victims come from probation first.

A one-pass scan only passes through probation, so pages read twice survive it. A new hot set
larger than probation is a loop over an LRU: each of its pages is evicted before it is read
again, so it never reaches protection (measured in bench/experiments/evict_bench.py).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic

from pagestore.evict.base import K

PROTECTED_SHARE = 0.8
"""The protected segment's largest share of the tracked pages (as in Caffeine's main space)."""


class SlruEvictor(Generic[K]):
    """SLRU over two ordered dicts: O(1) for every call. Not thread-safe (see Evictor)."""

    def __init__(self) -> None:
        self._probation: OrderedDict[K, None] = OrderedDict()
        self._protected: OrderedDict[K, None] = OrderedDict()

    def on_put(self, key: K) -> None:
        if key in self._probation or key in self._protected:
            self.on_get(key)
        else:
            self._probation[key] = None

    def on_get(self, key: K) -> None:
        if key in self._protected:
            self._protected.move_to_end(key)
        elif self._probation.pop(key, False) is None:
            self._protected[key] = None
            if len(self._protected) > PROTECTED_SHARE * len(self):
                demoted, _ = self._protected.popitem(last=False)
                self._probation[demoted] = None

    def on_delete(self, key: K) -> None:
        if self._probation.pop(key, False) is not None:  # not in probation
            self._protected.pop(key, None)

    def evict(self) -> K | None:
        return next(iter(self._probation or self._protected), None)

    def __len__(self) -> int:
        return len(self._probation) + len(self._protected)
