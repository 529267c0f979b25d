"""The page store on local disk: pages in one or more directories, each bounded in bytes, with
eviction, invalidation, background restore and fault handling. See :class:`LocalPageStore`."""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from pagestore.api import PageStore, PutResult, StoreStats
from pagestore.base import BasePageStore, Count, check_range, slice_page
from pagestore.dirs import StoreDir, place
from pagestore.disk import ScanEntry
from pagestore.index import PageEntry, PageIndex
from pagestore.options import PageStoreOptions
from pagestore.owner import ForeignPageDirError
from pagestore.page import CorruptPageError, PageId, PageKey, version_key
from pagestore.restore import remove_other_layouts, restore

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


class LocalPageStore(BasePageStore):
    """Pages on local disk. Thread-safe: any number of threads may read, fill and invalidate.

    Locking: one store lock guards the index, the evictors, the directories' accounting and the
    set of busy keys; it is held only for in-memory work, never for disk I/O. A read looks the
    page up under the lock and reads the file outside it; a write reserves space (evicting
    victims from the index) under the lock, unlinks the victims and writes its file outside it,
    and indexes the page under the lock again. A key is *busy* while its file is being written
    or unlinked, and no other writer touches a busy key, so a late unlink never removes a newer
    file. A page evicted while it is being read is read whole (the open file survives the unlink)
    or missed (the file is gone). Lock order: store lock, then the counter lock (a leaf); the
    single-flight lock is never held with either.

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
        self._busy: set[PageKey] = set()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._started = self._closed = False
        # Invalidations seen while restoring, so pages scanned after them are not revived.
        self._restore_invalidated: set[tuple[str, str | None]] | None = set()
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
            self._restored_pages = report.pages
            self._restore_seconds = report.seconds
        if not report.complete:
            return
        self._ready.set()
        logger.info(
            "page store ready: %d pages restored in %.2fs, %d files removed",
            report.pages,
            report.seconds,
            report.removed,
        )
        remove_other_layouts(dirs)

    def _admit(self, number: int, found: list[ScanEntry]) -> list[ScanEntry]:
        refused: list[ScanEntry] = []
        with self._lock:
            d = self._dirs[number]
            invalidated = self._restore_invalidated or set()
            for entry in found:
                key = entry.key
                if (
                    key is None
                    or not d.in_service
                    or key in self._index
                    or (key.file_id, None) in invalidated
                    or (key.file_id, key.version_key) in invalidated
                    or d.used + entry.size > d.capacity
                ):
                    refused.append(entry)
                    continue
                self._index.add(key, PageEntry(number, entry.size))
                d.evictor.on_put(key)
                d.used += entry.size
        return refused

    # -- reads -------------------------------------------------------------------------------

    def get(self, page_id: PageId, offset: int = 0, length: int | None = None) -> bytes | None:
        check_range(offset, length)
        key = page_id.key
        with self._lock:
            entry = self._index.get(key)
            if entry is not None:
                self._dirs[entry.dir].evictor.on_get(key)
        data = None if entry is None else self._read(self._dirs[entry.dir], key, entry)
        if data is None:
            self._counters.add(Count.MISSES)
            return None
        data = slice_page(data, offset, length)
        self._counters.add_hit(len(data))
        return data

    def _read(self, d: StoreDir, key: PageKey, entry: PageEntry) -> bytes | None:
        try:
            return d.disk.read(key, entry.size)
        except CorruptPageError as exc:
            logger.warning("dropping corrupt page %s in %s: %s", key.file_name, d.disk.root, exc)
            self._counters.add(Count.CORRUPT_PAGES)
        except FileNotFoundError:
            # Usually evicted or invalidated since the lookup (then the entry is gone already).
            if not d.disk.exists():
                self._take_out_of_service(d, "its directory disappeared")
                return None
        except OSError as exc:
            logger.warning("dropping unreadable page %s in %s: %s", key.file_name, d.disk.root, exc)
            self._counters.add(Count.IO_ERRORS)
        self._drop(key, entry)
        return None

    def _drop(self, key: PageKey, entry: PageEntry) -> None:
        """Remove a page found bad, unless it was replaced since it was looked up."""
        with self._lock:
            if self._index.remove(key, entry) is None:
                return
            d = self._dirs[entry.dir]
            d.evictor.on_delete(key)
            d.used -= entry.size
            self._busy.add(key)
        self._unlink(d, [key])

    def has_page(self, page_id: PageId) -> bool:
        with self._lock:
            return page_id.key in self._index

    def cached_bytes(self, file_id: str, version: str) -> int:
        with self._lock:
            return self._index.bytes_of(file_id, version_key(version))

    # -- writes ------------------------------------------------------------------------------

    def _store(self, page_id: PageId, data: bytes, since: int) -> PutResult:
        if len(data) > self.page_size:
            return PutResult.TOO_LARGE
        key = page_id.key
        reservation = self._reserve(key, len(data))
        if isinstance(reservation, PutResult):
            return reservation
        d, victims = reservation
        self._unlink(d, victims)
        try:
            d.disk.write(key, data)
        except OSError as exc:
            with self._lock:
                d.reserved -= len(data)
                self._busy.discard(key)
            return self._write_failed(d, exc)
        return self._commit(d, key, len(data), since)

    def _reserve(self, key: PageKey, size: int) -> PutResult | tuple[StoreDir, list[PageKey]]:
        """Pick the page's directory and make room in it; the key becomes busy."""
        with self._lock:
            if self._closed or not self._ready.is_set() or key in self._busy:
                return PutResult.REJECTED
            if key in self._index:
                return PutResult.OK
            d = place(self._dirs, key.file_id)
            if d is None:
                return PutResult.FAILED
            if d.reserved + size > d.capacity:
                return PutResult.NO_SPACE  # the space is taken by writes still in progress
            victims: list[PageKey] = []
            while d.used + d.reserved + size > d.capacity:
                victim = d.evictor.evict()
                if victim is None:
                    break
                self._forget(d, victim)
                victims.append(victim)
            d.reserved += size
            self._busy.add(key)
        if victims:
            self._counters.add(Count.EVICTIONS, len(victims))
        return d, victims

    def _commit(self, d: StoreDir, key: PageKey, size: int, since: int) -> PutResult:
        with self._lock:
            d.reserved -= size
            d.last_errno = None
            stale = not d.in_service or self._invalidations.invalidated_since(since, key)
            if not stale:
                self._index.add(key, PageEntry(d.number, size))
                d.evictor.on_put(key)
                d.used += size
                self._busy.discard(key)
                return PutResult.OK
        # The key stays busy until its file is gone, so no newer write can be unlinked here.
        self._unlink(d, [key])
        return PutResult.REJECTED

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
        by_dir: dict[int, list[PageKey]] = {}
        with self._lock:
            self._invalidations.record(file_id, vkey)
            if self._restore_invalidated is not None:
                self._restore_invalidated.add((file_id, vkey))
            keys = self._index.pages_of(file_id, vkey)
        for start in range(0, len(keys), _DELETE_BATCH):
            with self._lock:
                for key in keys[start : start + _DELETE_BATCH]:
                    entry = self._index.get(key)  # None if evicted since
                    if entry is not None:
                        self._forget(self._dirs[entry.dir], key)
                        by_dir.setdefault(entry.dir, []).append(key)
        dropped = sum(len(keys) for keys in by_dir.values())
        if dropped:
            self._counters.add(Count.INVALIDATED_PAGES, dropped)
        for number, keys in by_dir.items():
            self._unlink_later(self._dirs[number], keys)
        return dropped

    def _forget(self, d: StoreDir, key: PageKey) -> None:
        """Remove a page from the index (under the lock); the caller unlinks its file."""
        entry = self._index.remove(key)
        d.evictor.on_delete(key)
        if entry is not None:
            d.used -= entry.size
        self._busy.add(key)

    def _unlink_later(self, d: StoreDir, keys: list[PageKey]) -> None:
        try:
            if self._janitor is not None:
                self._janitor.submit(self._unlink, d, keys)
                return
        except RuntimeError:
            pass  # the janitor has shut down (the store is closing): unlink here instead
        self._unlink(d, keys)

    def _unlink(self, d: StoreDir, keys: list[PageKey]) -> None:
        """Unlink page files of keys made busy by the caller, then release the keys."""
        try:
            for key in keys:
                try:
                    d.disk.unlink(key)
                except OSError as exc:
                    # The file stays behind as an orphan; the next restore removes it.
                    self._counters.add(Count.IO_ERRORS)
                    logger.warning("removing page %s failed: %s", key.file_name, exc)
        finally:
            with self._lock:
                self._busy.difference_update(keys)

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
            )
