"""Noticing eviction storms: many pages evicted in a short window means the data read through
the cache does not fit it. A line per eviction would flood the log and the eviction counter
alone is seen only by whoever graphs it, so a storm gets one rate-limited warning with counts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Storm:
    """A storm to report: ``pages`` evicted in the current window, ``seconds`` into it, and
    ``since_last`` evicted since the previous report (or since the start)."""

    pages: int
    seconds: float
    since_last: int


class StormWatch:
    """Counts evictions in fixed windows of ``window`` seconds; a window reaching ``threshold``
    pages is a storm, reported at most once every ``quiet`` seconds.

    Thread-safe: its own lock is a leaf, so callers may hold theirs (they should log outside).
    """

    def __init__(
        self,
        threshold: int,
        window: float = 10.0,
        quiet: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.threshold = threshold
        self._window = window
        self._quiet = quiet
        self._clock = clock
        self._lock = threading.Lock()
        self._window_start = clock()
        self._in_window = 0
        self._since_last = 0
        self._reported_at: float | None = None

    def record(self, pages: int) -> Storm | None:
        """Count ``pages`` evictions; the storm to report now, if any."""
        now = self._clock()
        with self._lock:
            if now - self._window_start >= self._window:
                self._window_start, self._in_window = now, 0
            self._in_window += pages
            self._since_last += pages
            if self._in_window < self.threshold:
                return None
            if self._reported_at is not None and now - self._reported_at < self._quiet:
                return None
            storm = Storm(self._in_window, now - self._window_start, self._since_last)
            self._reported_at, self._since_last = now, 0
            return storm
