"""Worker selection: a consistent hash ring keyed by a file's full URI.

Every point on the ring is the first 8 bytes of a SHA-256 (never Python's ``hash()``, which is
salted per process), so every process on every host maps a URI to the same worker. Each worker
owns ``virtual_nodes`` points, which evens out the spread; removing a worker only moves the keys
it owned.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable


def ring_hash(text: str) -> int:
    """The ring position of ``text``: the first 8 bytes of its SHA-256, big-endian."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


class HashRing:
    """Maps a key to an ordered list of distinct workers: its owner first, then the workers a
    caller should fail over to, in ring order.

    Immutable after construction, so thread-safe.
    """

    def __init__(self, workers: Iterable[str], virtual_nodes: int) -> None:
        if virtual_nodes < 1:
            raise ValueError(f"virtual_nodes must be at least 1, got {virtual_nodes}")
        self.workers: tuple[str, ...] = tuple(dict.fromkeys(workers))
        if not self.workers:
            raise ValueError("a hash ring needs at least one worker")
        self.virtual_nodes = virtual_nodes
        # Ties between equal positions (astronomically rare) are broken by the worker's name,
        # so the order is still the same everywhere.
        points = sorted(
            (ring_hash(f"{worker}#{index}"), worker)
            for worker in self.workers
            for index in range(virtual_nodes)
        )
        self._positions = [position for position, _ in points]
        self._owners = [worker for _, worker in points]

    def owners(self, key: str) -> list[str]:
        """Every worker once, starting with the owner of ``key`` and going clockwise."""
        start = bisect.bisect_right(self._positions, ring_hash(key))
        found: dict[str, None] = {}
        size = len(self._owners)
        for step in range(size):
            found.setdefault(self._owners[(start + step) % size], None)
            if len(found) == len(self.workers):
                break
        return list(found)

    def owner(self, key: str) -> str:
        """The worker that owns ``key``."""
        return self._owners[
            bisect.bisect_right(self._positions, ring_hash(key)) % len(self._owners)
        ]
