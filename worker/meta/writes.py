"""The metadata write side: mutations made through the worker, invalidations, and storing what
a sync learned, behind the mutation fence; the listeners that hear what went.

Whenever a file's cached version goes away (a sync finds another version or no file, a write
replaces it, an invalidation drops it) the listeners hear ``(uri, version)`` so the page store
can evict that version's pages.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from ufs import uri as uris
from ufs.status import UfsStatus
from worker.meta import settle
from worker.meta.entry import MetaEntry, Operation
from worker.meta.fence import MutationFence
from worker.meta.listeners import Listener, Listeners
from worker.meta.settle import Gone, file_version
from worker.meta.tiers import Tiers

SyncListener = Callable[[str, UfsStatus | None], int | None]
"""``fn(uri, status)``: a sync found ``uri`` changed; returns the feed revision it published the
change under (None: none)."""


class MetadataWrites:
    """Changes to the shared tiers, ordered by the mutation fence.

    Thread-safe. Lock order: the tiers' ``lock`` (which also guards the fence) first. The lock
    is never held while the metastore is read or listeners run: what a change replaces is read
    beforehand and used only if the fence shows no mutation of it landed meanwhile (else it is
    read again). The fence keeps a slow UFS answer (a load that began before a mutation) from
    overwriting the newer state.
    """

    def __init__(self, tiers: Tiers) -> None:
        self._tiers = tiers
        self._lock = tiers.lock
        self._fence = MutationFence()
        self._listeners = Listeners()
        self._sync_listeners: tuple[SyncListener, ...] = ()

    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(uri, version)`` whenever version ``version`` of file ``uri`` is gone."""
        self._listeners.add(fn)

    def add_sync_listener(self, fn: SyncListener) -> None:
        """Call ``fn(uri, status)`` when a sync with the UFS found a cached file changed:
        ``status`` is the new one, None if the file is gone. Runs on the syncing thread after
        the cache holds the new state; an exception from ``fn`` reaches the caller, and the
        feed revision it returns reaches the lookup's observer (:meth:`notify`)."""
        with self._lock:
            self._sync_listeners = (*self._sync_listeners, fn)

    def require_sync_before(self, epoch_ms: int) -> None:
        """Re-check with the UFS, once, every status and listing loaded before ``epoch_ms`` (or
        in that millisecond), whatever the sync interval (a re-check that finds the same
        version keeps the pages)."""
        with self._lock:
            self._tiers.fresh_after = max(self._tiers.fresh_after, epoch_ms)
            self._tiers.bump_all()

    # -- for the read side: loads behind the fence --------------------------------------------

    @contextlib.contextmanager
    def fenced(self) -> Iterator[int]:
        """A fence token for a load (a metastore read or a UFS call) made without the lock:
        pass it to :meth:`promote` or the ``settle_*`` methods, which store the load's answer
        only if no mutation of its URI landed since."""
        with self._lock:
            token = self._fence.begin()
        try:
            yield token
        finally:
            with self._lock:
                self._fence.end(token)

    def promote(self, uri: str, entry: MetaEntry, token: int) -> bool:
        """Put ``entry``, read from the metastore under ``token``, into memory unless a write or
        load of ``uri`` landed during the read (that one is newer); whether it was put."""
        with self._lock:
            if self._fence.is_stale(uri, token):
                return False
            self._tiers.statuses.put(uri, entry)
            return True

    def settle_load(self, uri: str, entry: MetaEntry, token: int) -> list[Gone]:
        """Store what a status load begun under ``token`` found (unless a mutation overtook
        it); the file version that went away, if any. Call :meth:`notify` with it."""
        # Read after the load began: if no mutation lands before the lock, it is current.
        olds = self._tiers.peek_olds([uri])
        with self._lock:
            return settle.store(self._tiers, self._fence, uri, entry, token, olds[uri])

    def settle_listing(self, uri: str, children: list[UfsStatus], token: int) -> list[Gone]:
        """Store what a listing of directory ``uri`` begun under ``token`` found: the listing
        and its children's statuses; children the previous listing had and this one lacks are
        gone. The file versions that went away; call :meth:`notify` with them."""
        previous = self._tiers.listings.get(uri)
        named = [c.uri for c in children] + ([c.uri for c in previous.children] if previous else [])
        olds = self._tiers.peek_olds(named)
        with self._lock:
            return settle.store_listing(
                self._tiers, self._fence, uri, children, previous, olds, token
            )

    def settle_missing_dir(self, uri: str, token: int) -> list[Gone]:
        """A listing begun under ``token`` found no directory ``uri``: nothing under it exists
        either. The file versions that went away; call :meth:`notify` with them."""
        return self.drop(uri, recursive=True, missing_since=token)[0]

    def notify(self, gone: list[Gone], found: dict[str, UfsStatus | None]) -> int | None:
        """Tell the listeners of the versions ``gone`` after a sync, and the sync listeners of
        each such URI's new status in ``found`` (None: gone); the newest feed revision the sync
        listeners published under (None: none did)."""
        self._listeners.notify(gone)
        newest: int | None = None
        for uri in dict.fromkeys(u for u, _ in gone):
            for fn in self._sync_listeners:
                revision = fn(uri, found.get(uri))
                if revision is not None and (newest is None or revision > newest):
                    newest = revision
        return newest

    # -- writes and invalidation ----------------------------------------------------------------

    def record_write(self, uri: str, status: UfsStatus | None, op: Operation) -> None:
        """Record a mutation the worker made on the UFS (read-your-writes).

        ``status`` is the new status, None exactly when ``op`` is DELETED (a negative entry is
        stored). The old version's pages go (listeners), the parent's listing is dropped; a
        directory written, or a delete of anything not known to be a file, also drops every
        entry under it. Raises ValueError if ``status`` and ``op`` disagree or ``status`` names
        another URI.
        """
        uri = self._tiers.canonical(uri)
        _check_write(uri, status, op)
        entry = MetaEntry(status, self._tiers.clock(), op)
        names = [uri, *_ancestors(uri)] if status is not None else [uri]
        gone: list[Gone] = []
        dropped = False
        while True:
            # The old entries are read without the lock, then used under it only if no mutation
            # of ``uri`` landed meanwhile; otherwise they are read again.
            with self.fenced() as token:
                olds = self._tiers.peek_olds(names)
                with self._lock:
                    if self._fence.is_stale(uri, token):
                        continue
                    if dropped or not _drops_subtree(status, olds[uri]):
                        gone += self._apply_write(uri, entry, olds, token)
                        break
            # Not under the lock: dropping a subtree reads the metastore.
            gone += self.drop(uri, recursive=True)[0]
            dropped = True
        self._tiers.bump(uri)
        self._tiers.counters.add("writes")
        self._listeners.notify(gone)

    def invalidate(self, uri: str, recursive: bool = False) -> int:
        """Drop ``uri``'s status and listing (with ``recursive``, everything under it too) from
        both tiers, and the parent's listing; listeners hear of every file version dropped.
        Returns how many URIs' statuses were dropped."""
        uri = self._tiers.canonical(uri)
        gone, dropped = self.drop(uri, recursive)
        self._tiers.counters.add("invalidations", dropped)
        self._listeners.notify(gone)
        return dropped

    def _apply_write(
        self, uri: str, entry: MetaEntry, olds: dict[str, MetaEntry | None], token: int
    ) -> list[Gone]:
        """Store a write whose old entries were read under ``token``. Caller holds the lock."""
        if entry.status is not None:
            # Before the directories are marked below, which would make their entries look
            # changed.
            self._forget_missing_ancestors(uri, olds, token)
        self._drop_changed_listings(uri, deleted=entry.status is None)
        # Storing a status also drops the listings that lack the way down to ``uri``.
        return settle.store(self._tiers, self._fence, uri, entry, None, olds[uri])

    def _drop_changed_listings(self, uri: str, deleted: bool) -> None:
        """A write of ``uri`` changes its parent's listing, and may change its other
        directories' listings: a write can make directories appear (a listing that lacks one
        would answer "not found" for it), a delete can make them vanish (an object store's
        directory exists while something is under it). Drop the parent's listing, with
        ``deleted`` every directory's, and mark every directory in the fence, so that a listing
        of one that was in flight is not stored over the change. Caller holds the lock."""
        for depth, directory in enumerate(_ancestors(uri)):
            self._fence.mark(directory)
            if (depth == 0 or deleted) and self._tiers.listings.pop(directory) is not None:
                self._tiers.bump(directory)

    def _forget_missing_ancestors(
        self, uri: str, olds: dict[str, MetaEntry | None], token: int
    ) -> None:
        """A path now exists, so its directories do: drop cached "not found" answers for them
        (``isdir(d)``, write ``d/x``, ``isdir(d)`` must see ``d``). Caller holds the lock."""
        for ancestor in _ancestors(uri):
            if self._fence.is_stale(ancestor, token):
                # Changed since it was read (a sibling's write marks it, too): memory holds the
                # newest entry if any tier does; without one, drop whatever the metastore has.
                entry = self._tiers.statuses.get(ancestor)
                if entry is not None and entry.status is not None:
                    continue
            else:
                entry = olds[ancestor]
                if entry is None or entry.status is not None:
                    continue
            self._fence.mark(ancestor)
            self._tiers.statuses.pop(ancestor)
            self._tiers.store.delete(ancestor)
            self._tiers.bump(ancestor)

    def drop(
        self, uri: str, recursive: bool, missing_since: int | None = None
    ) -> tuple[list[Gone], int]:
        """Remove ``uri`` (and with ``recursive`` its descendants) from every tier; the file
        versions removed, and how many URIs were. Caller must not hold the lock.

        The metastore is read and changed without the lock, between two fence marks: a load
        that began before the drop cannot store its older answer afterwards, and a lookup that
        read the metastore during the drop cannot promote what the drop removes.

        With ``missing_since`` (the token of a load that found ``uri`` missing), ``uri`` is then
        recorded as not existing — unless a mutation of it landed since that load began (then
        nothing is dropped) or during the drop.
        """
        tiers = self._tiers
        with self._lock:
            if missing_since is not None and self._fence.is_stale(uri, missing_since):
                return [], 0
            self._mark_dropped(uri, recursive)
            during = self._fence.begin()
        try:
            removed = tiers.store.pop_under(uri) if recursive else _found(uri, tiers.store.pop(uri))
            with self._lock:
                missing = missing_since is not None and not self._fence.is_stale(uri, during)
                self._mark_dropped(uri, recursive)
                if recursive:
                    removed += tiers.statuses.pop_under(uri)
                    tiers.listings.pop_under(uri)
                else:
                    removed += _found(uri, tiers.statuses.pop(uri))
                    tiers.listings.pop(uri)
                parent = uris.parent(uri)
                if parent is not None:
                    self._fence.mark(parent)
                    tiers.listings.pop(parent)
                if recursive:
                    tiers.bump_all()
                else:
                    tiers.bump(uri)  # and its parent's bucket
                gone = sorted({(u, v) for u, e in removed if (v := file_version(e)) is not None})
                if missing:
                    negative = MetaEntry(None, tiers.clock(), Operation.LOADED)
                    gone += settle.store(self._tiers, self._fence, uri, negative, None, None)
        finally:
            with self._lock:
                self._fence.end(during)
        return gone, len({u for u, _ in removed})

    def _mark_dropped(self, uri: str, recursive: bool) -> None:
        if recursive:
            self._fence.mark_under(uri)
        else:
            self._fence.mark(uri)


def _ancestors(uri: str) -> list[str]:
    found = []
    ancestor = uris.parent(uri)
    while ancestor is not None:
        found.append(ancestor)
        ancestor = uris.parent(ancestor)
    return found


def _found(uri: str, entry: MetaEntry | None) -> list[tuple[str, MetaEntry]]:
    return [] if entry is None else [(uri, entry)]


def _drops_subtree(status: UfsStatus | None, old: MetaEntry | None) -> bool:
    """Whether a write of ``status`` (None: a delete) over ``old`` must drop every entry under
    the path: a directory written, or a delete of anything not known to be a file."""
    if status is not None:
        return status.is_dir
    return file_version(old) is None


def _check_write(uri: str, status: UfsStatus | None, op: Operation) -> None:
    if (status is None) != (op is Operation.DELETED):
        raise ValueError(f"record_write({uri!r}): a status is required exactly unless DELETED")
    if status is not None and uris.normalize(status.uri) != uri:
        raise ValueError(f"record_write({uri!r}): the status names {status.uri!r}")
