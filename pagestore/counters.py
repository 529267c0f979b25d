"""Monotonic counters of what happened to pages, kept by the page cache and by each store."""

from __future__ import annotations

import enum
import threading

from pagestore.api import PutResult


class Count(enum.Enum):
    HITS = "hits"
    MISSES = "misses"
    BYTES_READ = "bytes_read"
    BYTES_WRITTEN = "bytes_written"
    EVICTIONS = "evictions"
    INVALIDATED_PAGES = "invalidated_pages"
    CORRUPT_PAGES = "corrupt_pages"
    IO_ERRORS = "io_errors"


class PageCounters:
    """Monotonic counters. Thread-safe; its lock is a leaf (never held while taking another)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(Count, 0)
        self._puts = dict.fromkeys(PutResult, 0)

    def add(self, count: Count, amount: int = 1) -> None:
        with self._lock:
            self._counts[count] += amount

    def add_hit(self, size: int) -> None:
        with self._lock:
            self._counts[Count.HITS] += 1
            self._counts[Count.BYTES_READ] += size

    def add_put(self, result: PutResult, size: int) -> None:
        with self._lock:
            self._puts[result] += 1
            if result is PutResult.OK:
                self._counts[Count.BYTES_WRITTEN] += size

    def snapshot(self) -> tuple[dict[Count, int], dict[PutResult, int]]:
        with self._lock:
            return dict(self._counts), dict(self._puts)
