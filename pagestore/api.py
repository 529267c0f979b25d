"""The two interfaces of the page store and the values they exchange.

:class:`PageStore` is what the worker uses: pages by :class:`PageId`, read through with single
flight, never failing (a cache failure is an outcome). :class:`pagestore.cache.PageCache` is its
one implementation. :class:`Store` is what the cache sits on: it only moves bytes by key and
reports space (the disk store, the memory store).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pagestore.mrc import MissRatioCurve
from pagestore.page import PageId, PageKey
from pagestore.quota import NO_CHARGE, Charge, QuotaUsage
from pagestore.shortcircuit import PageLocations


class PutResult(enum.Enum):
    """What became of a page handed to the store. Only OK means it is stored; every other
    outcome is counted, and the caller simply goes on without caching."""

    OK = "ok"
    """Stored now, or already stored."""
    NO_SPACE = "no_space"
    """The disk is full, or no page could be evicted to make room (all space is being written)."""
    FAILED = "failed"
    """An I/O error, a read-only directory, or no directory in service."""
    TOO_LARGE = "too_large"
    """The data is larger than a page or than the directory's capacity."""
    REJECTED = "rejected"
    """Not stored by design: the store is closed or still restoring, the same page is being
    written or deleted right now, or the file was invalidated while its data was fetched."""
    OVER_QUOTA = "over_quota"
    """Not stored by design: a quota it is charged to (:mod:`pagestore.quota`) is full of
    pages that may not be evicted (pinned), or is smaller than the page."""

    @property
    def failed(self) -> bool:
        """Whether the store could not keep the page (a cache failure, counted as one), as
        opposed to keeping it or refusing it by design."""
        return self in (PutResult.FAILED, PutResult.NO_SPACE)


class Lookup(enum.Enum):
    """How looking a page up went."""

    HIT = "hit"
    MISS = "miss"
    """Not stored."""
    FAILED = "failed"
    """Stored, but it could not be served: corrupt, unreadable, or its directory is gone. The
    store dropped it; the caller fetches the page elsewhere."""


@dataclass(frozen=True, slots=True)
class PageRead:
    """A lookup's outcome and, on a HIT, the bytes asked for."""

    lookup: Lookup
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class Fill:
    """A page from :meth:`PageStore.get_or_fill`: its bytes, whether this call fetched them
    with ``fill()`` (a call that joined another's fetch did not), and whether the store failed
    on the page for this call: its stored copy could not be served (:attr:`Lookup.FAILED`), or
    what this call fetched could not be stored (:attr:`PutResult.FAILED` or ``NO_SPACE``)."""

    data: bytes
    fetched: bool
    cache_failure: bool


@dataclass(frozen=True)
class DirUsage:
    """One page directory's use: data bytes of its pages against its capacity."""

    path: str
    used_bytes: int
    capacity_bytes: int
    in_service: bool
    files: int


@dataclass(frozen=True)
class StoreStats:
    """A snapshot of a store's counters and gauges."""

    hits: int = 0
    misses: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    put_results: Mapping[PutResult, int] = field(default_factory=dict)
    evictions: int = 0
    invalidated_pages: int = 0
    corrupt_pages: int = 0
    io_errors: int = 0
    pages: int = 0
    used_bytes: int = 0
    capacity_bytes: int = 0
    ready: bool = True
    dirs_in_service: int = 1
    restored_pages: int = 0
    restore_seconds: float = 0.0
    pack_bytes: int = 0
    """Bytes of the pack files on disk: their stored pages, entry headers and removed entries
    not yet given back (``used_bytes`` counts only stored pages' data)."""
    dirs: tuple[DirUsage, ...] = ()
    """Each directory's use, for a store that has directories."""
    pinned_bytes: int = 0
    """Bytes of pinned pages (:mod:`pagestore.pins`): never evicted."""
    pin_limit_bytes: int = 0
    """The bound on :attr:`pinned_bytes` (``dora.worker.page.store.pin.max``)."""
    quotas: Mapping[str, QuotaUsage] = field(default_factory=dict)
    """Each quota's bytes, limit and evictions (:mod:`pagestore.quota`), by name."""

    @property
    def puts(self) -> int:
        return self.put_results.get(PutResult.OK, 0)

    @property
    def put_failures(self) -> dict[PutResult, int]:
        return {result: n for result, n in self.put_results.items() if result is not PutResult.OK}


class Fault(enum.Enum):
    """Why a stored page could not be served."""

    CORRUPT = "corrupt"
    IO_ERROR = "io_error"
    GONE = "gone"
    """Its file or directory vanished (the store logs a vanished directory itself)."""


class PageFault(Exception):
    """A stored page could not be served: corrupt, unreadable, or its directory is gone.

    Raised by :meth:`Store.read` once the store has done its own housekeeping (dropped the page,
    taken a vanished directory out of service); the page cache counts it and answers a miss.
    """

    def __init__(self, message: str, kind: Fault, dropped: bool) -> None:
        super().__init__(message)
        self.kind = kind
        self.dropped = dropped
        """Whether this call dropped the page: False when it was already gone (evicted or
        replaced since it was looked up), which is a plain miss."""


ChargeOf = Callable[[str], Charge]
"""The quotas a file's pages count against, by its URI (:meth:`PageStore.charge_restored`)."""

Keep = Callable[[PageKey, str], bool]
"""Asked by a store under its lock just before a written page of the file at the URI becomes
visible: False (the file was invalidated while its bytes were fetched) keeps it out."""


class Space(Protocol):
    """What the page cache and each store under it report and how they open and close."""

    @property
    def page_count(self) -> int: ...

    @property
    def used_bytes(self) -> int: ...

    @property
    def capacity_bytes(self) -> int: ...

    @property
    def ready(self) -> bool:
        """Whether the index is complete (after a restart it is rebuilt in the background)."""
        ...

    def wait_ready(self, timeout: float | None = None) -> bool: ...

    def stats(self) -> StoreStats:
        """Counters and gauges; a store reports its space and the events only it sees
        (evictions, its own I/O errors), the cache adds its counters."""
        ...

    def start(self) -> None:
        """Open the store; a restore, if any, continues in the background."""
        ...

    def close(self) -> None:
        """Finish background work and release the directories. Idempotent."""
        ...


class Store(Space, Protocol):
    """Pages by :class:`PageId` in one medium, bounded in bytes; below the page cache.

    A store moves bytes and reports space: it evicts to make room and keeps its own index, but
    it does not merge fills, order invalidations against fills or count hits (the page cache
    does). Reads raise :class:`PageFault` for a page that could not be served; writes answer a
    :class:`PutResult`; other cache failures are handled inside. Implementations are
    thread-safe, and any lock they hold while calling a :data:`Keep` is taken before the
    cache's.
    """

    page_size: int

    def read(self, page_id: PageId, offset: int, length: int | None) -> bytes | None:
        """Bytes ``[offset, offset + length)`` of a stored page, verified; None when not
        stored. Counts as an access for eviction."""
        ...

    def has_page(self, page_id: PageId) -> bool:
        """Whether the page is stored; not an access."""
        ...

    def put_many(
        self, pages: Sequence[tuple[PageId, bytes, str]], keep: Keep, charge: Charge = NO_CHARGE
    ) -> list[PutResult]:
        """Store pages ``(page_id, data, uri)`` (``uri``: the page's file), evicting others if
        needed; a result per page, in order. A page ``keep`` refuses is REJECTED. Each page is
        charged to the accounts of ``charge``: one over its limit gives up its own pages first
        (:mod:`pagestore.quota`), and a page none can make room for is OVER_QUOTA."""
        ...

    def delete_file(self, file_id: str, version: str | None) -> int:
        """Drop the pages of one version of a file, or of all its versions; returns how many."""
        ...

    def files_under(self, prefix: str) -> set[str]:
        """The ids of files with pages stored or being stored whose URI is under ``prefix``
        (see :meth:`PageStore.delete_prefix`); called once the prefix is invalidated."""
        ...

    def file_uris(self) -> dict[str, str]:
        """See :meth:`PageStore.file_uris`."""
        ...

    def cached_bytes_many(self, files: Sequence[tuple[str, str]]) -> list[int]:
        """Bytes held of each ``(file_id, version)``, in order."""
        ...

    def locate(self, file_id: str, version: str, first: int, last: int | None) -> PageLocations:
        """See :meth:`PageStore.locate`; a store without page files lists none."""
        ...

    def pin(self, file_id: str, pinned: bool) -> None:
        """See :meth:`PageStore.pin`."""
        ...

    def charge_restored(self, charge_of: ChargeOf) -> None:
        """See :meth:`PageStore.charge_restored`; a store that restores nothing ignores it."""
        ...


class PageStore(Space, Protocol):
    """Fixed-size pages by :class:`PageId`, bounded in bytes.

    A cache failure is an outcome (:class:`Lookup`, :class:`PutResult`, :class:`Fill`), never
    an exception: ``read``, ``get``, ``put``, ``get_or_fill``, ``has_page``, ``delete_file``
    and ``delete_prefix`` do not raise for I/O errors, full or vanished disks or corrupt pages
    (they raise ValueError only for invalid arguments; ``get_or_fill`` raises what ``fill``
    raises). Implementations are thread-safe.

    The store keeps the URI of every file it holds pages of (callers pass it with each page:
    ``file_id`` is the caller's id of that URI), so :meth:`delete_prefix` finds every page
    under a prefix, after a restart too.
    """

    page_size: int
    """Bytes in a full page; only a file's last page may be shorter."""
    advice: MissRatioCurve
    """The hit ratio LRU would have at any capacity, from the pages served and stored."""

    def read(
        self,
        page_id: PageId,
        offset: int = 0,
        length: int | None = None,
        *,
        fill_follows: bool = False,
    ) -> PageRead:
        """Bytes ``[offset, offset + length)`` of a stored page (to its end when ``length`` is
        None), verified before they are returned, or why there are none. ``fill_follows``: the
        caller fills the page on a miss (:meth:`fill_run`), whose own lookup counts it, so this
        one does not: each page a read asks for counts once, as a hit or as a miss."""
        ...

    def get(self, page_id: PageId, offset: int = 0, length: int | None = None) -> bytes | None:
        """The bytes :meth:`read` returns, or None if it did not hit."""
        ...

    def put(self, page_id: PageId, data: bytes, uri: str, charge: Charge = NO_CHARGE) -> PutResult:
        """Store a page of the file at ``uri``, evicting others if needed, charged to the
        accounts of ``charge`` (see :meth:`Store.put_many`)."""
        ...

    def mark(self) -> int:
        """A point in the store's invalidations, to pass to :meth:`put_many` as ``since``: take
        it before fetching the bytes, so an invalidation that comes while they are fetched
        keeps them out."""
        ...

    def put_many(
        self, pages: Sequence[tuple[PageId, bytes, str]], since: int, charge: Charge = NO_CHARGE
    ) -> list[PutResult]:
        """Store pages ``(page_id, data, uri)`` fetched after ``since`` (see :meth:`mark`), as
        :meth:`put` stores one; a result per page, in order. Small pages of many files are
        written together, which is what makes loading many small files cheap."""
        ...

    def get_or_fill(
        self, page_id: PageId, fill: Callable[[], bytes], uri: str, charge: Charge = NO_CHARGE
    ) -> Fill:
        """The whole page, from the store or from ``fill()`` (then stored when possible, as a
        page of the file at ``uri``, charged to ``charge``). Concurrent callers for one page
        share one ``fill()``; its exceptions reach them all."""
        ...

    def fill_run(
        self,
        page_ids: Sequence[PageId],
        fetch: Callable[[int, int], list[bytes]],
        uri: str,
        charge: Charge = NO_CHARGE,
    ) -> list[Fill]:
        """:meth:`get_or_fill` of consecutive pages of one file version (``page_ids`` in index
        order), one :class:`Fill` each, with one ``fetch(first index, count)`` — the pages'
        bytes, one item per page — per run of consecutive pages that are neither cached nor
        being filled by another caller; pages another caller is filling are joined, so
        concurrent callers fetch each page once. ``fetch``'s exceptions reach every caller of
        the pages it was fetching, but a TimeoutError: that is the fetching caller's own
        deadline (how long its client waits), not the joined callers', so each of them fetches
        the page again with its own ``fetch``."""
        ...

    def delete_file(self, file_id: str, version: str | None = None) -> int:
        """Drop the pages of one version of a file, or of all its versions; returns how many."""
        ...

    def delete_prefix(self, prefix: str) -> int:
        """Drop every page of every version of every file whose URI is ``prefix`` or lies under
        it on a segment boundary (``s3://b/a`` covers ``s3://b/a/x``, not ``s3://b/ab``);
        returns how many pages. Fills of those files already running are not stored."""
        ...

    def cached_bytes(self, file_id: str, version: str) -> int:
        """Bytes of that file version held in the store."""
        ...

    def cached_bytes_many(self, files: Sequence[tuple[str, str]]) -> list[int]:
        """:meth:`cached_bytes` of each ``(file_id, version)``, in order, in one look (a
        listing asks for every entry)."""
        ...

    def has_page(self, page_id: PageId) -> bool: ...

    def locate(
        self, file_id: str, version: str, first: int = 0, last: int | None = None
    ) -> PageLocations:
        """Where the stored pages ``first..last`` (to the end when ``last`` is None) of one
        file version are, for short-circuit reads (:mod:`pagestore.shortcircuit`); a store
        without page files lists none. Counts as an access for eviction. A page listed may be
        evicted at any time after: its reader then misses. Raises ValueError for a negative
        or reversed range."""
        ...

    def pin(self, file_id: str, pinned: bool = True) -> None:
        """Pin (or, ``pinned`` False, unpin) every version of a file: its pages stored now and
        those stored later are never evicted while pinned, as far as the bound on pinned bytes
        (``dora.worker.page.store.pin.max``) allows; past it they are stored evictable.
        Deleting the file's pages (an invalidation, a free) does not unpin it."""
        ...

    def pin_when(self, covers: Callable[[str], bool]) -> None:
        """Pin each file whose URI ``covers`` accepts as its pages are stored (the worker's
        pins and rules); ``covers`` is called with no lock of the store held."""
        ...

    def charge_restored(self, charge_of: ChargeOf) -> None:
        """Charge each page a restore finds to ``charge_of(its file's URI)`` (the quotas its
        path's rules give), as a page stored now would be; call it before :meth:`start`.
        ``charge_of`` is called with no lock of the store held."""
        ...

    def file_uris(self) -> dict[str, str]:
        """The URI of each file with pages stored, by file id (what a change of the rules'
        pins goes through). Waits for the store to be ready."""
        ...

    def pin_prefix(self, prefix: str, pinned: bool = True) -> int:
        """:meth:`pin` each file with pages stored whose URI is ``prefix`` or under it (see
        :meth:`delete_prefix`); how many files. Waits for the store to be ready."""
        ...
