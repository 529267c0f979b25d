"""Keeping slow loads from overwriting newer state.

A load reads the metastore or calls the UFS without holding the manager's lock. If a write or an
invalidation for the same URI lands meanwhile, the load's answer is older than what the cache
now holds, and storing it would undo the write or resurrect the invalidated entry. The fence
tells the load so.
"""

from __future__ import annotations

from collections import Counter

from ufs import uri as uris


class MutationFence:
    """Mutation sequence numbers, remembered per URI (and per prefix) only while a load that
    began before them is still running, so memory stays bounded by the mutations made during
    loads.

    Not thread-safe: the manager calls every method under its own lock.
    """

    def __init__(self) -> None:
        self._seq = 0
        self._running: Counter[int] = Counter()
        self._marks: dict[str, int] = {}
        self._prefix_marks: list[tuple[str, int]] = []

    def begin(self) -> int:
        """Start a load; the token to pass to :meth:`is_stale` and :meth:`end`."""
        self._running[self._seq] += 1
        return self._seq

    def end(self, token: int) -> None:
        """Finish the load started with ``token``; forget marks no running load can need."""
        self._running[token] -= 1
        if self._running[token] > 0:
            return
        del self._running[token]
        if not self._running:
            self._marks.clear()
            self._prefix_marks.clear()
            return
        oldest = min(self._running)
        if oldest < token:
            return  # the oldest running load is unchanged: every mark may still be needed
        if self._marks:
            self._marks = {uri: seq for uri, seq in self._marks.items() if seq > oldest}
        self._prefix_marks = [(p, seq) for p, seq in self._prefix_marks if seq > oldest]

    def mark(self, uri: str) -> None:
        """Record a mutation of ``uri``."""
        self._seq += 1
        if self._running:
            self._marks[uri] = self._seq

    def mark_under(self, prefix: str) -> None:
        """Record a mutation of everything at or under ``prefix``."""
        self._seq += 1
        if self._running:
            self._prefix_marks.append((prefix, self._seq))

    def __len__(self) -> int:
        """How many marks are remembered (bounded by the mutations made during loads)."""
        return len(self._marks) + len(self._prefix_marks)

    def is_stale(self, uri: str, token: int) -> bool:
        """Whether ``uri`` was mutated after the load holding ``token`` began."""
        if self._marks.get(uri, -1) > token:
            return True
        return any(seq > token and uris.is_under(uri, p) for p, seq in self._prefix_marks)
