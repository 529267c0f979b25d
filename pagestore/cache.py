"""The page cache: the one :class:`~pagestore.api.PageStore`, over stores that only move bytes.

What a cache of pages needs beyond storing them lives here once, whatever the store: read
through with single flight, the invalidation log that keeps a fill racing an invalidation from
storing stale pages, the counters, and "a cache failure becomes a miss". The stores
(:mod:`pagestore.store` on disk, :mod:`pagestore.memory` in memory) implement
:class:`~pagestore.api.Store`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from pagestore.api import (
    ChargeOf,
    Fault,
    Fill,
    Keep,
    Lookup,
    PageFault,
    PageRead,
    PutResult,
    Store,
    StoreStats,
)
from pagestore.counters import Count, PageCounters
from pagestore.flight import FlightCall, SingleFlight
from pagestore.invalidation import Invalidation, InvalidationLog
from pagestore.mrc import MissRatioCurve
from pagestore.page import PageId, PageKey, check_pages, check_range, version_key
from pagestore.quota import NO_CHARGE, Charge
from pagestore.shortcircuit import PageLocations

logger = logging.getLogger(__name__)

Led = list[tuple[int, FlightCall[Fill]]]


class PageCache:
    """Pages by :class:`PageId` over one ``store``.

    Every page served from the store and every page stored in it is one reference of the
    miss-ratio curve ``advice`` (a miss is looked up twice, by the reader and by the fill, so
    lookups are not: what is counted is what an LRU evictor sees, a touch or an insertion).

    Thread-safe. Locks: the log lock guards the invalidation log and is a leaf (a store may
    take it under its own lock, through a :data:`~pagestore.api.Keep`); the single-flight and
    counter locks are leaves too. No lock of the cache is held while the store is called.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.page_size = store.page_size
        self._log_lock = threading.Lock()
        self._invalidations = InvalidationLog()
        self._flights: SingleFlight[PageId, Fill] = SingleFlight()
        self._counters = PageCounters()
        self.advice = MissRatioCurve(self.page_size)
        self._covers: Callable[[str], bool] = _nothing

    # -- lifecycle and gauges: the store's ------------------------------------------------------

    def start(self) -> None:
        """Open the store; a restore, if any, continues in the background."""
        self.store.start()

    def close(self) -> None:
        """Finish the store's background work and release it. Idempotent."""
        self.store.close()

    @property
    def ready(self) -> bool:
        return self.store.ready

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self.store.wait_ready(timeout)

    @property
    def page_count(self) -> int:
        return self.store.page_count

    @property
    def used_bytes(self) -> int:
        return self.store.used_bytes

    @property
    def capacity_bytes(self) -> int:
        return self.store.capacity_bytes

    # -- reads ----------------------------------------------------------------------------------

    def read(
        self,
        page_id: PageId,
        offset: int = 0,
        length: int | None = None,
        *,
        fill_follows: bool = False,
    ) -> PageRead:
        """See PageStore.read."""
        check_range(offset, length)
        try:
            data = self.store.read(page_id, offset, length)
        except PageFault as fault:
            return PageRead(self._faulted(page_id, fault, fill_follows))
        if data is None:
            if not fill_follows:
                self._counters.add(Count.MISSES)
            return PageRead(Lookup.MISS)
        self._counters.add_hit(len(data))
        self.advice.record(page_id)
        return PageRead(Lookup.HIT, data)

    def _faulted(self, page_id: PageId, fault: PageFault, fill_follows: bool) -> Lookup:
        """A cache failure becomes a miss: counted (the miss by the fill that follows, if one
        does), logged, answered as FAILED (the store dropped the page) or MISS (it was gone
        already)."""
        if fault.kind is Fault.CORRUPT:
            self._counters.add(Count.CORRUPT_PAGES)
        elif fault.kind is Fault.IO_ERROR:
            self._counters.add(Count.IO_ERRORS)
        if fault.kind is not Fault.GONE:
            logger.warning("dropping page %s: %s", page_id.key.file_name, fault)
        if not fill_follows:
            self._counters.add(Count.MISSES)
        return Lookup.FAILED if fault.dropped else Lookup.MISS

    def get(self, page_id: PageId, offset: int = 0, length: int | None = None) -> bytes | None:
        """See PageStore.get."""
        found = self.read(page_id, offset, length)
        return found.data if found.lookup is Lookup.HIT else None

    def has_page(self, page_id: PageId) -> bool:
        """See PageStore.has_page."""
        return self.store.has_page(page_id)

    def locate(
        self, file_id: str, version: str, first: int = 0, last: int | None = None
    ) -> PageLocations:
        """See PageStore.locate."""
        check_pages(first, last)
        return self.store.locate(file_id, version, first, last)

    def cached_bytes(self, file_id: str, version: str) -> int:
        """See PageStore.cached_bytes."""
        return self.store.cached_bytes_many([(file_id, version)])[0]

    def cached_bytes_many(self, files: Sequence[tuple[str, str]]) -> list[int]:
        """See PageStore.cached_bytes_many."""
        return self.store.cached_bytes_many(files)

    # -- writes ---------------------------------------------------------------------------------

    def mark(self) -> int:
        """See PageStore.mark."""
        with self._log_lock:
            return self._invalidations.mark()

    def _keeper(self, since: int) -> Keep:
        """The check a store makes before a page fetched after ``since`` becomes visible."""

        def keep(key: PageKey, uri: str) -> bool:
            with self._log_lock:
                return not self._invalidations.invalidated_since(since, key, uri)

        return keep

    def put(self, page_id: PageId, data: bytes, uri: str, charge: Charge = NO_CHARGE) -> PutResult:
        """See PageStore.put."""
        return self.put_many([(page_id, data, uri)], self.mark(), charge)[0]

    def put_many(
        self, pages: Sequence[tuple[PageId, bytes, str]], since: int, charge: Charge = NO_CHARGE
    ) -> list[PutResult]:
        """See PageStore.put_many."""
        fit = [page for page in pages if len(page[1]) <= self.page_size]
        for file_id, uri in {(page_id.file_id, uri) for page_id, _, uri in fit}:
            if self._covers(uri):
                self.store.pin(file_id, True)
        stored = iter(self.store.put_many(fit, self._keeper(since), charge) if fit else [])
        results = [
            next(stored) if len(data) <= self.page_size else PutResult.TOO_LARGE
            for _, data, _ in pages
        ]
        for (page_id, data, _), result in zip(pages, results, strict=True):
            self._counters.add_put(result, len(data))
            if result is PutResult.OK:
                self.advice.record(page_id)
        return results

    def get_or_fill(
        self, page_id: PageId, fill: Callable[[], bytes], uri: str, charge: Charge = NO_CHARGE
    ) -> Fill:
        """See PageStore.get_or_fill."""
        found = self.read(page_id)
        if found.lookup is Lookup.HIT:
            return Fill(found.data, fetched=False, cache_failure=False)
        led = False

        def lead() -> Fill:
            nonlocal led
            led = True
            return self._fill(page_id, fill, uri, charge)

        shared = self._flights.run(page_id, lead)
        failed = found.lookup is Lookup.FAILED
        if not led:  # joined another caller's fill: that caller fetched and stored the page
            return Fill(shared.data, fetched=False, cache_failure=failed)
        return Fill(shared.data, shared.fetched, shared.cache_failure or failed)

    def _fill(self, page_id: PageId, fill: Callable[[], bytes], uri: str, charge: Charge) -> Fill:
        since = self.mark()
        # A caller that missed just before the previous flight for this page stored it finds
        # the page here instead of fetching it a second time.
        found = self._stored(page_id)
        if found is not None and found.lookup is Lookup.HIT:
            return Fill(found.data, fetched=False, cache_failure=False)
        failed = found is not None and found.lookup is Lookup.FAILED
        data = fill()
        stored = self.put_many([(page_id, data, uri)], since, charge)[0]
        return Fill(data, fetched=True, cache_failure=failed or stored.failed)

    def _stored(self, page_id: PageId) -> PageRead | None:
        """The page read again if the store has it now, else None."""
        return self.read(page_id) if self.has_page(page_id) else None

    def fill_run(
        self,
        page_ids: Sequence[PageId],
        fetch: Callable[[int, int], list[bytes]],
        uri: str,
        charge: Charge = NO_CHARGE,
    ) -> list[Fill]:
        """See PageStore.fill_run."""
        fills: list[Fill | None] = [None] * len(page_ids)
        failed = [False] * len(page_ids)
        led: Led = []
        joined: Led = []
        for pos, page_id in enumerate(page_ids):
            found = self.read(page_id)
            if found.lookup is Lookup.HIT:
                fills[pos] = Fill(found.data, fetched=False, cache_failure=False)
                continue
            failed[pos] = found.lookup is Lookup.FAILED
            leader, call = self._flights.begin(page_id)
            (led if leader else joined).append((pos, call))
        # Every page led is ended before any joined one is waited on (see SingleFlight.begin).
        self._fill_led(page_ids, led, failed, fills, fetch, uri, charge)
        for pos, call in joined:
            try:
                shared = self._flights.wait(call)
            except TimeoutError:
                # The leader's own deadline, not this caller's (as SingleFlight.run): this
                # caller fetches the page with its fetch (joining a newer fill if one runs).
                fills[pos] = self.fill_run([page_ids[pos]], fetch, uri, charge)[0]
                continue
            fills[pos] = Fill(shared.data, fetched=False, cache_failure=failed[pos])
        return [fill for fill in fills if fill is not None]

    def _fill_led(
        self,
        page_ids: Sequence[PageId],
        led: Led,
        failed: list[bool],
        fills: list[Fill | None],
        fetch: Callable[[int, int], list[bytes]],
        uri: str,
        charge: Charge,
    ) -> None:
        """Fetch and store the pages this caller leads, a run of consecutive ones per fetch,
        ending each page's call; a failure ends every call not yet ended with it."""
        ended: set[int] = set()
        try:
            since = self.mark()
            to_fetch = []
            for pos, call in led:
                # Stored by a flight that ended between this caller's lookup and its lead.
                found = self._stored(page_ids[pos])
                if found is not None and found.lookup is Lookup.HIT:
                    fills[pos] = Fill(found.data, fetched=False, cache_failure=False)
                    self._flights.end(page_ids[pos], call, fills[pos])
                    ended.add(pos)
                else:
                    to_fetch.append((pos, call))
            for run in _consecutive(to_fetch):
                datas = fetch(page_ids[run[0][0]].index, len(run))
                for (pos, call), data in zip(run, datas, strict=True):
                    stored = self.put_many([(page_ids[pos], data, uri)], since, charge)[0]
                    fill = Fill(data, True, failed[pos] or stored.failed)
                    fills[pos] = fill
                    self._flights.end(page_ids[pos], call, fill)
                    ended.add(pos)
        except BaseException as exc:
            for pos, call in led:
                if pos not in ended:
                    self._flights.end(page_ids[pos], call, error=exc)
            raise

    # -- invalidation ---------------------------------------------------------------------------

    def delete_file(self, file_id: str, version: str | None = None) -> int:
        """See PageStore.delete_file. Fills of the file already running are not stored."""
        with self._log_lock:
            vkey = None if version is None else version_key(version)
            self._invalidations.record(Invalidation(file_id, vkey))
        dropped = self.store.delete_file(file_id, version)
        if dropped:
            self._counters.add(Count.INVALIDATED_PAGES, dropped)
        return dropped

    def delete_prefix(self, prefix: str) -> int:
        """See PageStore.delete_prefix."""
        with self._log_lock:
            self._invalidations.record(Invalidation(None, prefix=prefix))
        file_ids = self.store.files_under(prefix)
        return sum(self.delete_file(file_id) for file_id in sorted(file_ids))

    # -- pinning --------------------------------------------------------------------------------

    def pin(self, file_id: str, pinned: bool = True) -> None:
        """See PageStore.pin."""
        self.store.pin(file_id, pinned)

    def pin_when(self, covers: Callable[[str], bool]) -> None:
        """See PageStore.pin_when."""
        self._covers = covers

    def charge_restored(self, charge_of: ChargeOf) -> None:
        """See PageStore.charge_restored."""
        self.store.charge_restored(charge_of)

    def file_uris(self) -> dict[str, str]:
        """See PageStore.file_uris."""
        self.store.wait_ready()
        return self.store.file_uris()

    def pin_prefix(self, prefix: str, pinned: bool = True) -> int:
        """See PageStore.pin_prefix."""
        self.store.wait_ready()
        file_ids = self.store.files_under(prefix)
        for file_id in file_ids:
            self.store.pin(file_id, pinned)
        return len(file_ids)

    # -- statistics -----------------------------------------------------------------------------

    def stats(self) -> StoreStats:
        """The cache's counters with the store's gauges and its own events."""
        counts, puts = self._counters.snapshot()
        below = self.store.stats()
        return StoreStats(
            hits=counts[Count.HITS],
            misses=counts[Count.MISSES],
            bytes_read=counts[Count.BYTES_READ],
            bytes_written=counts[Count.BYTES_WRITTEN],
            put_results=puts,
            evictions=below.evictions,
            invalidated_pages=counts[Count.INVALIDATED_PAGES],
            corrupt_pages=counts[Count.CORRUPT_PAGES],
            io_errors=counts[Count.IO_ERRORS] + below.io_errors,
            pages=below.pages,
            used_bytes=below.used_bytes,
            capacity_bytes=below.capacity_bytes,
            ready=below.ready,
            dirs_in_service=below.dirs_in_service,
            restored_pages=below.restored_pages,
            restore_seconds=below.restore_seconds,
            pack_bytes=below.pack_bytes,
            dirs=below.dirs,
            pinned_bytes=below.pinned_bytes,
            pin_limit_bytes=below.pin_limit_bytes,
            quotas=below.quotas,
        )


def _nothing(uri: str) -> bool:
    return False


def _consecutive(led: Led) -> list[Led]:
    """``led`` (in position order) split into runs of consecutive positions."""
    runs: list[Led] = []
    for item in led:
        if runs and runs[-1][-1][0] + 1 == item[0]:
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs
