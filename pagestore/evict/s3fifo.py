"""S3-FIFO (Yang et al., SOSP 2023): a small FIFO that filters one-hit pages, a main FIFO with a
two-bit use count, and a ghost FIFO of ids recently filtered out.

A new page enters the small queue. When room is needed, a page at the head of the small queue
that was read since it entered moves to the main queue; one that was not is the victim, and its id
is remembered in the ghost queue. A page whose id is still in the ghost queue when it is stored
again goes straight to the main queue: it was read twice within about a cache's worth of
traffic. A page at the head of the main queue with a use count above zero goes back to its tail
with the count lowered by one (CLOCK); one with a count of zero is the victim.

So a one-pass scan only ever cycles through the small queue and leaves the main queue (the hot
set) alone, and a new hot set read a second time comes back through the ghost queue.

The policy does not know the store's capacity; it only sees ids. Its sizes are shares of what it
tracks, which is the capacity in pages once the store is full (the only time it is asked for a
victim): the small queue is kept at a twentieth of the tracked pages, the ghost queue at as many ids
as are tracked.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic

from pagestore.evict.base import K

SMALL_SHARE = 0.05
"""The small queue's share of the tracked pages: half the paper's 10%, by measurement
(``bench/experiments/evict_bench.py``, bench/RESULTS.md "Eviction policies, tuned"): on a Zipf
trace with periodic scans it gains 0.2-0.3 points at every scan rate, and still keeps a hot set
through a scan and caches a new one read three times."""

MAX_USES = 3
"""The use count saturates here: two bits, as in the paper."""


class S3FifoEvictor(Generic[K]):
    """S3-FIFO over three ordered dicts (the queues keep each page's use count). Every call is
    O(1), :meth:`evict` amortized: each page it moves from the small to the main queue, or back
    to the tail of the main queue, was paid for by the store or read that put it there or raised
    its count. Not thread-safe (see Evictor).
    """

    def __init__(self) -> None:
        self._small: OrderedDict[K, int] = OrderedDict()
        self._main: OrderedDict[K, int] = OrderedDict()
        self._ghost: OrderedDict[K, None] = OrderedDict()
        # The small queue's head last named by evict(): if it is deleted next, it was evicted
        # unread, and its id goes to the ghost queue (a page dropped for any other reason does
        # not, so invalidating a file does not promote it when it is read again).
        self._named: K | None = None

    def on_put(self, key: K) -> None:
        if key in self._small or key in self._main:
            self.on_get(key)
        elif self._ghost.pop(key, False) is None:  # evicted unread lately: read twice after all
            self._main[key] = 0
        else:
            self._small[key] = 0

    def on_get(self, key: K) -> None:
        queue = self._main if key in self._main else self._small
        uses = queue.get(key)
        if uses is not None and uses < MAX_USES:
            queue[key] = uses + 1
        if key == self._named:
            self._named = None  # read after all: the next evict() moves it to the main queue

    def on_delete(self, key: K) -> None:
        if self._small.pop(key, None) is None:
            self._main.pop(key, None)
        elif key == self._named:
            self._ghost[key] = None
            # As many ids as pages once the page this one makes room for is stored.
            while len(self._ghost) > len(self) + 1:
                self._ghost.popitem(last=False)
        if key == self._named:
            self._named = None

    def evict(self) -> K | None:
        small, main = self._small, self._main
        while small or main:
            if small and (not main or len(small) >= SMALL_SHARE * len(self)):
                key, uses = next(iter(small.items()))
                if uses == 0:
                    self._named = key
                    return key
                del small[key]
                main[key] = 0
            else:
                key, uses = next(iter(main.items()))
                if uses == 0:
                    return key
                main[key] = uses - 1
                main.move_to_end(key)
        return None

    def __len__(self) -> int:
        return len(self._small) + len(self._main)
