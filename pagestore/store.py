"""The store on local disk: pages in one or more directories, each bounded in bytes, with
eviction, packs, background restore and fault handling. See :class:`DiskStore`."""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Callable, Sequence

from pagestore.api import ChargeOf, DirUsage, Fault, Keep, PageFault, PutResult, StoreStats
from pagestore.counters import Count
from pagestore.dirs import StoreDir, place
from pagestore.disk import ScanEntry
from pagestore.evict.storm import StormWatch
from pagestore.files import uri_under
from pagestore.index import PageEntry
from pagestore.options import PageStoreOptions
from pagestore.owner import ForeignPageDirError
from pagestore.pack import packed
from pagestore.page import CorruptPageError, PageId, PageKey, version_key
from pagestore.pins import PinState, pin_file
from pagestore.quota import NO_CHARGE, Charge, QuotaBook
from pagestore.reaper import DiskState, Reaper, Reservation
from pagestore.restore import remove_other_layouts, restore
from pagestore.shortcircuit import PageLocation, PageLocations

logger = logging.getLogger(__name__)
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
_DELETE_BATCH = 1024

# An eviction storm: a tenth of the store's pages evicted within STORM_WINDOW seconds, and at
# least STORM_MIN_PAGES (a tiny store churns without it meaning much). Warned about at most once
# a minute.
STORM_WINDOW = 10.0
STORM_MIN_PAGES = 100


class DiskStore:
    """Pages on local disk (a :class:`~pagestore.api.Store`). Thread-safe: any number of
    threads may read, write and delete.

    Locking: one store lock (``DiskState.lock``) guards the index, the evictors, the
    directories' accounting and the set of busy keys; it is held only for in-memory work, never
    for disk I/O. A read looks the page up under the lock and reads the file outside it; a write
    reserves space (evicting victims from the index) under the lock, unlinks the victims and
    writes its file outside it, and indexes the page under the lock again, asking the caller's
    :data:`~pagestore.api.Keep` there. A key is *busy* while its file is being written or
    unlinked (see :class:`~pagestore.reaper.DiskState`). A page evicted while it is being read
    is read whole (the open file survives the unlink) or missed (the file is gone). Each
    directory's FileTable, also under the store lock, keeps the URI of every file with pages
    there, so :meth:`files_under` finds them; the URI record on disk is written before a file's
    first page and unlinked after its last. Lock order: store lock, then the page cache's log
    lock (through ``Keep``) or the counter lock (leaves).

    A missing, short or corrupt page is dropped and raised as a PageFault; a write that fails
    is a :class:`PutResult`; a directory that vanishes is taken out of service with a log line.
    ``start()`` opens the directories and restores the index in the background: reads are
    served meanwhile (pages not yet restored are misses) and writes are refused (REJECTED)
    until :attr:`ready`, so usage never exceeds capacity.
    """

    def __init__(
        self, options: PageStoreOptions, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.options = options
        self.page_size = options.page_size
        self._clock = clock
        self._pins = PinState(options.pin_max.limit(options.capacity_bytes))
        self._quotas = QuotaBook(options.evictor)
        self._charge_of: ChargeOf = _no_charge
        self._state = DiskState(
            [
                StoreDir(
                    n,
                    d,
                    options.page_size,
                    options.evictor,
                    self._pins,
                    self._page_bytes,
                    self._quotas,
                )
                for n, d in enumerate(options.dirs)
            ]
        )
        self._lock = self._state.lock
        self._dirs = self._state.dirs
        self._index = self._state.index
        self._busy = self._state.busy
        self._counters = self._state.counters
        self._reaper = Reaper(self._state)
        capacity_pages = sum(d.capacity for d in self._dirs) // options.page_size
        self._storms = StormWatch(
            max(STORM_MIN_PAGES, capacity_pages // 10), STORM_WINDOW, clock=clock
        )
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._started = self._closed = False
        # Invalidations seen while restoring, so pages scanned after them are not revived.
        self._restore_invalidated: set[tuple[str, str | None]] | None = set()
        self._restore_prefixes: list[str] = []
        self._restored_pages = 0
        self._restore_seconds = 0.0
        self._restorer: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Open the directories (one that cannot be opened is out of service, logged) and
        restore the index in a background thread. Idempotent. Raises ForeignPageDirError,
        leaving every directory as it was, if one is not empty and not a page store's."""
        with self._lock:
            if self._started or self._closed:
                return
            self._started = True
        for d in self._dirs:
            try:
                d.disk.open()
            except OSError as exc:
                self._reaper.take_out_of_service(d, f"cannot be opened: {exc}")
            except ForeignPageDirError:
                self.close()
                raise
        self._reaper.start()
        self._restorer = threading.Thread(target=self._restore, name="pagestore-restore")
        self._restorer.daemon = True
        self._restorer.start()

    def close(self) -> None:
        """Stop the restore, finish pending deletions and release the directories."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        if self._restorer is not None:
            self._restorer.join()
        self._reaper.close()
        for d in self._dirs:
            d.disk.close()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def _restore(self) -> None:
        with self._lock:
            dirs = [(d.number, d.disk) for d in self._dirs if d.in_service]
        report = restore(dirs, self._admit, self._stop, self._clock)
        with self._lock:
            self._restore_invalidated = None
            self._restore_prefixes = []
            self._restored_pages = report.pages
            self._restore_seconds = report.seconds
        outcome = "page store ready" if report.complete else "page store restore stopped"
        # Dropped: pages and URI records the restore found unusable, orphaned or over capacity.
        logger.info(
            "%s: %d pages restored, %d files dropped in %.2fs",
            outcome,
            report.pages,
            report.removed,
            report.seconds,
        )
        if not report.complete:
            return
        self._ready.set()
        remove_other_layouts(dirs)

    def charge_restored(self, charge_of: ChargeOf) -> None:
        self._charge_of = charge_of

    def _admit(self, number: int, found: list[ScanEntry], uris: dict[str, str]) -> list[ScanEntry]:
        refused: list[ScanEntry] = []
        files = {entry.key.file_id for entry in found}
        charges = {fid: self._charge_of(uris[fid]) for fid in files if fid in uris}
        with self._lock:
            d = self._dirs[number]
            for entry in found:
                key, uri = entry.key, uris.get(entry.key.file_id)
                if (
                    uri is None
                    or not d.in_service
                    or key in self._index
                    or self._invalidated_while_restoring(key, uri)
                    or d.used + entry.size > d.capacity
                ):
                    refused.append(entry)
                    continue
                self._index.add(key, PageEntry(number, entry.size))
                self._quotas.expect(key, charges[key.file_id])
                d.evictor.on_put(key)
                d.used += entry.size
                d.files.adopt(key.file_id, uri, recorded=not entry.packed)
        return refused

    def _invalidated_while_restoring(self, key: PageKey, uri: str) -> bool:
        invalidated = self._restore_invalidated or set()
        return (
            (key.file_id, None) in invalidated
            or (key.file_id, key.version_key) in invalidated
            or any(uri_under(uri, prefix) for prefix in self._restore_prefixes)
        )

    # -- reads -------------------------------------------------------------------------------

    def read(self, page_id: PageId, offset: int, length: int | None) -> bytes | None:
        key = page_id.key
        with self._lock:
            entry = self._index.get(key)
            if entry is None:
                return None
            self._dirs[entry.dir].evictor.on_get(key)
        start = min(offset, entry.size)
        end = entry.size if length is None else min(entry.size, start + length)
        d = self._dirs[entry.dir]
        try:
            return d.disk.read(key, entry.size, start, end - start)
        except CorruptPageError as exc:
            fault = (f"corrupt in {d.disk.root}: {exc}", Fault.CORRUPT)
        except FileNotFoundError:
            if not d.disk.exists():
                self._reaper.take_out_of_service(d, "its directory disappeared")
                raise PageFault(f"{d.disk.root} disappeared", Fault.GONE, dropped=True) from None
            # Usually evicted or invalidated since the lookup (then the entry is gone already);
            # otherwise removed behind the store's back.
            fault = (f"gone from {d.disk.root}", Fault.GONE)
        except OSError as exc:
            fault = (f"unreadable in {d.disk.root}: {exc}", Fault.IO_ERROR)
        raise PageFault(*fault, dropped=self._drop(key, entry))

    def _drop(self, key: PageKey, entry: PageEntry) -> bool:
        """Remove a page found bad, unless it was dropped or replaced since it was looked up;
        whether it was removed."""
        with self._lock:
            if self._index.remove(key, entry) is None:
                return False
            d = self._dirs[entry.dir]
            d.evictor.on_delete(key)
            d.used -= entry.size
            self._busy.add(key)
            records = self._reaper.release(d, key.file_id)
        self._reaper.unlink(d, [key], records)
        return True

    def has_page(self, page_id: PageId) -> bool:
        with self._lock:
            return page_id.key in self._index

    def locate(self, file_id: str, version: str, first: int, last: int | None) -> PageLocations:
        vkey = version_key(version)
        pages: list[PageLocation] = []
        with self._lock:
            for index, entry in self._index.pages_between(file_id, vkey, first, last):
                key = PageKey(file_id, vkey, index)
                d = self._dirs[entry.dir]
                d.evictor.on_get(key)
                path, at = d.disk.location(key)
                pages.append(PageLocation(index, path, entry.size, at))
        return PageLocations(file_id, version, self.page_size, tuple(pages))

    def cached_bytes_many(self, files: Sequence[tuple[str, str]]) -> list[int]:
        keys = [(file_id, version_key(version)) for file_id, version in files]
        with self._lock:
            return [self._index.bytes_of(file_id, vkey) for file_id, vkey in keys]

    def _page_bytes(self, key: PageKey) -> int:
        """A stored page's data size (0 if gone); the store lock held."""
        entry = self._index.get(key)
        return 0 if entry is None else entry.size

    def pin(self, file_id: str, pinned: bool) -> None:
        with self._lock:
            pin_file(self._pins, [d.evictor for d in self._dirs], file_id, pinned)

    # -- writes ------------------------------------------------------------------------------

    def put_many(
        self, pages: Sequence[tuple[PageId, bytes, str]], keep: Keep, charge: Charge = NO_CHARGE
    ) -> list[PutResult]:
        """See Store.put_many: the small pages are written to a pack together, one write per
        directory; every other page to a file of its own."""
        small = [page for page in pages if self._packs(len(page[1]))]
        stored = iter(self._store_packed(small, keep, charge) if small else [])
        return [
            next(stored)
            if self._packs(len(data))
            else self._store(page_id, data, uri, keep, charge)
            for page_id, data, uri in pages
        ]

    def _store(
        self, page_id: PageId, data: bytes, uri: str, keep: Keep, charge: Charge
    ) -> PutResult:
        if len(data) > self.page_size:
            return PutResult.TOO_LARGE
        key = page_id.key
        reservation = self._reserve(key, len(data), uri, charge)
        if isinstance(reservation, PutResult):
            return reservation
        d = reservation.dir
        self._reaper.unlink_evicted(reservation)
        try:
            if reservation.write_record:
                d.disk.write_record(key.file_id, uri)
                with self._lock:
                    d.files.written(key.file_id)
            d.disk.write(key, data)
        except OSError as exc:
            self._abandon(d, key, len(data))
            return self._write_failed(d, exc)
        return self._commit_many(d, [(key, len(data), uri)], keep, charge)[0]

    def _packs(self, size: int) -> bool:
        return packed(size, self.options.pack_limit, self.page_size)

    def _store_packed(
        self, pages: Sequence[tuple[PageId, bytes, str]], keep: Keep, charge: Charge
    ) -> list[PutResult]:
        """Store small pages (uncounted), those of one directory in one write to its pack. A
        page in a pack carries its file's URI, so no URI record is written for it."""
        results: list[PutResult] = [PutResult.OK] * len(pages)
        by_dir: dict[int, list[tuple[int, PageKey, bytes, str]]] = {}
        reservations: list[Reservation] = []
        with self._lock:
            for pos, (page_id, data, uri) in enumerate(pages):
                key = page_id.key
                reservation = self._reserve_locked(key, len(data), uri, charge)
                if isinstance(reservation, PutResult):
                    results[pos] = reservation
                    continue
                reservations.append(reservation)
                by_dir.setdefault(reservation.dir.number, []).append((pos, key, data, uri))
        self._evicted(sum(r.evicted for r in reservations))
        for reservation in reservations:
            self._reaper.unlink_evicted(reservation)
        for number, group in by_dir.items():
            d = self._dirs[number]
            try:
                d.disk.write_packed([(key, data, uri) for _, key, data, uri in group])
            except OSError as exc:
                for _, key, data, _ in group:
                    self._abandon(d, key, len(data))
                failure = self._write_failed(d, exc)
                for pos, *_ in group:
                    results[pos] = failure
                continue
            committed = self._commit_many(
                d, [(k, len(data), uri) for _, k, data, uri in group], keep, charge
            )
            for (pos, *_), result in zip(group, committed, strict=True):
                results[pos] = result
        return results

    def _abandon(self, d: StoreDir, key: PageKey, size: int) -> None:
        """Undo the reservation of a page whose write failed."""
        with self._lock:
            d.reserved -= size
            self._busy.discard(key)
            records = self._reaper.release(d, key.file_id)
        self._reaper.unlink(d, [], records)

    def _reserve(
        self, key: PageKey, size: int, uri: str, charge: Charge
    ) -> PutResult | Reservation:
        """Pick the page's directory, take a reference on its file and make room in it (and
        in its quotas); the key becomes busy."""
        with self._lock:
            reservation = self._reserve_locked(key, size, uri, charge)
        if isinstance(reservation, Reservation):
            self._evicted(reservation.evicted)
        return reservation

    def _reserve_locked(
        self, key: PageKey, size: int, uri: str, charge: Charge
    ) -> PutResult | Reservation:
        if self._closed or not self._ready.is_set() or key in self._busy:
            return PutResult.REJECTED
        if key in self._index:
            return PutResult.OK
        d = place(self._dirs, key.file_id)
        if d is None:
            return PutResult.FAILED
        if d.reserved + size > d.capacity:
            return PutResult.NO_SPACE  # the space is taken by writes still in progress
        if not self._quotas.can_fit(charge, size):
            return PutResult.OVER_QUOTA
        # The reference comes first, so evicting the file's other pages keeps its record.
        reservation = Reservation(d, write_record=d.files.acquire(key.file_id, uri))
        while (victim := self._quotas.next_victim(charge, size)) is not None:
            self._reaper.evict(reservation, victim)  # the quota's page: maybe in another dir
        while d.used + d.reserved + size > d.capacity:
            victim = d.evictor.evict()
            if victim is None:
                break
            self._reaper.evict(reservation, victim, d)
        d.reserved += size
        self._busy.add(key)
        return reservation

    def _evicted(self, pages: int) -> None:
        """Count pages evicted to make room, and warn of an eviction storm."""
        if pages:
            self._counters.add(Count.EVICTIONS, pages)
            storm = self._storms.record(pages)
            if storm is not None:
                logger.warning(
                    "eviction storm: %d pages evicted in %.1fs (%d since the last such warning; "
                    "a storm is %d in %.0fs): the data read through the cache does not fit it",
                    storm.pages,
                    storm.seconds,
                    storm.since_last,
                    self._storms.threshold,
                    STORM_WINDOW,
                )

    def _commit_many(
        self, d: StoreDir, pages: Sequence[tuple[PageKey, int, str]], keep: Keep, charge: Charge
    ) -> list[PutResult]:
        """Index written pages ``(key, size, uri)`` of one directory, in one lock hold; a page
        ``keep`` refuses (its file was invalidated meanwhile) is removed instead (REJECTED)."""
        results: list[PutResult] = []
        stale: list[PageKey] = []
        records: list[str] = []
        with self._lock:
            for key, size, uri in pages:
                d.reserved -= size
                d.last_errno = None
                if not d.in_service or not keep(key, uri):
                    records += self._reaper.release(d, key.file_id)
                    stale.append(key)
                    results.append(PutResult.REJECTED)
                    continue
                self._index.add(key, PageEntry(d.number, size))
                self._quotas.expect(key, charge)
                d.evictor.on_put(key)
                d.used += size
                self._busy.discard(key)
                results.append(PutResult.OK)
        # Stale keys stay busy until their files are gone, so no newer write is unlinked here.
        if stale:
            self._reaper.unlink(d, stale, records)
        return results

    def _write_failed(self, d: StoreDir, exc: OSError) -> PutResult:
        self._counters.add(Count.IO_ERRORS)
        if exc.errno == errno.ENOENT and not d.disk.exists():
            self._reaper.take_out_of_service(d, "its directory disappeared")
            return PutResult.FAILED
        with self._lock:
            first = d.last_errno != exc.errno
            d.last_errno = exc.errno
        if first:
            logger.warning("writing pages to %s fails: %s", d.disk.root, exc)
        return PutResult.NO_SPACE if exc.errno in _DISK_FULL else PutResult.FAILED

    # -- invalidation ------------------------------------------------------------------------

    def delete_file(self, file_id: str, version: str | None) -> int:
        """Drop the pages from the index, a batch per lock hold so readers of other files are
        never held up long; their files are unlinked in the background."""
        vkey = None if version is None else version_key(version)
        by_dir: dict[int, tuple[list[PageKey], list[str]]] = {}
        with self._lock:
            if self._restore_invalidated is not None:
                self._restore_invalidated.add((file_id, vkey))
            keys = self._index.pages_of(file_id, vkey)
        for start in range(0, len(keys), _DELETE_BATCH):
            with self._lock:
                for key in keys[start : start + _DELETE_BATCH]:
                    entry = self._index.get(key)  # None if evicted since
                    if entry is not None:
                        doomed, records = by_dir.setdefault(entry.dir, ([], []))
                        records += self._reaper.forget(self._dirs[entry.dir], key)
                        doomed.append(key)
        for number, (doomed, records) in by_dir.items():
            self._reaper.unlink_later(self._dirs[number], doomed, records)
        return sum(len(doomed) for doomed, _ in by_dir.values())

    def files_under(self, prefix: str) -> set[str]:
        with self._lock:
            if self._restore_invalidated is not None:  # pages scanned later are not revived
                self._restore_prefixes.append(prefix)
            return {file_id for d in self._dirs for file_id in d.files.under(prefix)}

    def file_uris(self) -> dict[str, str]:
        with self._lock:
            return {file_id: uri for d in self._dirs for file_id, uri in d.files.uris().items()}

    # -- gauges ------------------------------------------------------------------------------

    @property
    def page_count(self) -> int:
        with self._lock:
            return len(self._index)

    @property
    def used_bytes(self) -> int:
        with self._lock:
            return sum(d.used for d in self._dirs)

    @property
    def capacity_bytes(self) -> int:
        with self._lock:
            return sum(d.capacity for d in self._dirs if d.in_service)

    def stats(self) -> StoreStats:
        counts, _ = self._counters.snapshot()
        with self._lock:
            return StoreStats(
                evictions=counts[Count.EVICTIONS],
                io_errors=counts[Count.IO_ERRORS],
                pages=len(self._index),
                used_bytes=sum(d.used for d in self._dirs),
                capacity_bytes=sum(d.capacity for d in self._dirs if d.in_service),
                ready=self._ready.is_set(),
                dirs_in_service=sum(1 for d in self._dirs if d.in_service),
                restored_pages=self._restored_pages,
                restore_seconds=self._restore_seconds,
                pack_bytes=sum(d.disk.pack_bytes() for d in self._dirs if d.in_service),
                pinned_bytes=self._pins.used,
                pin_limit_bytes=self._pins.limit,
                quotas=self._quotas.usage(),
                dirs=tuple(
                    DirUsage(str(d.disk.root), d.used, d.capacity, d.in_service, len(d.files))
                    for d in self._dirs
                ),
            )


def _no_charge(uri: str) -> Charge:
    return NO_CHARGE
