"""What the client did instead of the plain path: failovers, UFS fallbacks, retries. Counted per
filesystem instance so a degraded run is visible (``DoraFileSystem.fallback_stats()``)."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ClientStats:
    """A snapshot of the counters.

    ``failovers``: calls served by a worker other than the key's owner because a worker before it
    on the ring could not be reached. ``ufs_fallbacks``: calls served by reading the UFS directly
    because no worker could be reached. ``retries``: repeats of an idempotent call after a 503.
    ``missed_invalidations``: cache drops that could not be sent to another worker after a
    mutation (that worker may serve a stale status until its sync interval expires).
    ``unresponsive``: calls a worker took but did not answer in time (a read timeout, or no
    answer to a liveness probe); they went on to the next worker without asking it again.
    ``unreachable``: connection failures per worker.
    """

    failovers: int = 0
    ufs_fallbacks: int = 0
    retries: int = 0
    missed_invalidations: int = 0
    unresponsive: int = 0
    unreachable: dict[str, int] = field(default_factory=dict)


class ClientCounters:
    """Thread-safe counters behind :class:`ClientStats` (one lock, never held during I/O)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._unreachable: Counter[str] = Counter()

    def add(self, name: str, amount: int = 1) -> None:
        """Add to ``failovers``, ``ufs_fallbacks``, ``retries`` or ``missed_invalidations``."""
        if name not in ClientStats.__dataclass_fields__ or name == "unreachable":
            raise ValueError(f"unknown counter {name!r}")
        with self._lock:
            self._counts[name] += amount

    def unreachable(self, worker: str) -> int:
        """Count a connection failure of ``worker``; the worker's new total."""
        with self._lock:
            self._unreachable[worker] += 1
            return self._unreachable[worker]

    def snapshot(self) -> ClientStats:
        with self._lock:
            return ClientStats(
                failovers=self._counts["failovers"],
                ufs_fallbacks=self._counts["ufs_fallbacks"],
                retries=self._counts["retries"],
                missed_invalidations=self._counts["missed_invalidations"],
                unresponsive=self._counts["unresponsive"],
                unreachable=dict(self._unreachable),
            )
