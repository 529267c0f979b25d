"""The memory second-read admission needs: which pages were read lately, bounded.

A read under an ``admission=second-read`` rule stores its pages only when each of them was
read before within the rule's window; otherwise it is served through and its pages are
remembered. One-pass scans therefore never fill the cache, and what is read again does.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from pagestore.page import PageId

REMEMBERED = 1 << 17
"""Pages remembered at most (about 100 bytes each): at 1 MB pages, 128 GB read once."""


class FirstReads:
    """Pages read once and when (monotonic ms), the oldest forgotten first beyond ``limit``.

    Thread-safe: one lock around every call; ``clock`` (ms) is injectable for tests."""

    def __init__(
        self,
        limit: int = REMEMBERED,
        clock: Callable[[], float] = lambda: time.monotonic() * 1000,
    ) -> None:
        self._limit = limit
        self._clock = clock
        self._seen: OrderedDict[PageId, float] = OrderedDict()
        self._lock = threading.Lock()

    def read_again(self, pages: Sequence[PageId], window: int) -> bool:
        """Whether every one of ``pages`` was read before, within ``window`` ms of now. If not,
        the ones not seen within the window are remembered as read now (the others keep the
        time of their first read, so a window is counted from it)."""
        now = self._clock()
        with self._lock:
            fresh = [page for page in pages if now - self._seen.get(page, -window - 1) > window]
            for page in fresh:
                self._seen[page] = now
                self._seen.move_to_end(page)
            while len(self._seen) > self._limit:
                self._seen.popitem(last=False)
        return not fresh

    def __len__(self) -> int:
        with self._lock:
            return len(self._seen)
