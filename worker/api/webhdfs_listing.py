"""``LISTSTATUS_BATCH`` paging: a directory listed once, then served batch by batch.

Hadoop's client pages a large directory with one call per batch, each naming the last entry it
got (``startAfter``). WebHdfsListing the directory again for each batch made paging quadratic (50k
entries: 50 full listings), and could hand out batches of different listings when the
directory changed meanwhile. A listing's first batch (no ``startAfter``) takes the listing as
the service answers it (its freshness rules apply there); the batches that continue it, for a
short while, page through that same listing by binary search. A continuation that finds no
listing kept (expired, evicted, another worker) lists again, as before.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ufs.status import UfsStatus
from worker.api import webhdfs_json as shapes

BATCH_SIZE = 1000
KEEP_SECONDS = 60.0
KEPT_LISTINGS = 32


@dataclass(frozen=True)
class WebHdfsListing:
    """One directory's children, sorted by name (as HDFS pages them: by their bytes, which
    for UTF-8 is the order of code points)."""

    names: tuple[str, ...]
    statuses: tuple[UfsStatus, ...]

    @classmethod
    def of(cls, statuses: Sequence[UfsStatus]) -> WebHdfsListing:
        ordered = sorted(statuses, key=lambda s: s.name)
        return cls(tuple(s.name for s in ordered), tuple(ordered))

    def batch(self, after: str | None, size: int) -> dict[str, Any]:
        """The ``DirectoryListing`` of up to ``size`` entries named after ``after``."""
        start = 0 if after is None else bisect.bisect_right(self.names, after)
        chosen = self.statuses[start : start + size]
        entries = [shapes.file_status(s, s.name) for s in chosen]
        return shapes.directory_listing(entries, len(self.names) - start - len(chosen))


class ListingPages:
    """The listings being paged through, by URI: at most ``kept``, each for ``keep_s``
    seconds after it was taken. Thread-safe (one lock, held only to look up or store)."""

    def __init__(
        self,
        keep_s: float = KEEP_SECONDS,
        kept: int = KEPT_LISTINGS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._keep_s = keep_s
        self._kept = kept
        self._clock = clock
        self._lock = threading.Lock()
        self._listings: OrderedDict[str, tuple[float, WebHdfsListing]] = OrderedDict()

    def page(
        self, uri: str, after: str | None, take: Callable[[], Sequence[UfsStatus]]
    ) -> dict[str, Any]:
        """The batch after ``after`` of directory ``uri``: from the listing kept for it when
        this continues one, else from a new listing ``take()`` (then kept)."""
        listing = self._kept_listing(uri) if after is not None else None
        if listing is None:
            listing = WebHdfsListing.of(take())
            self._keep(uri, listing)
        return listing.batch(after, BATCH_SIZE)

    def _kept_listing(self, uri: str) -> WebHdfsListing | None:
        with self._lock:
            kept = self._listings.get(uri)
            if kept is None or self._clock() - kept[0] > self._keep_s:
                return None
            return kept[1]

    def _keep(self, uri: str, listing: WebHdfsListing) -> None:
        with self._lock:
            self._listings[uri] = (self._clock(), listing)
            self._listings.move_to_end(uri)
            while len(self._listings) > self._kept:
                self._listings.popitem(last=False)
