"""The persistent tier's interface, and an in-memory implementation of it for tests.

The real one is :class:`worker.meta.rocks.RocksMetastore`; both pass the same contract tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from ufs import uri as uris
from worker.meta.entry import Lifetimes, MetaEntry


class Metastore(Protocol):
    """Entries by canonical URI that outlive the process (for the real implementation).

    Every read checks expiry under :attr:`lifetimes` itself, because the store's own cleanup
    (RocksDB's TTL compaction) may run much later. Implementations are thread-safe.
    """

    @property
    def lifetimes(self) -> Lifetimes:
        """How long entries live, from their ``loaded_at``."""
        ...

    def get(self, uri: str) -> MetaEntry | None:
        """The entry for ``uri``, or None if there is none or it has expired.

        Raises CorruptEntry if the stored value cannot be decoded, MetastoreError if the store
        fails.
        """
        ...

    def peek(self, uri: str) -> MetaEntry | None:
        """Like :meth:`get` but also returns an expired entry (to learn an old version)."""
        ...

    def put(self, uri: str, entry: MetaEntry) -> None:
        """Store ``entry``; visible to reads at once, durable once its batch is committed."""
        ...

    def pop(self, uri: str) -> MetaEntry | None:
        """Remove ``uri``'s entry; return it (even if expired), None if there was none or it
        could not be decoded."""
        ...

    def pop_under(self, prefix: str) -> list[tuple[str, MetaEntry]]:
        """Remove every entry at or under ``prefix`` (segment boundary) and return them; entries
        that cannot be decoded are removed and not returned."""
        ...

    def flush(self) -> None:
        """Make every write made so far durable before returning."""
        ...

    def close(self) -> None:
        """Flush and release the store; it must not be used afterwards."""
        ...

    def stats(self) -> dict[str, int]:
        """Counters for metrics (flushes, flush errors, pending entries)."""
        ...

    def load_marker(self, name: str) -> bytes | None:
        """A small value another component keeps here (the cluster's feed position), or None.
        Marker keys can never collide with a URI. Raises MetastoreError if the store fails."""
        ...

    def save_marker(self, name: str, value: bytes) -> None:
        """Store a marker durably, after every write made before it is durable (so a marker
        never claims more than the entries show). Raises MetastoreError if the store fails."""
        ...


class MemoryMetastore:
    """A :class:`Metastore` in a dict: nothing survives the process. For tests and for a worker
    run without a disk tier. Thread-safe: one lock, held only inside each method."""

    def __init__(self, lifetimes: Lifetimes, clock: Callable[[], int]) -> None:
        self._lifetimes = lifetimes
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, MetaEntry] = {}
        self._markers: dict[str, bytes] = {}

    @property
    def lifetimes(self) -> Lifetimes:
        return self._lifetimes

    def get(self, uri: str) -> MetaEntry | None:
        entry = self.peek(uri)
        if entry is None or self._lifetimes.expired(entry, self._clock()):
            return None
        return entry

    def peek(self, uri: str) -> MetaEntry | None:
        with self._lock:
            return self._entries.get(uri)

    def put(self, uri: str, entry: MetaEntry) -> None:
        with self._lock:
            self._entries[uri] = entry

    def pop(self, uri: str) -> MetaEntry | None:
        with self._lock:
            return self._entries.pop(uri, None)

    def pop_under(self, prefix: str) -> list[tuple[str, MetaEntry]]:
        with self._lock:
            doomed = [uri for uri in self._entries if uris.is_under(uri, prefix)]
            return [(uri, self._entries.pop(uri)) for uri in doomed]

    def flush(self) -> None:
        """Nothing to do: every write is already as durable as this store gets."""

    def close(self) -> None:
        with self._lock:
            self._entries.clear()

    def stats(self) -> dict[str, int]:
        return {"metastore_pending": 0, "metastore_flushes": 0, "metastore_flush_errors": 0}

    def load_marker(self, name: str) -> bytes | None:
        with self._lock:
            return self._markers.get(name)

    def save_marker(self, name: str, value: bytes) -> None:
        with self._lock:
            self._markers[name] = value
