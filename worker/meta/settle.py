"""Storing new state in both tiers, as the write side does for a mutation and for what a sync
learned: an entry (or a directory's entries) unless the fence shows a mutation overtook the load
that produced it, the listings it makes stale dropped, near-caches told.

Every function here runs with the tiers' ``lock`` held by the caller (the write side), which
also guards the fence.
"""

from __future__ import annotations

from ufs import uri as uris
from ufs.status import UfsStatus
from worker.meta.entry import MetaEntry, Operation
from worker.meta.fence import MutationFence
from worker.meta.memory import Listing
from worker.meta.tiers import Tiers

Gone = tuple[str, str]  # (uri, version) whose pages must go


def store(
    tiers: Tiers,
    fence: MutationFence,
    uri: str,
    entry: MetaEntry,
    token: int | None,
    old: MetaEntry | None,
) -> list[Gone]:
    """Make ``entry`` the state of ``uri`` in both tiers, unless it comes from a load
    (``token``) that a mutation overtook. ``old`` is what ``uri`` held (read since the load
    began, or validated by the caller). Returns the file version that went away, if any."""
    gone, settled = _store_siblings(tiers, fence, [(uri, entry)], token, {uri: old})
    parent = uris.parent(uri)
    if parent is not None and settled:
        _drop_listing_if_changed(tiers, parent, settled)
        if entry.status is not None:
            drop_listings_lacking(tiers, uri)
    return gone


def store_listing(
    tiers: Tiers,
    fence: MutationFence,
    uri: str,
    children: list[UfsStatus],
    previous: Listing | None,
    olds: dict[str, MetaEntry | None],
    token: int,
) -> list[Gone]:
    """Store a fresh listing of directory ``uri`` and its children's statuses; children the
    ``previous`` listing had and this one lacks are gone. ``olds`` holds what each child held,
    read since the listing began. Returns the file versions that went away."""
    now = tiers.clock()
    entries = [(child.uri, MetaEntry(child, now, Operation.LOADED)) for child in children]
    if previous is not None:
        present = {child.uri for child in children}
        negative = MetaEntry(None, now, Operation.LOADED)
        entries += [(c.uri, negative) for c in previous.children if c.uri not in present]
    gone, settled = _store_siblings(tiers, fence, entries, token, olds)
    if not fence.is_stale(uri, token):
        listing = Listing.of(children, now)
        if previous is not None and previous.versions != listing.versions:
            tiers.bump(uri)
        tiers.listings.put(uri, listing)
        drop_listings_lacking(tiers, uri)
    else:
        _drop_listing_if_changed(tiers, uri, settled)
    return gone


def _store_siblings(
    tiers: Tiers,
    fence: MutationFence,
    entries: list[tuple[str, MetaEntry]],
    token: int | None,
    olds: dict[str, MetaEntry | None],
) -> tuple[list[Gone], list[tuple[str, MetaEntry]]]:
    """The core of :func:`store` for entries of one directory, stored in one batch per tier:
    the file versions gone, and the entries stored (those no mutation overtook)."""
    gone: list[Gone] = []
    settled: list[tuple[str, MetaEntry]] = []
    kept: list[tuple[str, MetaEntry]] = []
    changed: list[str] = []
    negative_ttl = tiers.store.lifetimes.negative_ttl_ms
    for uri, entry in entries:
        if token is not None and fence.is_stale(uri, token):
            continue
        fence.mark(uri)
        settled.append((uri, entry))
        old_version = file_version(olds[uri])
        if old_version is not None and old_version != entry.version:
            gone.append((uri, old_version))
        old = olds[uri]
        if old is not None and old.status != entry.status:
            # A first load changes nothing a client can have kept: a client keeps only what
            # the worker answered, and nothing it keeps outlives the worker's entry (its TTL is
            # shorter); an entry forgotten and loaded anew is like an outside write, which a
            # sync interval governs.
            changed.append(uri)
        if entry.status is None:
            tiers.listings.pop(uri)
            if negative_ttl == 0:
                tiers.statuses.pop(uri)
                tiers.store.delete(uri)
                continue
        kept.append((uri, entry))
    tiers.statuses.put_many(kept)
    tiers.store.put_many(kept)
    for uri in changed:  # after the new state is stored: lookups take no lock
        tiers.bump(uri)
    return gone, settled


def _drop_listing_if_changed(tiers: Tiers, uri: str, settled: list[tuple[str, MetaEntry]]) -> None:
    """Drop directory ``uri``'s cached listing if it names another version of any of the
    children just settled."""
    listing = tiers.listings.get(uri)
    if listing is not None and any(
        listing.versions.get(child) != entry.version for child, entry in settled
    ):
        tiers.listings.pop(uri)


def drop_listings_lacking(tiers: Tiers, uri: str) -> None:
    """``uri`` exists: drop every cached listing of its directories that lacks the way down
    to it (a directory that appeared since that listing was loaded), since a listing answers
    "not found" for a name it lacks (``MetadataReads.get_status``)."""
    child, directory = uri, uris.parent(uri)
    while directory is not None:
        listing = tiers.listings.get(directory)
        if listing is not None and child not in listing.versions:
            tiers.listings.pop(directory)
            tiers.bump(directory)
        child, directory = directory, uris.parent(directory)


def file_version(entry: MetaEntry | None) -> str | None:
    """The version ``entry`` names if it is a file's status; None otherwise."""
    if entry is None or entry.status is None or entry.status.is_dir:
        return None
    return entry.status.version
