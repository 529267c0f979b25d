"""What every page store implementation shares: read-through with single flight, the log that
keeps a fill racing an invalidation from storing stale pages, and the counters."""

from __future__ import annotations

import enum
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from pagestore.api import Fill, Lookup, PageRead, PutResult, StoreStats
from pagestore.files import uri_under
from pagestore.flight import FlightCall, SingleFlight
from pagestore.page import PageId, PageKey


class Count(enum.Enum):
    HITS = "hits"
    MISSES = "misses"
    BYTES_READ = "bytes_read"
    BYTES_WRITTEN = "bytes_written"
    EVICTIONS = "evictions"
    INVALIDATED_PAGES = "invalidated_pages"
    CORRUPT_PAGES = "corrupt_pages"
    IO_ERRORS = "io_errors"


class Counters:
    """Monotonic counters. Thread-safe; its lock is a leaf (never held while taking another)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(Count, 0)
        self._puts = dict.fromkeys(PutResult, 0)

    def add(self, count: Count, amount: int = 1) -> None:
        with self._lock:
            self._counts[count] += amount

    def add_hit(self, size: int) -> None:
        with self._lock:
            self._counts[Count.HITS] += 1
            self._counts[Count.BYTES_READ] += size

    def add_put(self, result: PutResult, size: int) -> None:
        with self._lock:
            self._puts[result] += 1
            if result is PutResult.OK:
                self._counts[Count.BYTES_WRITTEN] += size

    def snapshot(self) -> tuple[dict[Count, int], dict[PutResult, int]]:
        with self._lock:
            return dict(self._counts), dict(self._puts)


class Invalidation(NamedTuple):
    """One invalidation: every version of a file (``version_key`` None) or one version, or
    (``file_id`` None) every file under a URI ``prefix``."""

    file_id: str | None
    version_key: str | None = None
    prefix: str | None = None

    def covers(self, key: PageKey, uri: str) -> bool:
        if self.prefix is not None:
            return uri_under(uri, self.prefix)
        return self.file_id == key.file_id and self.version_key in (None, key.version_key)


class InvalidationLog:
    """The most recent invalidations, numbered. A writer notes :meth:`mark` before it starts and
    asks :meth:`invalidated_since` before its page becomes visible; if the page's file was
    invalidated in between, the page may be stale and must not be stored. When the log has
    forgotten entries newer than a mark, the answer is conservatively yes.

    Not thread-safe: the store calls it under its lock.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._seq = 0
        self._recent: deque[tuple[int, Invalidation]] = deque(maxlen=limit)

    def mark(self) -> int:
        return self._seq

    def record(self, invalidation: Invalidation) -> None:
        self._seq += 1
        self._recent.append((self._seq, invalidation))

    def invalidated_since(self, mark: int, key: PageKey, uri: str) -> bool:
        """Whether the page ``key`` of the file at ``uri`` was invalidated after ``mark``."""
        if mark == self._seq:
            return False
        if not self._recent or self._recent[0][0] > mark + 1:
            return True
        for seq, invalidation in reversed(self._recent):
            if seq <= mark:
                break
            if invalidation.covers(key, uri):
                return True
        return False


def check_range(offset: int, length: int | None) -> None:
    """Raise ValueError for a negative offset or length (a caller's bug, not a cache failure)."""
    if offset < 0 or (length is not None and length < 0):
        raise ValueError(f"invalid page range: offset={offset}, length={length}")


def check_pages(first: int, last: int | None) -> None:
    """Raise ValueError for a negative or reversed page range (a caller's bug)."""
    if first < 0 or (last is not None and last < first):
        raise ValueError(f"invalid page range: first={first}, last={last}")


def slice_page(data: bytes, offset: int, length: int | None) -> bytes:
    """Bytes ``[offset, offset + length)`` of a whole page's data (no copy for all of it)."""
    if offset == 0 and (length is None or length >= len(data)):
        return data  # the common whole-page read: no copy
    end = len(data) if length is None else offset + length
    return data[offset:end]


class BasePageStore(ABC):
    """Read-through and accounting shared by every store. Subclasses guard their state with
    ``self._lock``; the single-flight and counter locks are taken only without it or as leaves.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._invalidations = InvalidationLog()
        self._flights: SingleFlight[PageId, Fill] = SingleFlight()
        self._counters = Counters()

    @abstractmethod
    def read(self, page_id: PageId, offset: int = 0, length: int | None = None) -> PageRead:
        """See PageStore.read."""

    def get(self, page_id: PageId, offset: int = 0, length: int | None = None) -> bytes | None:
        """See PageStore.get."""
        found = self.read(page_id, offset, length)
        return found.data if found.lookup is Lookup.HIT else None

    @abstractmethod
    def has_page(self, page_id: PageId) -> bool:
        """See PageStore.has_page."""

    @abstractmethod
    def _store(self, page_id: PageId, data: bytes, uri: str, since: int) -> PutResult:
        """Store a page of the file at ``uri`` unless the page was invalidated after ``since``
        (an InvalidationLog mark); never raises for cache failures."""

    @abstractmethod
    def delete_file(self, file_id: str, version: str | None = None) -> int:
        """See PageStore.delete_file."""

    @abstractmethod
    def _prefix_invalidated(self, prefix: str) -> set[str]:
        """Note that ``prefix`` is invalidated (under the lock) and return the ids of the files
        with pages stored or being stored whose URI is under it."""

    def put(self, page_id: PageId, data: bytes, uri: str) -> PutResult:
        """See PageStore.put."""
        with self._lock:
            since = self._invalidations.mark()
        return self._counted_store(page_id, data, uri, since)

    def mark(self) -> int:
        """See PageStore.mark."""
        with self._lock:
            return self._invalidations.mark()

    def put_many(self, pages: Sequence[tuple[PageId, bytes, str]], since: int) -> list[PutResult]:
        """See PageStore.put_many."""
        return [self._counted_store(page_id, data, uri, since) for page_id, data, uri in pages]

    def get_or_fill(self, page_id: PageId, fill: Callable[[], bytes], uri: str) -> Fill:
        """See PageStore.get_or_fill."""
        found = self.read(page_id)
        if found.lookup is Lookup.HIT:
            return Fill(found.data, fetched=False, cache_failure=False)
        led = False

        def lead() -> Fill:
            nonlocal led
            led = True
            return self._fill(page_id, fill, uri)

        shared = self._flights.run(page_id, lead)
        failed = found.lookup is Lookup.FAILED
        if not led:  # joined another caller's fill: that caller fetched and stored the page
            return Fill(shared.data, fetched=False, cache_failure=failed)
        return Fill(shared.data, shared.fetched, shared.cache_failure or failed)

    def fill_run(
        self, page_ids: Sequence[PageId], fetch: Callable[[int, int], list[bytes]], uri: str
    ) -> list[Fill]:
        """See PageStore.fill_run."""
        fills: list[Fill | None] = [None] * len(page_ids)
        failed = [False] * len(page_ids)
        led: list[tuple[int, FlightCall[Fill]]] = []
        joined: list[tuple[int, FlightCall[Fill]]] = []
        for pos, page_id in enumerate(page_ids):
            found = self.read(page_id)
            if found.lookup is Lookup.HIT:
                fills[pos] = Fill(found.data, fetched=False, cache_failure=False)
                continue
            failed[pos] = found.lookup is Lookup.FAILED
            leader, call = self._flights.begin(page_id)
            (led if leader else joined).append((pos, call))
        # Every page led is ended before any joined one is waited on (see SingleFlight.begin).
        self._fill_led(page_ids, led, failed, fills, fetch, uri)
        for pos, call in joined:
            shared = self._flights.wait(call)
            fills[pos] = Fill(shared.data, fetched=False, cache_failure=failed[pos])
        return [fill for fill in fills if fill is not None]

    def _fill_led(
        self,
        page_ids: Sequence[PageId],
        led: list[tuple[int, FlightCall[Fill]]],
        failed: list[bool],
        fills: list[Fill | None],
        fetch: Callable[[int, int], list[bytes]],
        uri: str,
    ) -> None:
        """Fetch and store the pages this caller leads, a run of consecutive ones per fetch,
        ending each page's call; a failure ends every call not yet ended with it."""
        ended: set[int] = set()
        try:
            with self._lock:
                since = self._invalidations.mark()
            to_fetch = []
            for pos, call in led:
                # Stored by a flight that ended between this caller's lookup and its lead.
                found = self.read(page_ids[pos]) if self.has_page(page_ids[pos]) else None
                if found is not None and found.lookup is Lookup.HIT:
                    fills[pos] = Fill(found.data, fetched=False, cache_failure=False)
                    self._flights.end(page_ids[pos], call, fills[pos])
                    ended.add(pos)
                else:
                    to_fetch.append((pos, call))
            for run in _consecutive(to_fetch):
                first = page_ids[run[0][0]]
                datas = fetch(first.index, len(run))
                for (pos, call), data in zip(run, datas, strict=True):
                    stored = self._counted_store(page_ids[pos], data, uri, since)
                    fill = Fill(data, True, failed[pos] or stored.failed)
                    fills[pos] = fill
                    self._flights.end(page_ids[pos], call, fill)
                    ended.add(pos)
        except BaseException as exc:
            for pos, call in led:
                if pos not in ended:
                    self._flights.end(page_ids[pos], call, error=exc)
            raise

    def delete_prefix(self, prefix: str) -> int:
        """See PageStore.delete_prefix."""
        with self._lock:
            self._invalidations.record(Invalidation(None, prefix=prefix))
            file_ids = self._prefix_invalidated(prefix)
        return sum(self.delete_file(file_id) for file_id in sorted(file_ids))

    def _fill(self, page_id: PageId, fill: Callable[[], bytes], uri: str) -> Fill:
        with self._lock:
            since = self._invalidations.mark()
        # A caller that missed just before the previous flight for this page stored it finds
        # the page here instead of fetching it a second time.
        failed = False
        if self.has_page(page_id):
            found = self.read(page_id)
            if found.lookup is Lookup.HIT:
                return Fill(found.data, fetched=False, cache_failure=False)
            failed = found.lookup is Lookup.FAILED
        data = fill()
        stored = self._counted_store(page_id, data, uri, since)
        return Fill(data, fetched=True, cache_failure=failed or stored.failed)

    def _stats(self, **gauges: Any) -> StoreStats:
        """The counters every store keeps, plus the store's own ``gauges`` (StoreStats fields)."""
        counts, puts = self._counters.snapshot()
        return StoreStats(
            hits=counts[Count.HITS],
            misses=counts[Count.MISSES],
            bytes_read=counts[Count.BYTES_READ],
            bytes_written=counts[Count.BYTES_WRITTEN],
            put_results=puts,
            evictions=counts[Count.EVICTIONS],
            invalidated_pages=counts[Count.INVALIDATED_PAGES],
            corrupt_pages=counts[Count.CORRUPT_PAGES],
            io_errors=counts[Count.IO_ERRORS],
            **gauges,
        )

    def _counted_store(self, page_id: PageId, data: bytes, uri: str, since: int) -> PutResult:
        result = self._store(page_id, data, uri, since)
        self._counters.add_put(result, len(data))
        return result


def _consecutive(
    led: list[tuple[int, FlightCall[Fill]]],
) -> list[list[tuple[int, FlightCall[Fill]]]]:
    """``led`` (in position order) split into runs of consecutive positions."""
    runs: list[list[tuple[int, FlightCall[Fill]]]] = []
    for item in led:
        if runs and runs[-1][-1][0] + 1 == item[0]:
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs
