"""The metadata facade the worker's read and write paths call (DESIGN.md, "Metadata semantics").

Lookups go memory, then the metastore (a hit there is promoted to memory), then the UFS. A
cached entry is re-checked against the UFS when the sync interval says so, or when the caller
asks for a version the cache does not hold. Whenever a file's cached version goes away (a sync
finds another version or no file, a write replaces it, an invalidation drops it) the listeners
hear ``(uri, version)`` so the page store can evict that version's pages.

Negative entries (the path does not exist) live in both tiers, like statuses, for
``dora.worker.ufs.negative.cache.ttl`` from their ``loaded_at``; with that TTL at 0 none are kept.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Protocol

from config import Config
from pagestore.flight import SingleFlight
from ufs import uri as uris
from ufs.errors import UfsNotFound
from ufs.status import UfsStatus
from worker.meta.counters import Counters
from worker.meta.entry import MetaEntry, Operation, needs_sync, wall_clock_ms
from worker.meta.errors import MetastoreError, VersionMismatch
from worker.meta.fence import MutationFence
from worker.meta.listeners import Listener, Listeners
from worker.meta.memory import Listing, ListingCache, StatusCache
from worker.meta.metastore import Metastore
from worker.meta.options import CacheOptions, MetastoreOptions
from worker.meta.rocks import RocksMetastore

log = logging.getLogger(__name__)

_Gone = tuple[str, str]  # (uri, version) whose pages must go
SyncListener = Callable[[str, UfsStatus | None], None]

_CANONICAL_CACHE = 65536
_COUNTERS = (
    "memory_hits",
    "metastore_hits",
    "misses",
    "metastore_read_errors",
    "syncs",
    "syncs_changed",
    "ufs_calls",
    "listing_hits",
    "listing_misses",
    "writes",
    "invalidations",
)


class StatusSource(Protocol):
    """What the manager needs of the UFS (``ufs.adapter.Ufs`` provides it)."""

    def status(self, uri: str) -> UfsStatus: ...

    def list(self, uri: str) -> list[UfsStatus]: ...


class MetadataManager:
    """Tiered, synced metadata for canonical UFS URIs.

    Thread-safe. Lock order: ``_lock`` (guards consistency across the tiers and the fence)
    before the memory caches' own locks, before the metastore's locks. No lock is held while the
    UFS is called or while listeners run; concurrent misses for one URI share one UFS call
    (single flight), and the fence keeps a slow UFS answer from overwriting a newer write. An
    entry the memory tier evicts stays readable from the metastore's write buffers until its
    batch is committed.
    """

    def __init__(
        self,
        options: CacheOptions,
        metastore: Metastore,
        ufs: StatusSource,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self._options = options
        self._store = metastore
        self._ufs = ufs
        self._clock = clock or wall_clock_ms
        self._lock = threading.Lock()
        self._statuses = StatusCache(
            options.status_cache_size, options.status_ttl_ms, metastore.lifetimes, self._clock
        )
        self._listings = ListingCache(options.list_cache_dirs, options.list_ttl_ms, self._clock)
        self._fence = MutationFence()
        self._status_flights: SingleFlight[str, MetaEntry] = SingleFlight()
        self._list_flights: SingleFlight[str, tuple[UfsStatus, ...]] = SingleFlight()
        self._listeners = Listeners()
        self._sync_listeners: tuple[SyncListener, ...] = ()
        # Entries and listings loaded before this (epoch ms) are re-checked once whatever the
        # sync interval: the cluster feed lost events it cannot replay.
        self._fresh_after = 0
        self._counters = Counters(_COUNTERS)
        # Canonicalizing costs microseconds (percent-decoding rounds, segment checks), more than
        # a memory hit: remember recent answers. Errors are not cached, so a bad URI always
        # raises. lru_cache is thread-safe.
        self._canonical = functools.lru_cache(maxsize=_CANONICAL_CACHE)(uris.normalize)

    @classmethod
    def from_config(
        cls, config: Config, ufs: StatusSource, clock: Callable[[], int] | None = None
    ) -> MetadataManager:
        """A manager over a RocksDB metastore opened (or recovered) as the config says."""
        clock = clock or wall_clock_ms
        store = RocksMetastore.open(MetastoreOptions.from_config(config), clock)
        return cls(CacheOptions.from_config(config), store, ufs, clock)

    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(uri, version)`` whenever version ``version`` of file ``uri`` is gone."""
        self._listeners.add(fn)

    def add_sync_listener(self, fn: SyncListener) -> None:
        """Call ``fn(uri, status)`` when a sync with the UFS found a cached file changed:
        ``status`` is the new one, None if the file is gone. Runs on the syncing thread after
        the cache holds the new state; an exception from ``fn`` reaches the caller."""
        with self._lock:
            self._sync_listeners = (*self._sync_listeners, fn)

    def require_sync_before(self, epoch_ms: int) -> None:
        """Re-check with the UFS, once, every status and listing loaded before ``epoch_ms``,
        whatever the sync interval (a re-check that finds the same version keeps the pages)."""
        with self._lock:
            self._fresh_after = max(self._fresh_after, epoch_ms)

    def load_marker(self, name: str) -> bytes | None:
        """A marker kept in the metastore (see :meth:`Metastore.load_marker`)."""
        return self._store.load_marker(name)

    def save_marker(self, name: str, value: bytes) -> None:
        """Store a marker after every metadata change made so far is durable."""
        self._store.save_marker(name, value)

    # -- reads ---------------------------------------------------------------------------------

    def get_status(
        self, uri: str, sync_interval: int | None = None, version: str | None = None
    ) -> UfsStatus:
        """The status of ``uri``, re-checked against the UFS as ``sync_interval`` (ms; -1 never,
        0 always; None: the configured default) or ``version`` require.

        Raises UfsNotFound (also for a cached negative entry), VersionMismatch if ``version``
        is given and the UFS has another one even after a sync, other UfsErrors from the UFS.
        """
        uri = self._canonical(uri)
        interval = self._interval(sync_interval)
        entry = self._lookup(uri)
        if entry is not None and self._usable(entry, interval, version):
            return _answer(uri, entry, version)
        if entry is not None:
            self._counters.add("syncs")
        synced = self._status_flights.run(uri, lambda: self._load(uri))
        if entry is not None and synced.version != entry.version:
            self._counters.add("syncs_changed")
        return _answer(uri, synced, version)

    def list_status(self, uri: str, sync_interval: int | None = None) -> list[UfsStatus]:
        """The children of directory ``uri`` with their statuses; the listing is cached and
        fills the status cache. Recursive listings are not offered, so never cached.

        Raises UfsNotFound, UfsNotADirectory, other UfsErrors from the UFS.
        """
        uri = self._canonical(uri)
        interval = self._interval(sync_interval)
        listing = self._listings.get(uri)
        if (
            listing is not None
            and listing.loaded_at >= self._fresh_after
            and not needs_sync(listing.loaded_at, interval, self._clock())
        ):
            self._counters.add("listing_hits")
            return list(listing.children)
        self._counters.add("listing_misses" if listing is None else "syncs")
        children = self._list_flights.run(uri, lambda: self._relist(uri))
        if listing is not None and Listing.of(children, 0).versions != listing.versions:
            self._counters.add("syncs_changed")
        return list(children)

    def _interval(self, sync_interval: int | None) -> int:
        interval = self._options.sync_interval_ms if sync_interval is None else sync_interval
        if interval < -1:
            raise ValueError(f"sync interval {interval} is invalid: expected -1, 0 or more")
        return interval

    def _usable(self, entry: MetaEntry, interval: int, version: str | None) -> bool:
        if version is not None:
            # The caller knows what it wants: the cached entry is right iff it names that.
            return entry.version == version
        if entry.loaded_at < self._fresh_after:
            return False
        return not needs_sync(entry.loaded_at, interval, self._clock())

    def _lookup(self, uri: str) -> MetaEntry | None:
        entry = self._statuses.get(uri)
        if entry is not None:
            self._counters.add("memory_hits")
            return entry
        with self._lock:
            token = self._fence.begin()
        try:
            entry = self._read_store(uri)
            with self._lock:
                # A write or load that landed during the read is newer than what was read.
                if entry is not None and not self._fence.is_stale(uri, token):
                    self._statuses.put(uri, entry)
                else:
                    entry = None
        finally:
            with self._lock:
                self._fence.end(token)
        self._counters.add("metastore_hits" if entry is not None else "misses")
        return entry

    def _read_store(self, uri: str) -> MetaEntry | None:
        """The one place a metastore read failure becomes a miss."""
        try:
            return self._store.get(uri)
        except MetastoreError as exc:
            log.warning("metastore read of %r failed, treating it as a miss: %s", uri, exc)
            self._counters.add("metastore_read_errors")
            return None

    def _peek_old(self, uri: str) -> MetaEntry | None:
        entry = self._statuses.get(uri)
        if entry is not None:
            return entry
        try:
            return self._store.peek(uri)
        except MetastoreError as exc:
            log.warning("metastore read of %r failed; its old version is unknown: %s", uri, exc)
            self._counters.add("metastore_read_errors")
            return None

    def _load(self, uri: str) -> MetaEntry:
        """One UFS status call for ``uri``, its answer stored (unless a write overtook it)."""
        with self._lock:
            token = self._fence.begin()
        try:
            self._counters.add("ufs_calls")
            try:
                status: UfsStatus | None = self._ufs.status(uri)
            except UfsNotFound:
                status = None
            entry = MetaEntry(status, self._clock(), Operation.LOADED)
            with self._lock:
                gone = self._settle(uri, entry, token)
        finally:
            with self._lock:
                self._fence.end(token)
        self._listeners.notify(gone)
        self._notify_synced(gone, {uri: entry.status})
        return entry

    def _relist(self, uri: str) -> tuple[UfsStatus, ...]:
        with self._lock:
            token = self._fence.begin()
        missing: UfsNotFound | None = None
        children: list[UfsStatus] = []
        try:
            self._counters.add("ufs_calls")
            try:
                children = self._ufs.list(uri)
            except UfsNotFound as exc:
                missing = exc
            with self._lock:
                if missing is None:
                    gone = self._settle_listing(uri, children, token)
                else:
                    gone = self._settle_vanished_dir(uri, token)
        finally:
            with self._lock:
                self._fence.end(token)
        self._listeners.notify(gone)
        found: dict[str, UfsStatus | None] = {child.uri: child for child in children}
        self._notify_synced(gone, found)
        if missing is not None:
            raise missing
        return tuple(children)

    def _notify_synced(self, gone: list[_Gone], found: dict[str, UfsStatus | None]) -> None:
        for uri in dict.fromkeys(u for u, _ in gone):
            for fn in self._sync_listeners:
                fn(uri, found.get(uri))

    # -- writes and invalidation ----------------------------------------------------------------

    def record_write(self, uri: str, status: UfsStatus | None, op: Operation) -> None:
        """Record a mutation the worker made on the UFS (read-your-writes).

        ``status`` is the new status, None exactly when ``op`` is DELETED (a negative entry is
        stored). The old version's pages go (listeners), the parent's listing is dropped; a
        directory written, or a delete of anything not known to be a file, also drops every
        entry under it. Raises ValueError if ``status`` and ``op`` disagree or ``status`` names
        another URI.
        """
        uri = self._canonical(uri)
        _check_write(uri, status, op)
        entry = MetaEntry(status, self._clock(), op)
        with self._lock:
            gone: list[_Gone] = []
            if (status is not None and status.is_dir) or (
                status is None and not self._known_file(uri)
            ):
                gone, _ = self._drop(uri, recursive=True)
            parent = uris.parent(uri)
            if parent is not None:
                self._fence.mark(parent)
                self._listings.pop(parent)
            if status is not None:
                self._forget_missing_ancestors(uri)
            gone += self._settle(uri, entry, token=None)
        self._counters.add("writes")
        self._listeners.notify(gone)

    def invalidate(self, uri: str, recursive: bool = False) -> int:
        """Drop ``uri``'s status and listing (with ``recursive``, everything under it too) from
        both tiers, and the parent's listing; listeners hear of every file version dropped.
        Returns how many URIs' statuses were dropped."""
        uri = self._canonical(uri)
        with self._lock:
            gone, dropped = self._drop(uri, recursive)
        self._counters.add("invalidations", dropped)
        self._listeners.notify(gone)
        return dropped

    def _forget_missing_ancestors(self, uri: str) -> None:
        """A path now exists, so its directories do: drop cached "not found" answers for them
        (``isdir(d)``, write ``d/x``, ``isdir(d)`` must see ``d``). Caller holds ``_lock``."""
        ancestor = uris.parent(uri)
        while ancestor is not None:
            entry = self._peek_old(ancestor)
            if entry is not None and entry.status is None:
                self._fence.mark(ancestor)
                self._statuses.pop(ancestor)
                self._store.pop(ancestor)
            ancestor = uris.parent(ancestor)

    def _known_file(self, uri: str) -> bool:
        entry = self._peek_old(uri)
        return entry is not None and entry.status is not None and not entry.status.is_dir

    def _drop(self, uri: str, recursive: bool) -> tuple[list[_Gone], int]:
        """Remove ``uri`` (and with ``recursive`` its descendants) from every tier. Caller
        holds ``_lock``."""
        if recursive:
            self._fence.mark_under(uri)
            removed = self._statuses.pop_under(uri) + self._store.pop_under(uri)
            self._listings.pop_under(uri)
        else:
            self._fence.mark(uri)
            found = (self._statuses.pop(uri), self._store.pop(uri))
            removed = [(uri, entry) for entry in found if entry is not None]
            self._listings.pop(uri)
        parent = uris.parent(uri)
        if parent is not None:
            self._fence.mark(parent)
            self._listings.pop(parent)
        gone = {
            (u, e.status.version)
            for u, e in removed
            if e.status is not None and not e.status.is_dir
        }
        return sorted(gone), len({u for u, _ in removed})

    # -- storing new state ----------------------------------------------------------------------

    def _settle(self, uri: str, entry: MetaEntry, token: int | None) -> list[_Gone]:
        """Make ``entry`` the state of ``uri`` in both tiers, unless it comes from a load
        (``token``) that a mutation overtook. Returns the file version that went away, if any.
        Caller holds ``_lock``."""
        if token is not None and self._fence.is_stale(uri, token):
            return []
        self._fence.mark(uri)
        old = self._peek_old(uri)
        old_file = None if old is None or old.status is None or old.status.is_dir else old.status
        gone = (
            []
            if old_file is None or old_file.version == entry.version
            else [(uri, old_file.version)]
        )
        parent = uris.parent(uri)
        listing = None if parent is None else self._listings.get(parent)
        if (
            parent is not None
            and listing is not None
            and listing.versions.get(uri) != entry.version
        ):
            self._listings.pop(parent)
        if entry.status is None:
            self._listings.pop(uri)
            if self._store.lifetimes.negative_ttl_ms == 0:
                self._statuses.pop(uri)
                self._store.pop(uri)
                return gone
        self._statuses.put(uri, entry)
        self._store.put(uri, entry)
        return gone

    def _settle_listing(self, uri: str, children: list[UfsStatus], token: int) -> list[_Gone]:
        """Store a fresh listing and its children's statuses; children the previous listing had
        and this one lacks are gone. Caller holds ``_lock``."""
        now = self._clock()
        previous = self._listings.get(uri)
        gone: list[_Gone] = []
        for child in children:
            gone += self._settle(child.uri, MetaEntry(child, now, Operation.LOADED), token)
        if previous is not None:
            present = {child.uri for child in children}
            for old in previous.children:
                if old.uri not in present:
                    negative = MetaEntry(None, now, Operation.LOADED)
                    gone += self._settle(old.uri, negative, token)
        if not self._fence.is_stale(uri, token):
            self._listings.put(uri, Listing.of(children, now))
        return gone

    def _settle_vanished_dir(self, uri: str, token: int) -> list[_Gone]:
        """The directory being listed does not exist: nothing under it does either."""
        if self._fence.is_stale(uri, token):
            return []
        gone, _ = self._drop(uri, recursive=True)
        return gone + self._settle(uri, MetaEntry(None, self._clock(), Operation.LOADED), None)

    # -- metrics and lifecycle ------------------------------------------------------------------

    def counters(self) -> dict[str, int]:
        """Event counts since start: hits per tier, misses, UFS calls, syncs (and those that
        found a change), invalidations, memory evictions and expirations, flights merged, and
        the metastore's flush counters."""
        counts = self._counters.snapshot()
        counts["evictions"] = self._statuses.evictions
        counts["expirations"] = self._statuses.expirations
        counts["flights_merged"] = self._status_flights.merged + self._list_flights.merged
        counts.update(self._store.stats())
        return counts

    def close(self) -> None:
        """Commit pending metastore writes and close it. Raises MetastoreError if that fails."""
        self._store.close()


def _answer(uri: str, entry: MetaEntry, version: str | None) -> UfsStatus:
    if entry.status is None:
        raise UfsNotFound(f"{uri!r} does not exist")
    if version is not None and entry.status.version != version:
        raise VersionMismatch(uri, version, entry.status.version)
    return entry.status


def _check_write(uri: str, status: UfsStatus | None, op: Operation) -> None:
    if (status is None) != (op is Operation.DELETED):
        raise ValueError(f"record_write({uri!r}): a status is required exactly unless DELETED")
    if status is not None and uris.normalize(status.uri) != uri:
        raise ValueError(f"record_write({uri!r}): the status names {status.uri!r}")
