"""A store in memory, for tests of the components that use a page cache."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from pagestore.api import ChargeOf, Keep, PutResult, StoreStats
from pagestore.evict import DEFAULT_EVICTOR, make_evictor
from pagestore.files import uri_under
from pagestore.page import PageId, PageKey, slice_page, version_key
from pagestore.pins import HALF, PinMax, PinningEvictor, PinState, pin_file
from pagestore.quota import NO_CHARGE, Charge, QuotaBook
from pagestore.shortcircuit import PageLocations


class MemoryStore:
    """Pages in a dict, bounded to ``capacity`` bytes, with the eviction policy ``evictor``
    (a :class:`~pagestore.api.Store`). Ready from the start; nothing survives a restart, and
    no page has a file (short-circuit readers ask the worker for them).

    Thread-safe: one lock guards the pages, the URIs and the evictor; no I/O is done.
    """

    def __init__(
        self, page_size: int, capacity: int, evictor: str = DEFAULT_EVICTOR, pin_max: PinMax = HALF
    ) -> None:
        self.page_size = page_size
        self._capacity = capacity
        self._lock = threading.Lock()
        self._pages: dict[PageKey, bytes] = {}
        self._uris: dict[str, tuple[str, int]] = {}  # file id -> its URI and its page count
        self._used = 0
        self._evictions = 0
        self._pins = PinState(pin_max.limit(capacity))
        self._quotas = QuotaBook(evictor)
        self._evictor = PinningEvictor(
            make_evictor(evictor), self._pins, self._page_bytes, self._quotas
        )
        self._closed = False

    def start(self) -> None:
        """Nothing to open or restore."""

    def close(self) -> None:
        with self._lock:
            self._closed = True

    @property
    def ready(self) -> bool:
        return True

    def wait_ready(self, timeout: float | None = None) -> bool:
        return True

    def read(self, page_id: PageId, offset: int, length: int | None) -> bytes | None:
        key = page_id.key
        with self._lock:
            data = self._pages.get(key)
            if data is not None:
                self._evictor.on_get(key)
        return None if data is None else slice_page(data, offset, length)

    def has_page(self, page_id: PageId) -> bool:
        with self._lock:
            return page_id.key in self._pages

    def locate(self, file_id: str, version: str, first: int, last: int | None) -> PageLocations:
        """No page has a file: every page is to be read through the worker."""
        return PageLocations(file_id, version, self.page_size, ())

    def cached_bytes_many(self, files: Sequence[tuple[str, str]]) -> list[int]:
        wanted = {(file_id, version_key(version)) for file_id, version in files}
        held = dict.fromkeys(wanted, 0)
        with self._lock:
            for key, data in self._pages.items():
                if (key.file_id, key.version_key) in wanted:
                    held[key.file_id, key.version_key] += len(data)
        return [held[file_id, version_key(version)] for file_id, version in files]

    def _page_bytes(self, key: PageKey) -> int:
        return len(self._pages.get(key, b""))

    def pin(self, file_id: str, pinned: bool) -> None:
        with self._lock:
            pin_file(self._pins, [self._evictor], file_id, pinned)

    def charge_restored(self, charge_of: ChargeOf) -> None:
        """Nothing is restored."""

    def put_many(
        self, pages: Sequence[tuple[PageId, bytes, str]], keep: Keep, charge: Charge = NO_CHARGE
    ) -> list[PutResult]:
        results = []
        evicted = 0
        with self._lock:
            for page_id, data, uri in pages:
                result, victims = self._put(page_id.key, data, uri, keep, charge)
                results.append(result)
                evicted += victims
            self._evictions += evicted
        return results

    def _put(
        self, key: PageKey, data: bytes, uri: str, keep: Keep, charge: Charge
    ) -> tuple[PutResult, int]:
        """Store one page under the lock; the outcome and how many pages were evicted."""
        if self._closed or not keep(key, uri):
            return PutResult.REJECTED, 0
        if key in self._pages:
            return PutResult.OK, 0
        if len(data) > self._capacity:
            return PutResult.TOO_LARGE, 0
        evicted = 0
        if not self._quotas.can_fit(charge, len(data)):
            return PutResult.OVER_QUOTA, 0
        while (victim := self._quotas.next_victim(charge, len(data))) is not None:
            self._remove(victim)
            evicted += 1
        while self._used + len(data) > self._capacity:
            victim = self._evictor.evict()
            if victim is None:
                return PutResult.NO_SPACE, evicted
            self._remove(victim)
            evicted += 1
        self._pages[key] = bytes(data)
        self._used += len(data)
        pages = self._uris.get(key.file_id, (uri, 0))[1]
        self._uris[key.file_id] = (uri, pages + 1)
        self._quotas.expect(key, charge)
        self._evictor.on_put(key)
        return PutResult.OK, evicted

    def delete_file(self, file_id: str, version: str | None) -> int:
        vkey = None if version is None else version_key(version)
        with self._lock:
            doomed = [
                key
                for key in self._pages
                if key.file_id == file_id and vkey in (None, key.version_key)
            ]
            for key in doomed:
                self._remove(key)
        return len(doomed)

    def files_under(self, prefix: str) -> set[str]:
        with self._lock:
            return {file_id for file_id, (uri, _) in self._uris.items() if uri_under(uri, prefix)}

    def file_uris(self) -> dict[str, str]:
        with self._lock:
            return {file_id: uri for file_id, (uri, _) in self._uris.items()}

    def _remove(self, key: PageKey) -> None:
        self._used -= len(self._pages.pop(key))
        self._evictor.on_delete(key)
        uri, pages = self._uris[key.file_id]
        if pages == 1:
            del self._uris[key.file_id]
        else:
            self._uris[key.file_id] = (uri, pages - 1)

    @property
    def page_count(self) -> int:
        with self._lock:
            return len(self._pages)

    @property
    def used_bytes(self) -> int:
        with self._lock:
            return self._used

    @property
    def capacity_bytes(self) -> int:
        return self._capacity

    def stats(self) -> StoreStats:
        with self._lock:
            return StoreStats(
                pages=len(self._pages),
                used_bytes=self._used,
                capacity_bytes=self._capacity,
                evictions=self._evictions,
                pinned_bytes=self._pins.used,
                pin_limit_bytes=self._pins.limit,
                quotas=self._quotas.usage(),
            )
