"""Named event counters for metrics."""

from __future__ import annotations

import threading
from collections import Counter


class MetaCounters:
    """Monotonic counters by name. Thread-safe: one lock, a leaf in every lock order."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter(dict.fromkeys(names, 0))

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[name] += amount

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)
