"""Short-circuit reads for a client on the worker's host (DESIGN.md, "The same-host fast path").

The worker names, for a pinned file version, where its cached pages are (``GET /v1/locate``);
this reader opens those page files itself and reads straight into the caller's buffer, checking
the 16 KiB block checksums it touches (:mod:`pagestore.shortcircuit`), and reads over HTTP what
is not cached (the worker then fills it) or cannot be read right: a page evicted, replaced,
corrupt or not openable by this process is a miss, never wrong bytes.

The page paths are the worker's own: the client must see the page directory at the same path
(the same host, or the Helm chart's read-only mount of the page volume at the worker's path,
named in ``DORACACHE_SHORT_CIRCUIT_ROOT``) and be allowed to read it (page files are 0644).
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pagestore.shortcircuit import Miss, PageFile, PageLocation, PageLocations, PageMiss

Locate = Callable[[str, str, int, int], Mapping[str, Any]]
"""``locate(path, version, offset, length)``: the worker's ``/v1/locate`` answer for a pinned
version (raises what the client raises for the worker's errors, e.g. a version mismatch)."""

Fetch = Callable[[str, str, int, memoryview], None]
"""``fetch(path, version, offset, buffer)``: fill ``buffer`` with the file's bytes from
``offset`` over HTTP, pinned to ``version`` (raises what the client's HTTP read raises)."""

_Located = tuple[PageLocations, PageLocation]
"""A page's file: the located window's facts and the page's place."""

DEFAULT_WINDOW_PAGES = 256
DEFAULT_MAX_WINDOWS = 1024
DEFAULT_MAX_OPEN = 256


@dataclass
class _Window:
    """The located pages of one window of a file version; ``fetched``: missing pages read over
    HTTP since (the worker has probably cached them: locate again when one is needed again)."""

    locations: PageLocations
    pages: dict[int, PageLocation]
    missing: frozenset[int]
    fetched: set[int] = field(default_factory=set)


class ShortCircuitReader:
    """Reads of pinned file versions, from page files where cached, over HTTP otherwise.

    Locations are asked for per window of ``window_pages`` pages and kept per ``(path, version,
    window)`` in a bounded LRU (``max_windows``): a warm read makes no call at all;
    up to ``max_open`` page files stay open between reads (:meth:`close` closes them). After a page
    file of this worker cannot be opened for want of permission, every read goes over HTTP.

    Thread-safe: the cache and counters are under one lock, never held during I/O; each read
    opens its own page files."""

    def __init__(
        self,
        page_size: int,
        locate: Locate | None = None,
        fetch: Fetch | None = None,
        window_pages: int = DEFAULT_WINDOW_PAGES,
        max_windows: int = DEFAULT_MAX_WINDOWS,
        max_open: int = DEFAULT_MAX_OPEN,
    ) -> None:
        if min(page_size, window_pages, max_windows) <= 0 or max_open < 0:
            raise ValueError("page size, window pages and max windows must be positive")
        self.page_size = page_size
        self._locate = locate
        self._fetch = fetch
        self._window_bytes = window_pages * page_size
        self._max_windows = max_windows
        self._windows: OrderedDict[tuple[str, str, int], _Window] = OrderedDict()
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._denied = False
        # Page files kept open between reads (checked out while in use, so no two threads
        # share one): saves an open and a header check per read; holds at most max_open
        # evicted files' space until they are closed.
        self._open: OrderedDict[tuple[str, int], PageFile] = OrderedDict()
        self._max_open = max_open

    def read_into(
        self, path: str, version: str, offset: int, buffer: memoryview | bytearray
    ) -> None:
        """Fill ``buffer`` with the bytes of ``path`` at ``version`` from ``offset``; the
        range must lie within the file. Raises what ``locate`` and ``fetch`` raise. (The
        three steps it takes are public for a caller that makes its calls itself.)"""
        if self._locate is None or self._fetch is None:
            raise ValueError("read_into needs the reader built with locate and fetch")
        target = memoryview(buffer).cast("B")
        for at, length in self.to_locate(path, version, offset, len(target)):
            self.located(path, version, at, self._locate(path, version, at, length))
        for at, length in self.read_local(path, version, offset, target):
            self._fetch(path, version, at, target[at - offset : at - offset + length])

    def to_locate(self, path: str, version: str, offset: int, length: int) -> list[tuple[int, int]]:
        """The windows (offset, length) of ``[offset, offset + length)`` to ask the worker
        where their pages are (``locate``, then :meth:`located`): those not known, and those
        with a page needed now that was read over HTTP since they were located (the worker
        has probably cached it by now)."""
        if self._denied or length <= 0:
            return []
        first, last = offset // self.page_size, (offset + length - 1) // self.page_size
        wanted: dict[int, None] = {}
        with self._lock:
            for index in range(first, last + 1):
                number = index * self.page_size // self._window_bytes
                window = self._windows.get((path, version, number))
                if window is None or index in window.fetched:
                    wanted[number] = None
        return [(n * self._window_bytes, self._window_bytes) for n in wanted]

    def located(self, path: str, version: str, offset: int, answer: Mapping[str, Any]) -> None:
        """Keep the worker's ``/v1/locate`` answer for the window at ``offset``."""
        self._count("locates")
        try:
            locations = PageLocations.from_dict(answer)
            missing = frozenset(_typed_ints(answer.get("missing")))
        except ValueError:
            # A worker of another page format: everything of this window over HTTP.
            locations = PageLocations("", version, self.page_size, ())
            missing = frozenset()
        window = _Window(locations, {p.index: p for p in locations.pages}, missing)
        key = (path, version, offset // self._window_bytes)
        with self._lock:
            previous = self._windows.get(key)
            if previous is not None:
                # Parallel reads of one window locate it at once: keep the pages another read
                # fetched since, or the next read of them would not locate again and go over
                # HTTP although the worker has cached them.
                window.fetched = previous.fetched & missing
            self._windows[key] = window
            self._windows.move_to_end(key)
            while len(self._windows) > self._max_windows:
                self._windows.popitem(last=False)

    def read_local(
        self, path: str, version: str, offset: int, buffer: memoryview | bytearray
    ) -> list[tuple[int, int]]:
        """Fill what it can of ``buffer`` (the bytes from ``offset``) from page files; the
        ranges (file offset, length) left to read over HTTP, adjacent ones merged. Blocks (disk
        I/O); raises nothing for a cache failure."""
        target = memoryview(buffer).cast("B")
        pages = self._lookup(path, version, offset, len(target), located_only=False)
        assert pages is not None
        return self._read_pages(path, version, offset, target, pages)

    def read_located(
        self, path: str, version: str, offset: int, buffer: memoryview | bytearray
    ) -> list[tuple[int, int]] | None:
        """:meth:`read_local` when nothing of the range is left :meth:`to_locate`; None,
        having read nothing, otherwise. One lookup for both: a warm small read's cost is
        mostly such bookkeeping."""
        target = memoryview(buffer).cast("B")
        pages = self._lookup(path, version, offset, len(target), located_only=True)
        return None if pages is None else self._read_pages(path, version, offset, target, pages)

    def _lookup(
        self, path: str, version: str, offset: int, length: int, located_only: bool
    ) -> list[_Located | None] | None:
        """The location of each page of the range, None for a page to read over HTTP (not
        cached when located, its window not located, or this worker's files not openable);
        with ``located_only``, None instead of a list when a window is to locate first."""
        if length <= 0:
            return []
        first, last = offset // self.page_size, (offset + length - 1) // self.page_size
        if self._denied:
            return None if located_only else [None] * (last - first + 1)
        pages: list[_Located | None] = []
        with self._lock:
            for index in range(first, last + 1):
                key = (path, version, index * self.page_size // self._window_bytes)
                window = self._windows.get(key)
                if window is None or index in window.fetched:
                    if located_only:
                        return None
                    pages.append(None)
                    continue
                self._windows.move_to_end(key)
                if index in window.missing:
                    window.fetched.add(index)
                location = window.pages.get(index)
                pages.append(None if location is None else (window.locations, location))
        return pages

    def _read_pages(
        self,
        path: str,
        version: str,
        offset: int,
        target: memoryview,
        pages: list[_Located | None],
    ) -> list[tuple[int, int]]:
        gaps: list[tuple[int, int]] = []
        opened: list[PageFile] = []
        done = local = 0
        try:
            for page in pages:
                at = offset + done
                within = at % self.page_size
                size = min(len(target) - done, self.page_size - within)
                read = page is not None and self._read_page(
                    path, version, page, within, target[done : done + size], opened
                )
                if read:
                    local += size
                elif gaps and sum(gaps[-1]) == at:
                    gaps[-1] = (gaps[-1][0], gaps[-1][1] + size)
                else:
                    gaps.append((at, size))
                done += size
        finally:
            self._checkin(opened, local, len(target) - local)
        return gaps

    def _read_page(
        self,
        path: str,
        version: str,
        page: _Located,
        within: int,
        part: memoryview,
        opened: list[PageFile],
    ) -> bool:
        """Whether ``part`` was read from the page's file (then added to ``opened``)."""
        return self._with_page(path, version, page, opened, lambda f: f.read_into(within, part))

    def _with_page(
        self,
        path: str,
        version: str,
        page: _Located,
        opened: list[PageFile],
        read: Callable[[PageFile], object],
    ) -> bool:
        """Whether ``read`` of the page's open file succeeded (the file is then added to
        ``opened``, to check in); a miss is recorded and the window forgotten."""
        locations, location = page
        pooled = None
        try:
            pooled = self._checkout(locations, location)
            read(pooled)
        except PageMiss as miss:
            if pooled is not None:
                pooled.close()
            self._missed(path, version, location.index, miss.reason)
            return False
        opened.append(pooled)
        return True

    def read_small(self, path: str, version: str, offset: int, length: int) -> bytes | None:
        """The bytes of ``[offset, offset + length)``, a range within one page, when its window
        is located and the page's file was cached and reads right; None, having counted
        nothing, otherwise (a miss is recorded as :meth:`read_local` records it). A small
        read's cheapest way: the bytes are copied once, out of the page file's scratch space."""
        within = offset % self.page_size
        if self._denied or length <= 0 or within + length > self.page_size:
            return None
        index = offset // self.page_size
        key = (path, version, index * self.page_size // self._window_bytes)
        with self._lock:
            window = self._windows.get(key)
            # (A page read over HTTP since it was located is one of the window's missing.)
            if window is None or index in window.missing:
                return None
            self._windows.move_to_end(key)
        location = window.pages.get(index)
        if location is None:
            return None
        # _with_page inlined: its closure and list are a tenth of such a read's cost.
        pooled = None
        try:
            pooled = self._checkout(window.locations, location)
            data = pooled.read_bytes(within, length)
        except PageMiss as miss:
            if pooled is not None:
                pooled.close()
            self._missed(path, version, index, miss.reason)
            return None
        self._checkin([pooled], length, 0)
        return data

    def _checkout(self, locations: PageLocations, location: PageLocation) -> PageFile:
        """An open page file, from the pool if one is there and its file was not removed
        since (then it misses, as opening it anew would). Raises PageMiss."""
        with self._lock:
            pooled = self._open.pop((location.path, location.offset), None)
        if pooled is not None:
            if not pooled.unlinked():
                return pooled
            pooled.close()
        return PageFile(locations, location)

    def _checkin(self, opened: list[PageFile], local: int, remote: int) -> None:
        """Return page files to the pool and count a read's bytes: one lock per read, not
        per page, as the lock is on every read's path."""
        surplus: list[PageFile] = []
        with self._lock:
            self._counts["short_circuit_bytes"] += local
            self._counts["http_bytes"] += remote
            for page_file in opened:
                where = (page_file.page.path, page_file.page.offset)
                previous = self._open.pop(where, None)
                if previous is not None:
                    surplus.append(previous)
                self._open[where] = page_file
            while len(self._open) > self._max_open:
                surplus.append(self._open.popitem(last=False)[1])
        for extra in surplus:
            extra.close()

    def _missed(self, path: str, version: str, index: int, reason: Miss) -> None:
        """A located page could not be read: forget its window (locate again next time)."""
        with self._lock:
            self._counts[f"miss_{reason.value}"] += 1
            self._windows.pop((path, version, index * self.page_size // self._window_bytes), None)
            if reason is Miss.DENIED:
                self._denied = True

    def forget(self, path: str, below: bool = False) -> None:
        """Drop every location of ``path`` (with ``below``, of every path under it too) after a
        write or an invalidation through this client; a stale location only costs a miss,
        never wrong bytes."""
        prefix = path.rstrip("/") + "/"
        stale: list[PageFile] = []
        with self._lock:
            gone = [k for k in self._windows if k[0] == path or (below and k[0].startswith(prefix))]
            for key in gone:
                for page in self._windows.pop(key).pages.values():
                    pooled = self._open.pop((page.path, page.offset), None)
                    if pooled is not None:
                        stale.append(pooled)
        # Closed now, not by the next read: closing the last descriptor of a removed file
        # frees its cached pages, which costs a read that meets it milliseconds per page.
        for pooled in stale:
            pooled.close()

    def close(self) -> None:
        """Close the page files kept open. The reader stays usable. Idempotent."""
        with self._lock:
            pooled, self._open = list(self._open.values()), OrderedDict()
        for opened in pooled:
            opened.close()

    def _count(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[name] += amount

    def stats(self) -> dict[str, int]:
        """Counts since start: ``short_circuit_bytes``, ``http_bytes``, ``locates`` and
        ``miss_<reason>`` per :class:`~pagestore.shortcircuit.Miss`."""
        with self._lock:
            return dict(self._counts)


def _typed_ints(value: Any) -> list[int]:
    if not isinstance(value, list) or any(type(v) is not int for v in value):
        raise ValueError(f"malformed missing pages: {value!r}")
    return value
