"""The read path: bytes of one pinned file version, from pages in the store or fetched from the
UFS (one fetch per page however many readers ask), with read-ahead for cold ranges.

A read is pinned to the version its status names: cached pages are keyed by that version, and
every page fetched from the UFS is fetched with that version required (``Ufs.read(version=)``),
so a file that changes mid-read ends the read with :class:`UfsVersionChanged` — never a mix.

Whether the pages a read fetches are stored is decided here and nowhere else: by the
admission its path's rules give (``worker.rules``: cache, pass through, or cache from the
second read within a window), counted in ``dora_admission_reads``.
"""

from __future__ import annotations

import enum
import functools
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from pagestore.api import Fill, Lookup, PageStore
from pagestore.page import PageId
from pagestore.quota import NO_CHARGE, Charge
from pagestore.shortcircuit import PageLocations
from ufs.adapter import Ufs
from ufs.deadline import Deadline
from ufs.errors import UfsError, UfsVersionChanged
from ufs.status import UfsStatus, file_id
from worker.meta.counters import MetaCounters
from worker.metrics import Metrics
from worker.rules.admission import FirstReads
from worker.rules.model import Admission, Policy

READ_AHEAD_PAGES = 8
Served = Callable[[str, int], None]
"""Told ``(source, n)`` for each ``n`` bytes a read serves from ``cache`` or ``ufs`` (the
request's own tally, for the access log)."""
_SOURCES = ("bytes_from_cache", "bytes_from_ufs", "page_hits", "page_misses", "passthrough")


class Decision(enum.Enum):
    """What a read's admission decided (the ``decision`` label of ``dora_admission_reads``)."""

    ADMITTED = "admitted"
    """Its fetched pages are stored."""
    PASSED_THROUGH = "passed_through"
    """A rule says its path is never cached: served from the UFS."""
    DEFERRED = "deferred"
    """A second-read rule, and these pages were not read within its window: served from the
    UFS, and remembered."""


@dataclass(frozen=True)
class ReadResult:
    """A read ready to stream: the pinned status, the range served and its bytes."""

    status: UfsStatus
    offset: int
    length: int
    chunks: Iterator[bytes]


@dataclass(frozen=True)
class Located:
    """Where the cached pages of a range of one pinned file version are (``locations``) and
    which page indices of the range are not cached (``missing``: read those through the worker,
    which fills them)."""

    status: UfsStatus
    locations: PageLocations
    missing: tuple[int, ...]


class Reader:
    """Serves byte ranges of pinned file versions, and decides which of the pages it fetches
    are stored. Thread-safe: state is the page store (itself thread-safe), a shared read-ahead
    pool, the first reads second-read admission remembers and counters, each thread-safe."""

    def __init__(
        self,
        ufs: Ufs,
        pages: PageStore,
        page_size: int,
        metrics: Metrics,
        read_ahead_threads: int = 16,
    ) -> None:
        self._ufs = ufs
        self._pages = pages
        self.page_size = page_size
        self._metrics = metrics
        self._first_reads = FirstReads()
        self._pool = ThreadPoolExecutor(read_ahead_threads, thread_name_prefix="read-ahead")
        self.counters = MetaCounters(_SOURCES)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def chunks(
        self,
        status: UfsStatus,
        offset: int,
        length: int,
        policy: Policy,
        *,
        ramp: bool = False,
        served: Served | None = None,
        wait: Deadline | None = None,
        charge: Charge = NO_CHARGE,
    ) -> Iterator[bytes]:
        """The bytes ``[offset, offset+length)`` of ``status``'s version, page by page. The
        range must lie within the file (the caller checks it). The pages stored count against
        the quotas of ``charge`` (the call's: ``RequestContext.charge``).

        ``policy`` is what the rules say for the file: its admission decides whether the pages
        fetched are stored (:meth:`admit`); a read not admitted is served from the UFS page by
        page, the cache not consulted. With ``ramp`` (a client that may hang up before the
        end), read-ahead starts at one page and doubles with every page the consumer takes,
        up to READ_AHEAD_PAGES; closing the iterator cancels the fills not yet started.
        ``served`` is told where the bytes came from. ``wait`` is how long the client waits
        for its next bytes (None: it did not say): each UFS read for the range gets that
        long, counted from its start (and at most ``dora.ufs.call.deadline``). A page fill
        other requests joined runs under the wait of the request that started it; one that
        runs out of it is fetched again by each request that joined, under its own
        (``PageStore.fill_run``).
        """
        if length <= 0:
            return iter(())
        first, last = offset // self.page_size, (offset + length - 1) // self.page_size
        if self.admit(status, range(first, last + 1), policy) is not Decision.ADMITTED:
            self.counters.add("passthrough")
            self._metrics.passthrough_reads.inc()
            return self._passthrough(status, offset, length, served, wait)
        window = 1 if ramp else READ_AHEAD_PAGES
        return self._cached(status, offset, length, window, served, wait, charge)

    def admit(self, status: UfsStatus, pages: range, policy: Policy) -> Decision:
        """Whether a read of ``pages`` (indices) of ``status``'s version stores what it fetches,
        by ``policy``'s admission, counted. Second-read admission admits it when each of its
        pages was read within the policy's window (``FirstReads``)."""
        if policy.admission is Admission.PASS:
            decision = Decision.PASSED_THROUGH
        elif policy.admission is Admission.CACHE:
            decision = Decision.ADMITTED
        else:
            fid = file_id(status.uri)
            ids = [PageId(fid, status.version, index) for index in pages]
            again = self._first_reads.read_again(ids, policy.window)
            decision = Decision.ADMITTED if again else Decision.DEFERRED
        self._metrics.admission.labels(decision.value).inc()
        return decision

    def _passthrough(
        self,
        status: UfsStatus,
        offset: int,
        length: int,
        served: Served | None,
        wait: Deadline | None,
    ) -> Iterator[bytes]:
        end = offset + length
        while offset < end:
            size = min(self.page_size, end - offset)
            data = self._fetch(status, offset, size, wait)
            self._count("ufs", len(data), served)
            yield data
            offset += size

    def _cached(
        self,
        status: UfsStatus,
        offset: int,
        length: int,
        window: int,
        served: Served | None,
        wait: Deadline | None,
        charge: Charge,
    ) -> Iterator[bytes]:
        fid = file_id(status.uri)
        first, last = offset // self.page_size, (offset + length - 1) // self.page_size
        ahead: deque[tuple[int, Future[list[Fill]], int]] = deque()
        try:
            for index in range(first, last + 1):
                start = max(offset, index * self.page_size) - index * self.page_size
                stop = min(offset + length, (index + 1) * self.page_size) - index * self.page_size
                lookup = Lookup.MISS  # when reading ahead, the fill looks the page up itself
                if not ahead:
                    found = self._pages.read(
                        PageId(fid, status.version, index), start, stop - start, fill_follows=True
                    )
                    if found.lookup is Lookup.HIT:
                        self.counters.add("page_hits")
                        self._count("cache", len(found.data), served)
                        yield found.data
                        continue
                    lookup = found.lookup
                target = min(last, index + window)
                # Top up once half a window is missing (or for the range's tail), so batches
                # stay several pages long: a page at a time would undo the coalescing.
                if not ahead or target - ahead[-1][0] >= max(1, window // 2) or target == last:
                    # The rest of the range in one batch, with nothing to overlap: filled on
                    # this thread, which would only wait for a pool thread (a small file, a
                    # cold random read).
                    inline = not ahead and target == last
                    self._read_ahead(ahead, status, fid, index, target, wait, charge, inline)
                window = min(2 * window, READ_AHEAD_PAGES)
                _, batch, position = ahead.popleft()
                fill = batch.result()[position]
                self._account(fill, lookup, stop - start, served)
                yield fill.data[start:stop]
        finally:
            for _, pending, _ in ahead:
                pending.cancel()

    def _account(self, fill: Fill, lookup: Lookup, size: int, served: Served | None) -> None:
        """Count a page served through a fill. This is the one place where a page store failure
        that sent a read to the UFS is counted (``dora_cache_failures``): the page's copy could
        not be served, or what was fetched could not be stored."""
        self.counters.add("page_misses" if fill.fetched else "page_hits")
        self._count("ufs" if fill.fetched else "cache", size, served)
        if fill.cache_failure or lookup is Lookup.FAILED:
            self._metrics.cache_failures.inc()

    def _read_ahead(
        self,
        ahead: deque[tuple[int, Future[list[Fill]], int]],
        status: UfsStatus,
        fid: str,
        index: int,
        last: int,
        wait: Deadline | None,
        charge: Charge,
        inline: bool = False,
    ) -> None:
        """Make sure pages ``index`` to ``last`` are being filled: the ones not yet asked for,
        as one batch whose missing pages come in one ranged UFS read per run (each within
        ``wait``); in the read-ahead pool, or on this thread with ``inline``."""
        next_index = ahead[-1][0] + 1 if ahead else index
        if next_index > last:
            return
        pages = [PageId(fid, status.version, i) for i in range(next_index, last + 1)]
        fetch = functools.partial(self._fetch_pages, status, wait)
        if inline:
            batch: Future[list[Fill]] = Future()
            try:
                batch.set_result(self._pages.fill_run(pages, fetch, status.uri, charge))
            except Exception as exc:  # noqa: BLE001 - raised by result(), as from the pool
                batch.set_exception(exc)
        else:
            batch = self._pool.submit(self._pages.fill_run, pages, fetch, status.uri, charge)
        ahead.extend((page.index, batch, position) for position, page in enumerate(pages))

    def store_whole(self, files: Sequence[tuple[UfsStatus, Policy]]) -> list[UfsStatus]:
        """Cache small files (a page or less each, nothing read from them yet) without serving
        them: all read from the UFS in one batch (``Ufs.read_files``) and stored together
        (``PageStore.put_many``), for a load job, where one UFS request and one page store
        write per file would cost more than the files. Only files whose policy caches them
        at once are batched. Returns the others, and the files whose read failed (any error,
        a changed version, the UFS not answering), for the caller to read the usual way, which
        decides their admission, and reports and records what went wrong."""
        left = [status for status, policy in files if policy.admission is not Admission.CACHE]
        # A batch per quota, so each batch is stored under one charge (of the path's rule).
        batches: dict[Charge, list[UfsStatus]] = {}
        for status, policy in files:
            if policy.admission is Admission.CACHE:
                charge = NO_CHARGE if policy.quota is None else (policy.quota.account,)
                batches.setdefault(charge, []).append(status)
        for charge, batch in batches.items():
            left += self._store_batch(batch, charge)
        return left

    def _store_batch(self, files: Sequence[UfsStatus], charge: Charge) -> list[UfsStatus]:
        if not files:
            return []
        since = self._pages.mark()
        started = time.perf_counter()
        try:
            outcomes = self._ufs.read_files(files)
        except UfsError:
            return list(files)
        # A batch's own label: its time is many files', not one read's.
        self._metrics.ufs_latency.labels("read_batch").observe(time.perf_counter() - started)
        pages: list[tuple[PageId, bytes, str]] = []
        failed: list[UfsStatus] = []
        for status, outcome in zip(files, outcomes, strict=True):
            if isinstance(outcome, bytes) and len(outcome) == status.size:
                pages.append((PageId(file_id(status.uri), status.version, 0), outcome, status.uri))
            else:
                failed.append(status)
        results = self._pages.put_many(pages, since, charge)
        self._metrics.admission.labels(Decision.ADMITTED.value).inc(len(pages))
        self.counters.add("page_misses", len(pages))
        self._count("ufs", sum(len(data) for _, data, _ in pages))
        self._metrics.cache_failures.inc(sum(result.failed for result in results))
        return failed

    def _fetch_pages(
        self, status: UfsStatus, wait: Deadline | None, first: int, count: int
    ) -> list[bytes]:
        """Pages ``first`` to ``first + count - 1`` of ``status``'s version in one UFS read."""
        offset = first * self.page_size
        size = min(count * self.page_size, status.size - offset)
        data = self._fetch(status, offset, size, wait)
        step = self.page_size
        return [data[at : at + step] for at in range(0, len(data), step)]

    def _fetch(self, status: UfsStatus, offset: int, size: int, wait: Deadline | None) -> bytes:
        started = time.perf_counter()
        deadline = None if wait is None else wait.restarted()
        data = self._ufs.read(status.uri, offset, size, version=status.version, deadline=deadline)
        self._metrics.ufs_latency.labels("read").observe(time.perf_counter() - started)
        if len(data) != size:
            # A short read of a range the status says exists: the file changed underneath.
            raise UfsVersionChanged(status.uri, status.version, None)
        return data

    def _count(self, source: str, n: int, served: Served | None = None) -> None:
        self.counters.add(f"bytes_from_{source}", n)
        self._metrics.bytes_served.labels(source).inc(n)
        if served is not None:
            served(source, n)
