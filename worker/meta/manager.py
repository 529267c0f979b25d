"""The metadata facade the worker's read and write paths call (DESIGN.md, "Metadata semantics").

It joins the two sides over the shared tiers (:class:`worker.meta.tiers.Tiers`, memory +
metastore): the read side (:class:`worker.meta.reads.MetadataReads`: lookups, syncs, listings)
and the write side (:class:`worker.meta.writes.MetadataWrites`: mutations, the fence, the
listeners). Callers that need only one side may take it (``reads``, ``writes``); the methods
here are that side's, named as the worker has always called them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from config import Config
from ufs.status import UfsStatus
from worker.meta.entry import Operation, wall_clock_ms
from worker.meta.generations import GenerationFile
from worker.meta.listeners import Listener
from worker.meta.metastore import Metastore, PersistenceState
from worker.meta.options import CacheOptions, MetastoreOptions
from worker.meta.reads import MetadataReads, StatusSource
from worker.meta.rocks import RocksMetastore
from worker.meta.tiers import Tiers
from worker.meta.writes import MetadataWrites, SyncListener

__all__ = ["MetadataManager", "StatusSource", "SyncListener"]


class MetadataManager:
    """Tiered, synced metadata for canonical UFS URIs: one read side and one write side over
    the same tiers.

    Thread-safe, as both sides are (see their docstrings for the lock order: the tiers' lock
    first, never held while the UFS is called, the metastore is read or listeners run).
    """

    def __init__(
        self,
        options: CacheOptions,
        metastore: Metastore,
        ufs: StatusSource,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self._tiers = Tiers(options, metastore, clock or wall_clock_ms)
        self.writes = MetadataWrites(self._tiers)
        self.reads = MetadataReads(self._tiers, self.writes, ufs)

    @classmethod
    def from_config(
        cls, config: Config, ufs: StatusSource, clock: Callable[[], int] | None = None
    ) -> MetadataManager:
        """A manager over a RocksDB metastore opened (or recovered) as the config says."""
        clock = clock or wall_clock_ms
        store = RocksMetastore.open(MetastoreOptions.from_config(config), clock)
        return cls(CacheOptions.from_config(config), store, ufs, clock)

    def count_changes(self, generations: GenerationFile) -> None:
        """Bump ``generations`` whenever a cached status or listing changes or goes, once the
        cache holds the new state (same-host clients' near-caches check them). Call before
        serving."""
        self._tiers.generations = generations

    # -- the read side -------------------------------------------------------------------------

    def get_status(
        self,
        uri: str,
        sync_interval: int | None = None,
        version: str | None = None,
        serve_stale: bool = False,
    ) -> UfsStatus:
        """:meth:`MetadataReads.get_status`."""
        return self.reads.get_status(uri, sync_interval, version, serve_stale)

    def cached_status(
        self,
        uri: str,
        sync_interval: int | None = None,
        version: str | None = None,
        serve_stale: bool = False,
    ) -> UfsStatus | None:
        """:meth:`MetadataReads.cached_status`."""
        return self.reads.cached_status(uri, sync_interval, version, serve_stale)

    def peek(self, uris: Sequence[str]) -> list[UfsStatus | None]:
        """:meth:`MetadataReads.peek`."""
        return self.reads.peek(uris)

    def list_status(self, uri: str, sync_interval: int | None = None) -> list[UfsStatus]:
        """:meth:`MetadataReads.list_status`."""
        return self.reads.list_status(uri, sync_interval)

    def status_age(self, uri: str, version: str) -> int | None:
        """:meth:`MetadataReads.status_age`."""
        return self.reads.status_age(uri, version)

    def listing_age(self, uri: str, children: list[UfsStatus]) -> int | None:
        """:meth:`MetadataReads.listing_age`."""
        return self.reads.listing_age(uri, children)

    # -- the write side ------------------------------------------------------------------------

    def add_listener(self, fn: Listener) -> None:
        """:meth:`MetadataWrites.add_listener`."""
        self.writes.add_listener(fn)

    def add_sync_listener(self, fn: SyncListener) -> None:
        """:meth:`MetadataWrites.add_sync_listener`."""
        self.writes.add_sync_listener(fn)

    def require_sync_before(self, epoch_ms: int) -> None:
        """:meth:`MetadataWrites.require_sync_before`."""
        self.writes.require_sync_before(epoch_ms)

    def record_write(self, uri: str, status: UfsStatus | None, op: Operation) -> None:
        """:meth:`MetadataWrites.record_write`."""
        self.writes.record_write(uri, status, op)

    def invalidate(self, uri: str, recursive: bool = False) -> int:
        """:meth:`MetadataWrites.invalidate`."""
        return self.writes.invalidate(uri, recursive)

    # -- markers, metrics and lifecycle ---------------------------------------------------------

    def load_marker(self, name: str) -> bytes | None:
        """A marker kept in the metastore (see :meth:`Metastore.load_marker`)."""
        return self._tiers.store.load_marker(name)

    def save_marker(self, name: str, value: bytes) -> None:
        """Store a marker after every metadata change made so far is durable."""
        self._tiers.store.save_marker(name, value)

    def counters(self) -> dict[str, int]:
        """Event counts since start: hits per tier, misses, UFS calls, syncs (and those that
        found a change), invalidations, memory evictions and expirations, flights merged, and
        the metastore's flush counters."""
        counts = self._tiers.counts()
        counts["flights_merged"] = self.reads.flights_merged
        return counts

    def entries(self) -> dict[str, int]:
        """How many statuses (negative ones included) and listings the memory tier holds."""
        return {
            "memory_statuses": len(self._tiers.statuses),
            "memory_listings": len(self._tiers.listings),
        }

    def persistence_state(self) -> PersistenceState:
        """Whether the metastore persists what the worker learns: PERSISTING, or MEMORY_ONLY (a
        commit failed; until a restart, lookups are served from memory and the UFS only). For
        readiness probes; thread-safe and cheap."""
        return self._tiers.store.persistence_state()

    def close(self) -> None:
        """Stop the background re-checks, commit pending metastore writes (a failure is
        logged) and close the metastore."""
        self.reads.close()
        self._tiers.store.close()
