"""The metadata read side: lookups, syncs with the UFS, listings (DESIGN.md, "Metadata semantics").

Lookups go memory, then the metastore (a hit there is promoted to memory), then the UFS. A
cached entry is re-checked against the UFS when the sync interval says so, or when the caller
asks for a version the cache does not hold. What a sync learns is stored by the write side
(:class:`worker.meta.writes.MetadataWrites`), behind its fence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pagestore.flight import SingleFlight
from ufs import uri as uris
from ufs.deadline import Deadline
from ufs.errors import UfsNotFound
from ufs.status import UfsStatus
from worker.meta.entry import MetaEntry, Operation, needs_sync
from worker.meta.errors import MetaVersionMismatch
from worker.meta.listeners import LookupCall
from worker.meta.memory import Listing
from worker.meta.revalidate import Revalidations
from worker.meta.tiers import Tiers
from worker.meta.writes import MetadataWrites


class StatusSource(Protocol):
    """What the read side needs of the UFS (``ufs.adapter.Ufs`` provides it)."""

    def status(self, uri: str, *, deadline: Deadline | None = None) -> UfsStatus: ...

    def list(self, uri: str, *, deadline: Deadline | None = None) -> list[UfsStatus]: ...


class MetadataReads:
    """Tiered, synced lookups of canonical UFS URIs.

    Thread-safe. Takes no lock of its own: it reads the tiers without one and leaves every
    change to the write side. Concurrent misses for one URI share one UFS call (single
    flight). An entry the memory tier evicts stays readable from the metastore's write buffers
    until its batch is committed.
    """

    def __init__(self, tiers: Tiers, writes: MetadataWrites, ufs: StatusSource) -> None:
        self._tiers = tiers
        self._writes = writes
        self._ufs = ufs
        self._status_flights: SingleFlight[str, MetaEntry] = SingleFlight()
        self._list_flights: SingleFlight[str, tuple[UfsStatus, ...]] = SingleFlight()
        self._revalidations = Revalidations(self._recheck, tiers.counters)

    def get_status(
        self,
        uri: str,
        sync_interval: int | None = None,
        version: str | None = None,
        serve_stale: bool = False,
        call: LookupCall | None = None,
    ) -> UfsStatus:
        """The status of ``uri``, re-checked against the UFS as ``sync_interval`` (ms; -1 never,
        0 always; None: the configured default) or ``version`` require. With ``serve_stale``
        (and no ``version``), an entry due for a re-check but younger than the status cache
        TTL is answered at once while one background re-check of ``uri`` runs (which tells no
        one). ``call`` bounds the UFS requests (its deadline) and hears the feed revision of
        a change this lookup's sync found.

        Raises UfsNotFound (also for a cached negative entry, and for a name the parent's
        cached listing lacks when that listing is as fresh as ``sync_interval`` asks and no
        ``version`` is named), VersionMismatch if ``version``
        is given and the UFS has another one even after a sync, other UfsErrors from the UFS.
        """
        uri = self._tiers.canonical(uri)
        interval = self._interval(sync_interval)
        entry = self._lookup(uri)
        if entry is not None and self._usable(entry, interval, version):
            return _answer(uri, entry, version)
        if entry is not None and serve_stale and self._served_stale(uri, entry, version):
            return _answer(uri, entry, version)
        absent = version is None and (entry is None or entry.status is None)
        if absent and self._listed_absent(uri, interval):
            self._tiers.counters.add("listing_negatives")
            raise UfsNotFound(f"{uri!r} does not exist")
        return _answer(uri, self._sync(uri, entry, call), version)

    def cached_status(
        self,
        uri: str,
        sync_interval: int | None = None,
        version: str | None = None,
        serve_stale: bool = False,
    ) -> UfsStatus | None:
        """:meth:`get_status` from the memory tier alone, for callers on an event loop: the
        same answer (or UfsNotFound for a cached negative entry) when ``uri``'s entry is in
        memory and usable as the arguments require (or served stale, the background re-check
        started without waiting), else None (then ask :meth:`get_status`). Never blocks on
        I/O; counts a hit only when it answers. Raises ValueError for an invalid
        ``sync_interval``."""
        uri = self._tiers.canonical(uri)
        interval = self._interval(sync_interval)
        entry = self._tiers.statuses.get(uri)
        if entry is None:
            return None
        if not self._usable(entry, interval, version) and not (
            serve_stale and self._served_stale(uri, entry, version)
        ):
            return None
        self._tiers.counters.add("memory_hits")
        return _answer(uri, entry, version)

    def peek(self, uris: Sequence[str]) -> list[UfsStatus | None]:
        """The memory tier's status of each of ``uris`` (canonical), None where it holds none
        or a negative entry: no I/O, no freshness rule, nothing counted. For showing what the
        worker holds (the console), never for serving."""
        entries = [self._tiers.statuses.get(uri) for uri in uris]
        return [None if entry is None else entry.status for entry in entries]

    def list_status(
        self, uri: str, sync_interval: int | None = None, call: LookupCall | None = None
    ) -> list[UfsStatus]:
        """The children of directory ``uri`` with their statuses; the listing is cached and
        fills the status cache. Recursive listings are not offered, so never cached.
        ``call`` bounds the UFS requests and hears the feed revision of the changes this
        re-listing found.

        Raises UfsNotFound, UfsNotADirectory, other UfsErrors from the UFS.
        """
        uri = self._tiers.canonical(uri)
        interval = self._interval(sync_interval)
        listing = self._tiers.listings.get(uri)
        if (
            listing is not None
            and listing.loaded_at > self._tiers.fresh_after
            and not needs_sync(listing.loaded_at, interval, self._tiers.clock())
        ):
            self._tiers.counters.add("listing_hits")
            return list(listing.children)
        self._tiers.counters.add("listing_misses" if listing is None else "syncs")
        children = self._list_flights.run(uri, lambda: self._relist(uri, call))
        if listing is not None and Listing.of(children, 0).versions != listing.versions:
            self._tiers.counters.add("syncs_changed")
        return list(children)

    def status_age(self, uri: str, version: str) -> int | None:
        """Milliseconds since ``uri``'s status of ``version`` was last confirmed with the UFS
        (or written through the worker), from the memory tier; None when it holds no entry of
        that version. A client near-cache counts a positive sync interval from it."""
        entry = self._tiers.statuses.get(self._tiers.canonical(uri))
        if entry is None or entry.version != version:
            return None
        return max(0, self._tiers.clock() - entry.loaded_at)

    def listing_age(self, uri: str, children: list[UfsStatus]) -> int | None:
        """:meth:`status_age` of the listing of ``uri`` that named exactly ``children``."""
        listing = self._tiers.listings.get(self._tiers.canonical(uri))
        if listing is None or listing.versions != {c.uri: c.version for c in children}:
            return None
        return max(0, self._tiers.clock() - listing.loaded_at)

    @property
    def flights_merged(self) -> int:
        """Loads that joined another caller's load of the same URI instead of calling the UFS."""
        return self._status_flights.merged + self._list_flights.merged

    def _interval(self, sync_interval: int | None) -> int:
        interval = self._tiers.options.sync_interval_ms if sync_interval is None else sync_interval
        if interval < -1:
            raise ValueError(f"sync interval {interval} is invalid: expected -1, 0 or more")
        return interval

    def _served_stale(self, uri: str, entry: MetaEntry, version: str | None) -> bool:
        """Whether expired ``entry`` may be answered now, a background re-check of ``uri``
        running (started if none was): never for a pinned ``version``, nor for an entry a
        feed gap made unprovable, nor past the status cache TTL counted from ``loaded_at``
        (the last time the UFS confirmed it), nor when the last background re-check of this
        entry failed."""
        if version is not None or entry.loaded_at <= self._tiers.fresh_after:
            return False
        if self._tiers.clock() - entry.loaded_at >= self._tiers.options.status_ttl_ms:
            return False
        if not self._revalidations.start(uri, entry.loaded_at):
            return False
        self._tiers.counters.add("stale_served")
        return True

    def _sync(self, uri: str, entry: MetaEntry | None, call: LookupCall | None) -> MetaEntry:
        """Re-check ``uri`` with the UFS (joining a re-check in flight); ``entry`` is what the
        cache held (None: nothing)."""
        if entry is not None:
            self._tiers.counters.add("syncs")
        # Under single flight only the leader's call hears the revision: a caller that
        # joined is answered without it (its client may then read older state from another
        # worker until it names a newer revision; the sync interval still bounds that).
        synced = self._status_flights.run(uri, lambda: self._load(uri, call))
        if entry is not None and synced.version != entry.version:
            self._tiers.counters.add("syncs_changed")
        return synced

    def _recheck(self, uri: str) -> None:
        """A background re-check (see :class:`Revalidations`)."""
        self._sync(uri, self._tiers.statuses.get(uri), None)

    def close(self) -> None:
        """Stop the background re-checks (see :meth:`Revalidations.close`)."""
        self._revalidations.close()

    def _usable(self, entry: MetaEntry, interval: int, version: str | None) -> bool:
        if version is not None:
            # The caller knows what it wants: the cached entry is right iff it names that.
            return entry.version == version
        # At or before: what was loaded in the gap's own millisecond may predate the change.
        if entry.loaded_at <= self._tiers.fresh_after:
            return False
        return not needs_sync(entry.loaded_at, interval, self._tiers.clock())

    def _listed_absent(self, uri: str, interval: int) -> bool:
        """Whether a cached listing of ``uri``'s parent, usable under ``interval`` as a status
        is, leaves ``uri`` out: then it answers "not found" as a negative entry of its age
        would, for the listing's life rather than the negative entry's short one. A warm job's
        probes of paths that do not exist (Spark's of ``_spark_metadata`` beside each table it
        reads) stay off the UFS. Sound because whatever makes a name appear under a directory
        drops that directory's listing: a write through the worker, a sync or listing that
        finds the name or a path under it, a feed event (the write side's
        ``_drop_changed_listings``, ``settle.drop_listings_lacking``)."""
        parent = uris.parent(uri)
        listing = None if parent is None else self._tiers.listings.get(parent)
        return (
            listing is not None
            and listing.loaded_at > self._tiers.fresh_after
            and not needs_sync(listing.loaded_at, interval, self._tiers.clock())
            and uri not in listing.versions
        )

    def _lookup(self, uri: str) -> MetaEntry | None:
        entry = self._tiers.statuses.get(uri)
        if entry is not None:
            self._tiers.counters.add("memory_hits")
            return entry
        with self._writes.fenced() as token:
            entry = self._tiers.read_store(uri)
            # A write or load that landed during the read is newer than what was read.
            if entry is not None and not self._writes.promote(uri, entry, token):
                entry = None
        self._tiers.counters.add("metastore_hits" if entry is not None else "misses")
        return entry

    def _load(self, uri: str, call: LookupCall | None) -> MetaEntry:
        """One UFS status call for ``uri``, its answer stored (unless a write overtook it)."""
        with self._writes.fenced() as token:
            self._tiers.counters.add("ufs_calls")
            try:
                status: UfsStatus | None = self._ufs.status(uri, deadline=_deadline(call))
            except UfsNotFound:
                status = None
            entry = MetaEntry(status, self._tiers.clock(), Operation.LOADED)
            gone = self._writes.settle_load(uri, entry, token)
        revision = self._writes.notify(gone, {uri: entry.status})
        if call is not None:
            call.observed(revision)
        return entry

    def _relist(self, uri: str, call: LookupCall | None) -> tuple[UfsStatus, ...]:
        missing: UfsNotFound | None = None
        children: list[UfsStatus] = []
        with self._writes.fenced() as token:
            self._tiers.counters.add("ufs_calls")
            try:
                children = self._ufs.list(uri, deadline=_deadline(call))
            except UfsNotFound as exc:
                missing = exc
            if missing is None:
                gone = self._writes.settle_listing(uri, children, token)
            else:
                # The directory being listed does not exist: nothing under it does either.
                gone = self._writes.settle_missing_dir(uri, token)
        revision = self._writes.notify(gone, {child.uri: child for child in children})
        if call is not None:
            call.observed(revision)
        if missing is not None:
            raise missing
        return tuple(children)


def _deadline(call: LookupCall | None) -> Deadline | None:
    return None if call is None else call.deadline


def _answer(uri: str, entry: MetaEntry, version: str | None) -> UfsStatus:
    if entry.status is None:
        raise UfsNotFound(f"{uri!r} does not exist")
    if version is not None and entry.status.version != version:
        raise MetaVersionMismatch(uri, version, entry.status.version)
    return entry.status
