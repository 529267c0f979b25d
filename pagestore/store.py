"""The page store on local disk: pages in one or more directories, each bounded in bytes, with
eviction, invalidation, background restore and fault handling. See :class:`LocalPageStore`."""

from __future__ import annotations

import errno
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from pagestore.api import DirUsage, Lookup, PageRead, PageStore, PutResult, StoreStats
from pagestore.base import BasePageStore, Count, Invalidation, check_pages, check_range
from pagestore.dirs import StoreDir, place
from pagestore.disk import ScanEntry
from pagestore.evict.storm import StormWatch
from pagestore.files import uri_under
from pagestore.index import PageEntry, PageIndex
from pagestore.options import PageStoreOptions
from pagestore.owner import ForeignPageDirError
from pagestore.pack import packed
from pagestore.page import CorruptPageError, PageId, PageKey, version_key
from pagestore.restore import remove_other_layouts, restore
from pagestore.shortcircuit import PageLocation, PageLocations

__all__ = [
    "ForeignPageDirError",
    "LocalPageStore",
    "PageStore",
    "PageStoreOptions",
    "PutResult",
    "StoreStats",
]

logger = logging.getLogger(__name__)
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
_DELETE_BATCH = 1024
_T = TypeVar("_T")

# An eviction storm: a tenth of the store's pages evicted within STORM_WINDOW seconds, and at
# least STORM_MIN_PAGES (a tiny store churns without it meaning much). Warned about at most once
# a minute.
STORM_WINDOW = 10.0
STORM_MIN_PAGES = 100


@dataclass
class _Reservation:
    """Room made for a page in ``dir``: the pages evicted for it and the records of files they
    left without pages (both to unlink), and whether the page's file needs its record."""

    dir: StoreDir
    write_record: bool
    victims: list[PageKey] = field(default_factory=list)
    records: list[str] = field(default_factory=list)


class LocalPageStore(BasePageStore):
    """Pages on local disk. Thread-safe: any number of threads may read, fill and invalidate.

    Locking: one store lock guards the index, the evictors, the directories' accounting and the
    set of busy keys; it is held only for in-memory work, never for disk I/O. A read looks the
    page up under the lock and reads the file outside it; a write reserves space (evicting
    victims from the index) under the lock, unlinks the victims and writes its file outside it,
    and indexes the page under the lock again. A key is *busy* while its file is being written
    or unlinked, and no other writer touches a busy key, so a late unlink never removes a newer
    file. A page evicted while it is being read is read whole (the open file survives the unlink)
    or missed (the file is gone). Each directory's FileTable, also under the store lock, keeps
    the URI of every file with pages there, so :meth:`delete_prefix` finds them; the URI record
    on disk is written before a file's first page and unlinked after its last. Lock order:
    store lock, then the counter lock (a leaf); the single-flight lock is never held with
    either.

    Failures never reach the caller: a missing, short or corrupt page is a miss and is dropped;
    a write that fails is a :class:`PutResult`; a directory that vanishes is taken out of
    service with a log line. ``start()`` opens the directories and restores the index in the
    background: reads are served meanwhile (pages not yet restored are misses) and writes are
    refused (REJECTED) until :attr:`ready`, so usage never exceeds capacity.
    """

    def __init__(
        self, options: PageStoreOptions, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.options = options
        self.page_size = options.page_size
        self._clock = clock
        self._dirs = [
            StoreDir(n, d, options.page_size, options.evictor) for n, d in enumerate(options.dirs)
        ]
        self._index = PageIndex()
        capacity_pages = sum(d.capacity for d in self._dirs) // options.page_size
        self._storms = StormWatch(
            max(STORM_MIN_PAGES, capacity_pages // 10), STORM_WINDOW, clock=clock
        )
        self._busy: set[PageKey] = set()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._started = self._closed = False
        # Invalidations seen while restoring, so pages scanned after them are not revived.
        self._restore_invalidated: set[tuple[str, str | None]] | None = set()
        self._restore_prefixes: list[str] = []
        self._restored_pages = 0
        self._restore_seconds = 0.0
        self._restorer: threading.Thread | None = None
        self._janitor: ThreadPoolExecutor | None = None

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
                self._take_out_of_service(d, f"cannot be opened: {exc}")
            except ForeignPageDirError:
                self.close()
                raise
        self._janitor = ThreadPoolExecutor(1, thread_name_prefix="pagestore-janitor")
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
        if self._janitor is not None:
            self._janitor.shutdown(wait=True)
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

    def _admit(self, number: int, found: list[ScanEntry], uris: dict[str, str]) -> list[ScanEntry]:
        refused: list[ScanEntry] = []
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

    def read(self, page_id: PageId, offset: int = 0, length: int | None = None) -> PageRead:
        check_range(offset, length)
        key = page_id.key
        with self._lock:
            entry = self._index.get(key)
            if entry is not None:
                self._dirs[entry.dir].evictor.on_get(key)
        data: bytes | Lookup = Lookup.MISS
        if entry is not None:
            start = min(offset, entry.size)
            end = entry.size if length is None else min(entry.size, start + length)
            data = self._read(self._dirs[entry.dir], key, entry, start, end - start)
        if isinstance(data, Lookup):
            self._counters.add(Count.MISSES)
            return PageRead(data)
        self._counters.add_hit(len(data))
        return PageRead(Lookup.HIT, data)

    def _read(
        self, d: StoreDir, key: PageKey, entry: PageEntry, offset: int, length: int
    ) -> bytes | Lookup:
        """Bytes of the page's data, or MISS (evicted since it was looked up) or FAILED (it
        could not be served, and is dropped)."""
        try:
            return d.disk.read(key, entry.size, offset, length)
        except CorruptPageError as exc:
            logger.warning("dropping corrupt page %s in %s: %s", key.file_name, d.disk.root, exc)
            self._counters.add(Count.CORRUPT_PAGES)
        except FileNotFoundError:
            if not d.disk.exists():
                self._take_out_of_service(d, "its directory disappeared")
                return Lookup.FAILED
            # Usually evicted or invalidated since the lookup (then the entry is gone already);
            # otherwise removed behind the store's back.
        except OSError as exc:
            logger.warning("dropping unreadable page %s in %s: %s", key.file_name, d.disk.root, exc)
            self._counters.add(Count.IO_ERRORS)
        return Lookup.FAILED if self._drop(key, entry) else Lookup.MISS

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
            records = self._release(d, key.file_id)
        self._unlink(d, [key], records)
        return True

    def locate(
        self, file_id: str, version: str, first: int = 0, last: int | None = None
    ) -> PageLocations:
        check_pages(first, last)
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

    def has_page(self, page_id: PageId) -> bool:
        with self._lock:
            return page_id.key in self._index

    def cached_bytes(self, file_id: str, version: str) -> int:
        with self._lock:
            return self._index.bytes_of(file_id, version_key(version))

    def cached_bytes_many(self, files: Sequence[tuple[str, str]]) -> list[int]:
        keys = [(file_id, version_key(version)) for file_id, version in files]
        with self._lock:
            return [self._index.bytes_of(file_id, vkey) for file_id, vkey in keys]

    # -- writes ------------------------------------------------------------------------------

    def put_many(self, pages: Sequence[tuple[PageId, bytes, str]], since: int) -> list[PutResult]:
        """See PageStore.put_many: the small pages are written to a pack together, one write
        per directory."""
        small = [page for page in pages if self._packs(len(page[1]))]
        stored = iter(self._store_packed(small, since))
        results = [
            next(stored) if self._packs(len(data)) else self._store(page_id, data, uri, since)
            for page_id, data, uri in pages
        ]
        for (_, data, _), result in zip(pages, results, strict=True):
            self._counters.add_put(result, len(data))
        return results

    def _store(self, page_id: PageId, data: bytes, uri: str, since: int) -> PutResult:
        if len(data) > self.page_size:
            return PutResult.TOO_LARGE
        if self._packs(len(data)):
            return self._store_packed([(page_id, data, uri)], since)[0]
        key = page_id.key
        reservation = self._reserve(key, len(data), uri)
        if isinstance(reservation, PutResult):
            return reservation
        d = reservation.dir
        self._unlink(d, reservation.victims, reservation.records)
        try:
            if reservation.write_record:
                d.disk.write_record(key.file_id, uri)
                with self._lock:
                    d.files.written(key.file_id)
            d.disk.write(key, data)
        except OSError as exc:
            self._abandon(d, key, len(data))
            return self._write_failed(d, exc)
        return self._commit(d, key, len(data), uri, since)

    def _packs(self, size: int) -> bool:
        return packed(size, self.options.pack_limit, self.page_size)

    def _store_packed(
        self, pages: Sequence[tuple[PageId, bytes, str]], since: int
    ) -> list[PutResult]:
        """Store small pages (uncounted), those of one directory in one write to its pack. A
        page in a pack carries its file's URI, so no URI record is written for it."""
        results: list[PutResult] = [PutResult.OK] * len(pages)
        by_dir: dict[int, list[tuple[int, PageKey, bytes, str]]] = {}
        reservations: list[_Reservation] = []
        with self._lock:
            for pos, (page_id, data, uri) in enumerate(pages):
                key = page_id.key
                reservation = self._reserve_locked(key, len(data), uri)
                if isinstance(reservation, PutResult):
                    results[pos] = reservation
                    continue
                reservations.append(reservation)
                by_dir.setdefault(reservation.dir.number, []).append((pos, key, data, uri))
        self._evicted(sum(len(r.victims) for r in reservations))
        for reservation in reservations:
            self._unlink(reservation.dir, reservation.victims, reservation.records)
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
                d, [(k, len(data), uri) for _, k, data, uri in group], since
            )
            for (pos, *_), result in zip(group, committed, strict=True):
                results[pos] = result
        return results

    def _abandon(self, d: StoreDir, key: PageKey, size: int) -> None:
        """Undo the reservation of a page whose write failed."""
        with self._lock:
            d.reserved -= size
            self._busy.discard(key)
            records = self._release(d, key.file_id)
        self._unlink(d, [], records)

    def _reserve(self, key: PageKey, size: int, uri: str) -> PutResult | _Reservation:
        """Pick the page's directory, take a reference on its file and make room in it; the
        key becomes busy."""
        with self._lock:
            reservation = self._reserve_locked(key, size, uri)
        if isinstance(reservation, _Reservation):
            self._evicted(len(reservation.victims))
        return reservation

    def _reserve_locked(self, key: PageKey, size: int, uri: str) -> PutResult | _Reservation:
        if self._closed or not self._ready.is_set() or key in self._busy:
            return PutResult.REJECTED
        if key in self._index:
            return PutResult.OK
        d = place(self._dirs, key.file_id)
        if d is None:
            return PutResult.FAILED
        if d.reserved + size > d.capacity:
            return PutResult.NO_SPACE  # the space is taken by writes still in progress
        # The reference comes first, so evicting the file's other pages keeps its record.
        reservation = _Reservation(d, write_record=d.files.acquire(key.file_id, uri))
        while d.used + d.reserved + size > d.capacity:
            victim = d.evictor.evict()
            if victim is None:
                break
            reservation.records += self._forget(d, victim)
            reservation.victims.append(victim)
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

    def _commit(self, d: StoreDir, key: PageKey, size: int, uri: str, since: int) -> PutResult:
        return self._commit_many(d, [(key, size, uri)], since)[0]

    def _commit_many(
        self, d: StoreDir, pages: Sequence[tuple[PageKey, int, str]], since: int
    ) -> list[PutResult]:
        """Index written pages ``(key, size, uri)`` of one directory, in one lock hold; a page
        whose file was invalidated since ``since`` is removed instead (REJECTED)."""
        results: list[PutResult] = []
        stale: list[PageKey] = []
        records: list[str] = []
        with self._lock:
            for key, size, uri in pages:
                d.reserved -= size
                d.last_errno = None
                if not d.in_service or self._invalidations.invalidated_since(since, key, uri):
                    records += self._release(d, key.file_id)
                    stale.append(key)
                    results.append(PutResult.REJECTED)
                    continue
                self._index.add(key, PageEntry(d.number, size))
                d.evictor.on_put(key)
                d.used += size
                self._busy.discard(key)
                results.append(PutResult.OK)
        # Stale keys stay busy until their files are gone, so no newer write is unlinked here.
        if stale:
            self._unlink(d, stale, records)
        return results

    def _write_failed(self, d: StoreDir, exc: OSError) -> PutResult:
        self._counters.add(Count.IO_ERRORS)
        if exc.errno == errno.ENOENT and not d.disk.exists():
            self._take_out_of_service(d, "its directory disappeared")
            return PutResult.FAILED
        with self._lock:
            first = d.last_errno != exc.errno
            d.last_errno = exc.errno
        if first:
            logger.warning("writing pages to %s fails: %s", d.disk.root, exc)
        return PutResult.NO_SPACE if exc.errno in _DISK_FULL else PutResult.FAILED

    # -- invalidation and removal ------------------------------------------------------------

    def delete_file(self, file_id: str, version: str | None = None) -> int:
        """Drop the pages from the index, a batch per lock hold so readers of other files are
        never held up long; their files are unlinked in the background. Writes of the file that
        started earlier are refused when they finish (see InvalidationLog)."""
        vkey = None if version is None else version_key(version)
        by_dir: dict[int, tuple[list[PageKey], list[str]]] = {}
        with self._lock:
            self._invalidations.record(Invalidation(file_id, vkey))
            if self._restore_invalidated is not None:
                self._restore_invalidated.add((file_id, vkey))
            keys = self._index.pages_of(file_id, vkey)
        for start in range(0, len(keys), _DELETE_BATCH):
            with self._lock:
                for key in keys[start : start + _DELETE_BATCH]:
                    entry = self._index.get(key)  # None if evicted since
                    if entry is not None:
                        doomed, records = by_dir.setdefault(entry.dir, ([], []))
                        records += self._forget(self._dirs[entry.dir], key)
                        doomed.append(key)
        dropped = sum(len(doomed) for doomed, _ in by_dir.values())
        if dropped:
            self._counters.add(Count.INVALIDATED_PAGES, dropped)
        for number, (doomed, records) in by_dir.items():
            self._unlink_later(self._dirs[number], doomed, records)
        return dropped

    def _prefix_invalidated(self, prefix: str) -> set[str]:
        if self._restore_invalidated is not None:  # pages scanned later are not revived
            self._restore_prefixes.append(prefix)
        return {file_id for d in self._dirs for file_id in d.files.under(prefix)}

    def _forget(self, d: StoreDir, key: PageKey) -> list[str]:
        """Remove a page from the index (under the lock); the caller unlinks its file, and the
        records returned (its file's, if this was the file's last page)."""
        entry = self._index.remove(key)
        d.evictor.on_delete(key)
        self._busy.add(key)
        if entry is None:
            return []
        d.used -= entry.size
        return self._release(d, key.file_id)

    @staticmethod
    def _release(d: StoreDir, file_id: str) -> list[str]:
        """Drop a page's reference on its file (under the lock); the file ids whose record the
        caller must unlink (and pass to :meth:`_unlink`)."""
        return [file_id] if d.files.release(file_id) else []

    def _unlink_later(self, d: StoreDir, keys: list[PageKey], records: list[str]) -> None:
        try:
            if self._janitor is not None:
                self._janitor.submit(self._unlink, d, keys, records)
                return
        except RuntimeError:
            pass  # the janitor has shut down (the store is closing): unlink here instead
        self._unlink(d, keys, records)

    def _unlink(self, d: StoreDir, keys: list[PageKey], records: list[str]) -> None:
        """Unlink page files of keys made busy by the caller, releasing each key as soon as its
        file is gone, then unlink the records of files left without pages (see FileTable).

        Each key is released on its own: a file read again right after its invalidation (same
        version, same keys) stores each page once that page's old file is gone, instead of
        having every write refused until the whole file is unlinked (a 1 GB file re-read at once
        lost its first 200 pages that way)."""
        released = 0
        try:
            for key in keys:
                self._io(d.disk.unlink, key, key.file_name)
                with self._lock:
                    self._busy.discard(key)
                released += 1
        finally:
            if released < len(keys):
                with self._lock:
                    self._busy.difference_update(keys[released:])
        if keys:
            self._drain(d, d.disk.take_sparse())
        for file_id in records:
            self._io(d.disk.unlink_record, file_id, f"the URI record of {file_id}")
            with self._lock:
                rewrite = d.files.removed(file_id)
            if rewrite is not None and self._io(
                functools.partial(d.disk.write_record, uri=rewrite), file_id, "a URI record"
            ):
                with self._lock:
                    d.files.written(file_id)

    def _drain(self, d: StoreDir, keys: list[PageKey]) -> None:
        """Drop the last pages of packs that became sparse (see ``Pack.sparse``), as evictions,
        so their packs are unlinked and the space they hold comes back."""
        doomed: list[PageKey] = []
        records: list[str] = []
        with self._lock:
            for key in keys:
                entry = self._index.get(key)
                if entry is not None and entry.dir == d.number and key not in self._busy:
                    records += self._forget(d, key)
                    doomed.append(key)
        if doomed:
            self._counters.add(Count.EVICTIONS, len(doomed))
            self._unlink(d, doomed, records)

    def _io(self, action: Callable[[_T], None], what: _T, name: str) -> bool:
        """Run an unlink (or a record's rewrite); a failure is counted and logged, and a file
        left behind is an orphan the next restore removes."""
        try:
            action(what)
        except OSError as exc:
            self._counters.add(Count.IO_ERRORS)
            logger.warning("removing or writing %s failed: %s", name, exc)
            return False
        return True

    def _take_out_of_service(self, d: StoreDir, reason: str) -> None:
        with self._lock:
            if not d.in_service:
                return
            d.take_out_of_service()
            dropped = [key for key, entry in self._index if entry.dir == d.number]
            for key in dropped:
                self._index.remove(key)
        logger.error(
            "page directory %s is out of service (%s); %d pages dropped from the index",
            d.disk.root,
            reason,
            len(dropped),
        )

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
        with self._lock:
            return self._stats(
                pages=len(self._index),
                used_bytes=sum(d.used for d in self._dirs),
                capacity_bytes=sum(d.capacity for d in self._dirs if d.in_service),
                ready=self._ready.is_set(),
                dirs_in_service=sum(1 for d in self._dirs if d.in_service),
                restored_pages=self._restored_pages,
                restore_seconds=self._restore_seconds,
                pack_bytes=sum(d.disk.pack_bytes() for d in self._dirs if d.in_service),
                dirs=tuple(
                    DirUsage(str(d.disk.root), d.used, d.capacity, d.in_service, len(d.files))
                    for d in self._dirs
                ),
            )
