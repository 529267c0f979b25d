"""A page store in memory, for tests of the components that use a page store."""

from __future__ import annotations

from collections.abc import Sequence

from pagestore.api import Lookup, PageRead, PutResult, StoreStats
from pagestore.base import (
    BasePageStore,
    Count,
    Invalidation,
    check_pages,
    check_range,
    slice_page,
)
from pagestore.evict import Evictor, make_evictor
from pagestore.files import uri_under
from pagestore.options import PageStoreOptions
from pagestore.page import PageId, PageKey, version_key
from pagestore.shortcircuit import PageLocations


class MemoryPageStore(BasePageStore):
    """Pages in a dict, bounded by the total capacity of the configured directories (which are
    never touched), with the configured eviction policy. Same contract as LocalPageStore, ready
    from the start. Thread-safe: one lock guards the pages and the evictor; no I/O is done.
    """

    def __init__(self, options: PageStoreOptions) -> None:
        super().__init__()
        self.options = options
        self.page_size = options.page_size
        self._capacity = options.capacity_bytes
        self._pages: dict[PageKey, bytes] = {}
        self._uris: dict[str, tuple[str, int]] = {}  # file id -> its URI and its page count
        self._used = 0
        self._evictor: Evictor[PageKey] = make_evictor(options.evictor)
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

    def read(self, page_id: PageId, offset: int = 0, length: int | None = None) -> PageRead:
        check_range(offset, length)
        key = page_id.key
        with self._lock:
            data = self._pages.get(key)
            if data is not None:
                self._evictor.on_get(key)
        if data is None:
            self._counters.add(Count.MISSES)
            return PageRead(Lookup.MISS)
        data = slice_page(data, offset, length)
        self._counters.add_hit(len(data))
        return PageRead(Lookup.HIT, data)

    def locate(
        self, file_id: str, version: str, first: int = 0, last: int | None = None
    ) -> PageLocations:
        """No page has a file: every page is to be read through the store."""
        check_pages(first, last)
        return PageLocations(file_id, version, self.page_size, ())

    def has_page(self, page_id: PageId) -> bool:
        with self._lock:
            return page_id.key in self._pages

    def cached_bytes(self, file_id: str, version: str) -> int:
        vkey = version_key(version)
        with self._lock:
            return sum(
                len(data)
                for key, data in self._pages.items()
                if key.file_id == file_id and key.version_key == vkey
            )

    def cached_bytes_many(self, files: Sequence[tuple[str, str]]) -> list[int]:
        return [self.cached_bytes(file_id, version) for file_id, version in files]

    def _store(self, page_id: PageId, data: bytes, uri: str, since: int) -> PutResult:
        if len(data) > self.page_size:
            return PutResult.TOO_LARGE
        key = page_id.key
        evicted = 0
        with self._lock:
            if self._closed or self._invalidations.invalidated_since(since, key, uri):
                return PutResult.REJECTED
            if key in self._pages:
                return PutResult.OK
            while self._used + len(data) > self._capacity:
                victim = self._evictor.evict()
                if victim is None:
                    return PutResult.NO_SPACE
                self._remove(victim)
                evicted += 1
            self._pages[key] = bytes(data)
            self._used += len(data)
            pages = self._uris.get(key.file_id, (uri, 0))[1]
            self._uris[key.file_id] = (uri, pages + 1)
            self._evictor.on_put(key)
        if evicted:
            self._counters.add(Count.EVICTIONS, evicted)
        return PutResult.OK

    def delete_file(self, file_id: str, version: str | None = None) -> int:
        vkey = None if version is None else version_key(version)
        with self._lock:
            self._invalidations.record(Invalidation(file_id, vkey))
            doomed = [
                key
                for key in self._pages
                if key.file_id == file_id and vkey in (None, key.version_key)
            ]
            for key in doomed:
                self._remove(key)
        if doomed:
            self._counters.add(Count.INVALIDATED_PAGES, len(doomed))
        return len(doomed)

    def _prefix_invalidated(self, prefix: str) -> set[str]:
        return {file_id for file_id, (uri, _) in self._uris.items() if uri_under(uri, prefix)}

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
            return self._stats(
                pages=len(self._pages), used_bytes=self._used, capacity_bytes=self._capacity
            )
