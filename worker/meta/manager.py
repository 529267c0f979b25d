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
from collections.abc import Callable, Sequence
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
from worker.meta.generations import GenerationFile
from worker.meta.listeners import Listener, Listeners
from worker.meta.memory import Listing, ListingCache, StatusCache
from worker.meta.metastore import Metastore, PersistenceState
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
    before the memory caches' own locks, before the metastore's locks. ``_lock`` is never held
    while the UFS is called, the metastore is read, or listeners run: what a change replaces is
    read beforehand and used only if the fence shows no mutation of it landed meanwhile (else it
    is read again). Concurrent misses for one URI share one UFS call (single flight), and the
    fence keeps a slow UFS answer from overwriting a newer write. An entry the memory tier
    evicts stays readable from the metastore's write buffers until its batch is committed.
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
        self._generations: GenerationFile | None = None
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

    def count_changes(self, generations: GenerationFile) -> None:
        """Bump ``generations`` whenever a cached status or listing changes or goes, once the
        cache holds the new state (same-host clients' near-caches check them). Call before
        serving."""
        self._generations = generations

    def _bump(self, uri: str) -> None:
        if self._generations is not None:
            self._generations.bump(uri)

    def _bump_all(self) -> None:
        if self._generations is not None:
            self._generations.bump_all()

    def require_sync_before(self, epoch_ms: int) -> None:
        """Re-check with the UFS, once, every status and listing loaded before ``epoch_ms`` (or
        in that millisecond), whatever the sync interval (a re-check that finds the same
        version keeps the pages)."""
        with self._lock:
            self._fresh_after = max(self._fresh_after, epoch_ms)
            self._bump_all()

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

    def cached_status(
        self, uri: str, sync_interval: int | None = None, version: str | None = None
    ) -> UfsStatus | None:
        """:meth:`get_status` from the memory tier alone, for callers on an event loop: the
        same answer (or UfsNotFound for a cached negative entry) when ``uri``'s entry is in
        memory and usable as the arguments require, else None (then ask :meth:`get_status`).
        Never blocks on I/O; counts a hit only when it answers. Raises ValueError for an
        invalid ``sync_interval``."""
        uri = self._canonical(uri)
        interval = self._interval(sync_interval)
        entry = self._statuses.get(uri)
        if entry is None or not self._usable(entry, interval, version):
            return None
        self._counters.add("memory_hits")
        return _answer(uri, entry, version)

    def peek(self, uris: Sequence[str]) -> list[UfsStatus | None]:
        """The memory tier's status of each of ``uris`` (canonical), None where it holds none
        or a negative entry: no I/O, no freshness rule, nothing counted. For showing what the
        worker holds (the console), never for serving."""
        entries = [self._statuses.get(uri) for uri in uris]
        return [None if entry is None else entry.status for entry in entries]

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
            and listing.loaded_at > self._fresh_after
            and not needs_sync(listing.loaded_at, interval, self._clock())
        ):
            self._counters.add("listing_hits")
            return list(listing.children)
        self._counters.add("listing_misses" if listing is None else "syncs")
        children = self._list_flights.run(uri, lambda: self._relist(uri))
        if listing is not None and Listing.of(children, 0).versions != listing.versions:
            self._counters.add("syncs_changed")
        return list(children)

    def status_age(self, uri: str, version: str) -> int | None:
        """Milliseconds since ``uri``'s status of ``version`` was last confirmed with the UFS
        (or written through the worker), from the memory tier; None when it holds no entry of
        that version. A client near-cache counts a positive sync interval from it."""
        entry = self._statuses.get(self._canonical(uri))
        if entry is None or entry.version != version:
            return None
        return max(0, self._clock() - entry.loaded_at)

    def listing_age(self, uri: str, children: list[UfsStatus]) -> int | None:
        """:meth:`status_age` of the listing of ``uri`` that named exactly ``children``."""
        listing = self._listings.get(self._canonical(uri))
        if listing is None or listing.versions != {c.uri: c.version for c in children}:
            return None
        return max(0, self._clock() - listing.loaded_at)

    def _interval(self, sync_interval: int | None) -> int:
        interval = self._options.sync_interval_ms if sync_interval is None else sync_interval
        if interval < -1:
            raise ValueError(f"sync interval {interval} is invalid: expected -1, 0 or more")
        return interval

    def _usable(self, entry: MetaEntry, interval: int, version: str | None) -> bool:
        if version is not None:
            # The caller knows what it wants: the cached entry is right iff it names that.
            return entry.version == version
        # At or before: what was loaded in the gap's own millisecond may predate the change.
        if entry.loaded_at <= self._fresh_after:
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

    def _peek_olds(self, names: list[str]) -> dict[str, MetaEntry | None]:
        """What each URI holds now, expired or not (to learn the version a change replaces).
        Reads the metastore: never called with ``_lock`` held."""
        olds = dict(zip(names, self._statuses.get_many(names), strict=True))
        unknown = [name for name, entry in olds.items() if entry is None]
        if unknown:
            try:
                olds.update(zip(unknown, self._store.peek_many(unknown), strict=True))
            except MetastoreError as exc:
                log.warning("metastore read failed; old versions are unknown: %s", exc)
                self._counters.add("metastore_read_errors")
        return olds

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
            # Read after the load began: if no mutation lands before the lock, it is current.
            olds = self._peek_olds([uri])
            with self._lock:
                gone = self._settle(uri, entry, token, olds[uri])
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
            if missing is None:
                previous = self._listings.get(uri)
                named = [c.uri for c in children] + (
                    [c.uri for c in previous.children] if previous else []
                )
                olds = self._peek_olds(named)
                with self._lock:
                    gone = self._settle_listing(uri, children, previous, olds, token)
            else:
                # The directory being listed does not exist: nothing under it does either.
                gone, _ = self._drop(uri, recursive=True, missing_since=token)
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
        names = [uri, *_ancestors(uri)] if status is not None else [uri]
        gone: list[_Gone] = []
        dropped = False
        while True:
            # The old entries are read without the lock, then used under it only if no mutation
            # of ``uri`` landed meanwhile; otherwise they are read again.
            token, olds = self._read_olds(names)
            try:
                with self._lock:
                    if self._fence.is_stale(uri, token):
                        continue
                    if dropped or not _drops_subtree(status, olds[uri]):
                        gone += self._apply_write(uri, entry, olds, token)
                        break
            finally:
                with self._lock:
                    self._fence.end(token)
            # Not under the lock: dropping a subtree reads the metastore.
            gone += self._drop(uri, recursive=True)[0]
            dropped = True
        self._bump(uri)
        self._counters.add("writes")
        self._listeners.notify(gone)

    def invalidate(self, uri: str, recursive: bool = False) -> int:
        """Drop ``uri``'s status and listing (with ``recursive``, everything under it too) from
        both tiers, and the parent's listing; listeners hear of every file version dropped.
        Returns how many URIs' statuses were dropped."""
        uri = self._canonical(uri)
        gone, dropped = self._drop(uri, recursive)
        self._counters.add("invalidations", dropped)
        self._listeners.notify(gone)
        return dropped

    def _read_olds(self, names: list[str]) -> tuple[int, dict[str, MetaEntry | None]]:
        """A fence token, then what each of ``names`` holds, read without the lock. The caller
        ends the token."""
        with self._lock:
            token = self._fence.begin()
        try:
            return token, self._peek_olds(names)
        except BaseException:
            with self._lock:
                self._fence.end(token)
            raise

    def _apply_write(
        self, uri: str, entry: MetaEntry, olds: dict[str, MetaEntry | None], token: int
    ) -> list[_Gone]:
        """Store a write whose old entries were read under ``token``. Caller holds ``_lock``."""
        if entry.status is not None:
            # Before the parent is marked below, which would make its entry look changed.
            self._forget_missing_ancestors(uri, olds, token)
        parent = uris.parent(uri)
        if parent is not None:
            self._fence.mark(parent)
            self._listings.pop(parent)
        return self._settle(uri, entry, None, olds[uri])

    def _forget_missing_ancestors(
        self, uri: str, olds: dict[str, MetaEntry | None], token: int
    ) -> None:
        """A path now exists, so its directories do: drop cached "not found" answers for them
        (``isdir(d)``, write ``d/x``, ``isdir(d)`` must see ``d``). Caller holds ``_lock``."""
        for ancestor in _ancestors(uri):
            if self._fence.is_stale(ancestor, token):
                # Changed since it was read (a sibling's write marks it, too): memory holds the
                # newest entry if any tier does; without one, drop whatever the metastore has.
                entry = self._statuses.get(ancestor)
                if entry is not None and entry.status is not None:
                    continue
            else:
                entry = olds[ancestor]
                if entry is None or entry.status is not None:
                    continue
            self._fence.mark(ancestor)
            self._statuses.pop(ancestor)
            self._store.delete(ancestor)
            self._bump(ancestor)

    def _drop(
        self, uri: str, recursive: bool, missing_since: int | None = None
    ) -> tuple[list[_Gone], int]:
        """Remove ``uri`` (and with ``recursive`` its descendants) from every tier; the file
        versions removed, and how many URIs were. Caller must not hold ``_lock``.

        The metastore is read and changed without the lock, between two fence marks: a load
        that began before the drop cannot store its older answer afterwards, and a lookup that
        read the metastore during the drop cannot promote what the drop removes.

        With ``missing_since`` (the token of a load that found ``uri`` missing), ``uri`` is then
        recorded as not existing — unless a mutation of it landed since that load began (then
        nothing is dropped) or during the drop.
        """
        with self._lock:
            if missing_since is not None and self._fence.is_stale(uri, missing_since):
                return [], 0
            self._mark_dropped(uri, recursive)
            during = self._fence.begin()
        try:
            removed = self._store.pop_under(uri) if recursive else _found(uri, self._store.pop(uri))
            with self._lock:
                missing = missing_since is not None and not self._fence.is_stale(uri, during)
                self._mark_dropped(uri, recursive)
                if recursive:
                    removed += self._statuses.pop_under(uri)
                    self._listings.pop_under(uri)
                else:
                    removed += _found(uri, self._statuses.pop(uri))
                    self._listings.pop(uri)
                parent = uris.parent(uri)
                if parent is not None:
                    self._fence.mark(parent)
                    self._listings.pop(parent)
                if recursive:
                    self._bump_all()
                else:
                    self._bump(uri)  # and its parent's bucket
                gone = sorted({(u, v) for u, e in removed if (v := _file_version(e)) is not None})
                if missing:
                    negative = MetaEntry(None, self._clock(), Operation.LOADED)
                    gone += self._settle(uri, negative, None, None)
        finally:
            with self._lock:
                self._fence.end(during)
        return gone, len({u for u, _ in removed})

    def _mark_dropped(self, uri: str, recursive: bool) -> None:
        if recursive:
            self._fence.mark_under(uri)
        else:
            self._fence.mark(uri)

    # -- storing new state ----------------------------------------------------------------------

    def _settle(
        self, uri: str, entry: MetaEntry, token: int | None, old: MetaEntry | None
    ) -> list[_Gone]:
        """Make ``entry`` the state of ``uri`` in both tiers, unless it comes from a load
        (``token``) that a mutation overtook. ``old`` is what ``uri`` held (read since the load
        began, or validated by the caller). Returns the file version that went away, if any.
        Caller holds ``_lock``."""
        gone, settled = self._settle_siblings([(uri, entry)], token, {uri: old})
        parent = uris.parent(uri)
        if parent is not None and settled:
            self._drop_listing_if_changed(parent, settled)
        return gone

    def _settle_listing(
        self,
        uri: str,
        children: list[UfsStatus],
        previous: Listing | None,
        olds: dict[str, MetaEntry | None],
        token: int,
    ) -> list[_Gone]:
        """Store a fresh listing and its children's statuses; children the ``previous`` listing
        had and this one lacks are gone. ``olds`` holds what each child held, read since the
        listing began. Caller holds ``_lock``."""
        now = self._clock()
        entries = [(child.uri, MetaEntry(child, now, Operation.LOADED)) for child in children]
        if previous is not None:
            present = {child.uri for child in children}
            negative = MetaEntry(None, now, Operation.LOADED)
            entries += [(c.uri, negative) for c in previous.children if c.uri not in present]
        gone, settled = self._settle_siblings(entries, token, olds)
        if not self._fence.is_stale(uri, token):
            listing = Listing.of(children, now)
            if previous is not None and previous.versions != listing.versions:
                self._bump(uri)
            self._listings.put(uri, listing)
        else:
            self._drop_listing_if_changed(uri, settled)
        return gone

    def _settle_siblings(
        self,
        entries: list[tuple[str, MetaEntry]],
        token: int | None,
        olds: dict[str, MetaEntry | None],
    ) -> tuple[list[_Gone], list[tuple[str, MetaEntry]]]:
        """The core of :meth:`_settle` for entries of one directory, stored in one batch per
        tier: the file versions gone, and the entries stored (those no mutation overtook).
        Caller holds ``_lock``."""
        gone: list[_Gone] = []
        settled: list[tuple[str, MetaEntry]] = []
        kept: list[tuple[str, MetaEntry]] = []
        changed: list[str] = []
        negative_ttl = self._store.lifetimes.negative_ttl_ms
        for uri, entry in entries:
            if token is not None and self._fence.is_stale(uri, token):
                continue
            self._fence.mark(uri)
            settled.append((uri, entry))
            old_version = _file_version(olds[uri])
            if old_version is not None and old_version != entry.version:
                gone.append((uri, old_version))
            old = olds[uri]
            if old is not None and old.status != entry.status:
                # A first load changes nothing a client can have kept: a client keeps only
                # what the worker answered, and nothing it keeps outlives the worker's entry
                # (its TTL is shorter); an entry forgotten and loaded anew is like an outside
                # write, which a sync interval governs.
                changed.append(uri)
            if entry.status is None:
                self._listings.pop(uri)
                if negative_ttl == 0:
                    self._statuses.pop(uri)
                    self._store.delete(uri)
                    continue
            kept.append((uri, entry))
        self._statuses.put_many(kept)
        self._store.put_many(kept)
        for uri in changed:  # after the new state is stored: lookups take no lock
            self._bump(uri)
        return gone, settled

    def _drop_listing_if_changed(self, uri: str, settled: list[tuple[str, MetaEntry]]) -> None:
        """Drop directory ``uri``'s cached listing if it names another version of any of the
        children just settled. Caller holds ``_lock``."""
        listing = self._listings.get(uri)
        if listing is not None and any(
            listing.versions.get(child) != entry.version for child, entry in settled
        ):
            self._listings.pop(uri)

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

    def entries(self) -> dict[str, int]:
        """How many statuses (negative ones included) and listings the memory tier holds."""
        return {"memory_statuses": len(self._statuses), "memory_listings": len(self._listings)}

    def persistence_state(self) -> PersistenceState:
        """Whether the metastore persists what the worker learns: PERSISTING, or MEMORY_ONLY (a
        commit failed; until a restart, lookups are served from memory and the UFS only). For
        readiness probes; thread-safe and cheap."""
        return self._store.persistence_state()

    def close(self) -> None:
        """Commit pending metastore writes (a failure is logged) and close the metastore."""
        self._store.close()


def _answer(uri: str, entry: MetaEntry, version: str | None) -> UfsStatus:
    if entry.status is None:
        raise UfsNotFound(f"{uri!r} does not exist")
    if version is not None and entry.status.version != version:
        raise VersionMismatch(uri, version, entry.status.version)
    return entry.status


def _ancestors(uri: str) -> list[str]:
    found = []
    ancestor = uris.parent(uri)
    while ancestor is not None:
        found.append(ancestor)
        ancestor = uris.parent(ancestor)
    return found


def _file_version(entry: MetaEntry | None) -> str | None:
    """The version ``entry`` names if it is a file's status; None otherwise."""
    if entry is None or entry.status is None or entry.status.is_dir:
        return None
    return entry.status.version


def _found(uri: str, entry: MetaEntry | None) -> list[tuple[str, MetaEntry]]:
    return [] if entry is None else [(uri, entry)]


def _drops_subtree(status: UfsStatus | None, old: MetaEntry | None) -> bool:
    """Whether a write of ``status`` (None: a delete) over ``old`` must drop every entry under
    the path: a directory written, or a delete of anything not known to be a file."""
    if status is not None:
        return status.is_dir
    return _file_version(old) is None


def _check_write(uri: str, status: UfsStatus | None, op: Operation) -> None:
    if (status is None) != (op is Operation.DELETED):
        raise ValueError(f"record_write({uri!r}): a status is required exactly unless DELETED")
    if status is not None and uris.normalize(status.uri) != uri:
        raise ValueError(f"record_write({uri!r}): the status names {status.uri!r}")
