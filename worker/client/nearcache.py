"""A per-process near-cache of statuses and listings for a client on the worker's host
(DESIGN.md, "The same-host fast path"): a warm ``info()`` or ``ls()`` is a dictionary lookup and
a few memory reads, no call.

An answer is kept with the generation counters that cover it (:mod:`worker.common.generations`),
read *before* the call that fetched it, and served only while they are unchanged, so a change
made through the worker by any process on the host is seen at once. A child's status taken from
a listing is covered by its directory's counter, which every change to a child bumps.

Freshness against the UFS follows the caller's sync interval; a call without one gets what the
worker said a call to that path without one gets (its per-path rule, else its default:
``sync_interval_ms`` in its answers), or the worker's default when it said nothing:
``-1`` (never re-check) serves a kept answer for up to ``ttl_ms``; ``0`` never serves one; a
positive interval ``N`` serves it while its age — the worker's ``age_ms`` when it answered, plus
the time since the client asked — stays within ``N`` (and the kept time within ``ttl_ms``), so
the caller never gets a status older than it allowed. An answer without an age is not served
for a positive interval. A ``version=`` ask is served when the kept status names that version.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ufs import uri as uris
from ufs.errors import UfsInvalidPath
from worker.common.generations import GenerationView, Stamp
from worker.common.sync import stricter

DEFAULT_MAX_ENTRIES = 100_000
DEFAULT_TTL_MS = 10_000
_CANONICAL_CACHE = 65536


@dataclass(frozen=True, slots=True)
class _Entry:
    value: Any
    covered_by: str  # the canonical URI whose counters cover it
    stamp: Stamp
    filled_at: float  # monotonic seconds, when the call that fetched it began
    age: float | None  # seconds since the worker confirmed it, as it answered; None: unknown
    interval: int | None  # ms, what a call without sync_interval gets; None: the default


class NearCache:
    """Statuses and listings (whatever the client keeps for them, e.g. fsspec info dicts),
    keyed by canonical URI, at most ``max_entries`` statuses and as many listings (the least
    recently used go first).

    Thread-safe: one lock around the maps, never held during a call. The values are shared
    with callers, who must not mutate them."""

    def __init__(
        self,
        generations: GenerationView,
        default_sync_interval_ms: int,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        ttl_ms: int = DEFAULT_TTL_MS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries <= 0 or ttl_ms < 0:
            raise ValueError("max_entries must be positive and ttl_ms not negative")
        self._generations = generations
        self._default_interval = default_sync_interval_ms
        self._max_entries = max_entries
        self._ttl = ttl_ms / 1000
        self._clock = clock
        self._lock = threading.Lock()
        self._statuses: OrderedDict[str, _Entry] = OrderedDict()
        self._listings: OrderedDict[str, _Entry] = OrderedDict()
        self._canonical = functools.lru_cache(maxsize=_CANONICAL_CACHE)(uris.normalize)

    def key(self, path: str) -> str | None:
        """The canonical URI of ``path``; None if it is not a URI the worker would take (the
        worker then answers with the precise error)."""
        try:
            return self._canonical(path)
        except UfsInvalidPath:
            return None

    def stamp(self, key: str) -> Stamp | None:
        """The counters covering ``key`` now: read them before the call whose answer is put."""
        return self._generations.stamp(key)

    def status(
        self, key: str, sync_interval_ms: int | None = None, version: str | None = None
    ) -> Any | None:
        """The kept status of ``key`` if the caller may have it without a call, else None.
        A status is kept with its ``version`` under the key ``"version"``."""
        entry = self._get(self._statuses, key)
        if entry is None or not self._current(entry):
            return None
        if version is not None:
            # Like the worker: a status of the version asked for needs no sync.
            kept = entry.value.get("version") if isinstance(entry.value, Mapping) else None
            return entry.value if kept == version else None
        return entry.value if self._fresh(entry, sync_interval_ms) else None

    def listing(self, key: str, sync_interval_ms: int | None = None) -> Sequence[Any] | None:
        """The kept listing of directory ``key`` if the caller may have it without a call."""
        entry = self._get(self._listings, key)
        if entry is None or not self._current(entry) or not self._fresh(entry, sync_interval_ms):
            return None
        return list(entry.value)

    def now(self) -> float:
        """The near-cache's clock: read it, with :meth:`stamp`, before the call whose answer
        is put."""
        return self._clock()

    def put_status(
        self,
        key: str,
        stamp: Stamp | None,
        asked_at: float,
        value: Any,
        age_ms: int | None,
        interval_ms: int | None = None,
    ) -> None:
        """Keep ``value`` as the status of ``key``, fetched by a call begun at ``asked_at``
        after ``stamp`` was read; ``age_ms``: the worker's age of it (None: unknown);
        ``interval_ms``: the sync interval the worker applies to the path for a call without
        one (None: the default)."""
        if stamp is not None:
            entry = _Entry(value, key, stamp, asked_at, _seconds(age_ms), interval_ms)
            self._put(self._statuses, key, entry)

    def put_listing(
        self,
        key: str,
        stamp: Stamp | None,
        asked_at: float,
        entries: Sequence[tuple[str, Any]],
        age_ms: int | None,
        intervals_ms: Sequence[int | None] | None = None,
    ) -> None:
        """Keep the listing of directory ``key`` (``(canonical child URI, value)`` pairs) as
        :meth:`put_status` keeps a status; each child's status is kept too, by its interval
        of ``intervals_ms`` (None: the default for all), and the listing by the strictest of
        them (an empty listing only for a call that names its own)."""
        if stamp is None:
            return
        age = _seconds(age_ms)
        intervals = list(intervals_ms or [None] * len(entries))
        listing = _Entry([v for _, v in entries], key, stamp, asked_at, age, _strictest(intervals))
        self._put(self._listings, key, listing)
        for (child, value), interval in zip(entries, intervals, strict=True):
            self._put(self._statuses, child, _Entry(value, key, stamp, asked_at, age, interval))

    def forget(self, key: str) -> None:
        """Drop what is kept of ``key`` and its parent's listing. The worker's counters
        already cover a mutation made through it once it answered; this frees the memory at
        once and covers a mutation whose answer was lost."""
        parent = uris.parent(key)
        with self._lock:
            self._statuses.pop(key, None)
            self._listings.pop(key, None)
            if parent is not None:
                self._listings.pop(parent, None)

    def clear(self) -> None:
        with self._lock:
            self._statuses.clear()
            self._listings.clear()

    def _get(self, kept: OrderedDict[str, _Entry], key: str) -> _Entry | None:
        with self._lock:
            entry = kept.get(key)
            if entry is not None:
                kept.move_to_end(key)
            return entry

    def _put(self, kept: OrderedDict[str, _Entry], key: str, entry: _Entry) -> None:
        with self._lock:
            kept[key] = entry
            kept.move_to_end(key)
            while len(kept) > self._max_entries:
                kept.popitem(last=False)

    def _current(self, entry: _Entry) -> bool:
        return self._generations.stamp(entry.covered_by) == entry.stamp

    def _fresh(self, entry: _Entry, sync_interval_ms: int | None) -> bool:
        interval = sync_interval_ms
        if interval is None:
            interval = self._default_interval if entry.interval is None else entry.interval
        kept_for = self._clock() - entry.filled_at
        if kept_for > self._ttl or interval == 0:
            return False
        if interval == -1:
            return True
        return entry.age is not None and entry.age + kept_for <= interval / 1000


def _strictest(intervals: Sequence[int | None]) -> int | None:
    """The strictest known of ``intervals`` (0 before N before -1); None if none is known;
    0 for none at all: nothing tells how fresh an empty listing must be."""
    if not intervals:
        return 0
    known = [i for i in intervals if i is not None]
    return functools.reduce(stricter, known) if known else None


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000
