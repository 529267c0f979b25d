"""A worker's metadata (DESIGN.md, "Metadata semantics"): the two sides built over the shared
tiers (:class:`worker.meta.tiers.Tiers`, memory + metastore), and what belongs to the whole.

Callers use the sides themselves: ``reads`` (:class:`worker.meta.reads.MetadataReads`:
lookups, syncs, listings) and ``writes`` (:class:`worker.meta.writes.MetadataWrites`:
mutations, the fence, the listeners). The manager only builds them and keeps what spans both:
the metastore's markers, counters, persistence state and lifecycle.
"""

from __future__ import annotations

from collections.abc import Callable

from config import Config
from worker.meta.entry import wall_clock_ms
from worker.meta.generations import GenerationFile
from worker.meta.metastore import Metastore, PersistenceState
from worker.meta.options import CacheOptions, MetastoreOptions
from worker.meta.reads import MetadataReads, StatusSource
from worker.meta.rocks import RocksMetastore
from worker.meta.tiers import Tiers
from worker.meta.writes import MetadataWrites


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
