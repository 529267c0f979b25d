"""A store composed over two stores: a small, fast front tier holding copies of the back tier's
small pages (the memory tier over the disk store).

The back store stays the store of record: its space, restore, short-circuit locations and
cached bytes are what the tiered store reports. The front is written through: a page of at
most ``page_limit`` bytes that the back store takes is copied in front, under the same
``keep`` (so a fill an invalidation overtook is kept out of both). Pages are not promoted from
reads of the back store: a promotion does not know the page's URI, which the front needs to
find the page when a prefix is invalidated, and a copy made while an invalidation of its file
is deleting it would outlive the invalidation (the trap of the first memory tier, commit
46e5be8).
"""

from __future__ import annotations

from collections.abc import Sequence

from pagestore.api import ChargeOf, Keep, PutResult, Store, StoreStats
from pagestore.page import PageId
from pagestore.quota import NO_CHARGE, Charge
from pagestore.shortcircuit import PageLocations


class TieredStore:
    """A :class:`~pagestore.api.Store` of ``front`` over ``back`` (see the module).

    Thread-safe as its stores are; it holds no lock of its own, and calls one store at a time.
    """

    def __init__(self, front: Store, back: Store, page_limit: int) -> None:
        if front.page_size != back.page_size:
            raise ValueError(f"tiers of page sizes {front.page_size} and {back.page_size}")
        self.page_size = back.page_size
        self._front = front
        self._back = back
        self._limit = page_limit

    def start(self) -> None:
        self._front.start()
        self._back.start()

    def close(self) -> None:
        self._back.close()
        self._front.close()

    @property
    def ready(self) -> bool:
        return self._back.ready

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._back.wait_ready(timeout)

    def read(self, page_id: PageId, offset: int, length: int | None) -> bytes | None:
        data = self._front.read(page_id, offset, length)
        return data if data is not None else self._back.read(page_id, offset, length)

    def has_page(self, page_id: PageId) -> bool:
        return self._front.has_page(page_id) or self._back.has_page(page_id)

    def put_many(
        self, pages: Sequence[tuple[PageId, bytes, str]], keep: Keep, charge: Charge = NO_CHARGE
    ) -> list[PutResult]:
        results = self._back.put_many(pages, keep, charge)
        small = [
            page
            for page, result in zip(pages, results, strict=True)
            if result is PutResult.OK and len(page[1]) <= self._limit
        ]
        if small:
            # ``keep`` again: an invalidation that came after the back store took the pages
            # keeps their copies out too; and the charge again: copies keep within quotas too.
            self._front.put_many(small, keep, charge)
        return results

    def delete_file(self, file_id: str, version: str | None) -> int:
        self._front.delete_file(file_id, version)
        return self._back.delete_file(file_id, version)

    def pin(self, file_id: str, pinned: bool) -> None:
        self._front.pin(file_id, pinned)
        self._back.pin(file_id, pinned)

    def charge_restored(self, charge_of: ChargeOf) -> None:
        self._back.charge_restored(charge_of)  # the front restores nothing

    def files_under(self, prefix: str) -> set[str]:
        return self._back.files_under(prefix) | self._front.files_under(prefix)

    def file_uris(self) -> dict[str, str]:
        return self._front.file_uris() | self._back.file_uris()

    def cached_bytes_many(self, files: Sequence[tuple[str, str]]) -> list[int]:
        return self._back.cached_bytes_many(files)

    def locate(self, file_id: str, version: str, first: int, last: int | None) -> PageLocations:
        return self._back.locate(file_id, version, first, last)

    @property
    def page_count(self) -> int:
        return self._back.page_count

    @property
    def used_bytes(self) -> int:
        return self._back.used_bytes

    @property
    def capacity_bytes(self) -> int:
        return self._back.capacity_bytes

    def stats(self) -> StoreStats:
        return self._back.stats()
