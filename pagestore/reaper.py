"""The disk store's shared state, and what removes pages from it: unlinking the files of pages
dropped from the index (at once or in the background), draining sparse packs, and taking a
failed directory out of service."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from pagestore.counters import Count, PageCounters
from pagestore.dirs import StoreDir
from pagestore.index import PageIndex
from pagestore.page import PageKey

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass
class DiskState:
    """What the disk store's parts share. ``lock`` guards everything here but each directory's
    ``disk`` (safe on its own) and ``counters`` (their own leaf lock). A key is in ``busy``
    while its file is being written or unlinked: no other writer touches it, so a late unlink
    never removes a newer file."""

    dirs: list[StoreDir]
    lock: threading.Lock = field(default_factory=threading.Lock)
    index: PageIndex = field(default_factory=PageIndex)
    busy: set[PageKey] = field(default_factory=set)
    counters: PageCounters = field(default_factory=PageCounters)


@dataclass
class Reservation:
    """Room made for a page in ``dir``: whether the page's file needs its record, and what was
    evicted for it, by directory (a quota's victims may be in any): the pages and the records
    of files they left without pages, both to unlink (:meth:`Reaper.unlink_evicted`)."""

    dir: StoreDir
    write_record: bool
    victims: dict[int, tuple[StoreDir, list[PageKey], list[str]]] = field(default_factory=dict)

    @property
    def evicted(self) -> int:
        return sum(len(keys) for _, keys, _ in self.victims.values())


class Reaper:
    """Removes what the disk store dropped. Thread-safe: it takes the state's lock only for
    in-memory work, never while unlinking."""

    def __init__(self, state: DiskState) -> None:
        self._state = state
        self._janitor: ThreadPoolExecutor | None = None

    def start(self) -> None:
        self._janitor = ThreadPoolExecutor(1, thread_name_prefix="pagestore-janitor")

    def close(self) -> None:
        """Finish the unlinks handed to the background."""
        if self._janitor is not None:
            self._janitor.shutdown(wait=True)

    def forget(self, d: StoreDir, key: PageKey) -> list[str]:
        """Remove a page from the index (under the lock) and make its key busy; the caller
        unlinks its file, and the records returned (its file's, if this was the file's last
        page)."""
        entry = self._state.index.remove(key)
        d.evictor.on_delete(key)
        self._state.busy.add(key)
        if entry is None:
            return []
        d.used -= entry.size
        return self.release(d, key.file_id)

    def evict(self, reservation: Reservation, victim: PageKey, d: StoreDir | None = None) -> None:
        """Forget ``victim`` (under the lock) for ``reservation``, from ``d`` or (None) the
        directory the index names."""
        if d is None:
            entry = self._state.index.get(victim)
            d = reservation.dir if entry is None else self._state.dirs[entry.dir]
        _, keys, records = reservation.victims.setdefault(d.number, (d, [], []))
        records += self.forget(d, victim)
        keys.append(victim)

    def unlink_evicted(self, reservation: Reservation) -> None:
        """Unlink what :meth:`evict` forgot for ``reservation`` (without the lock)."""
        for d, keys, records in reservation.victims.values():
            self.unlink(d, keys, records)

    @staticmethod
    def release(d: StoreDir, file_id: str) -> list[str]:
        """Drop a page's reference on its file (under the lock); the file ids whose record the
        caller must unlink (and pass to :meth:`unlink`)."""
        return [file_id] if d.files.release(file_id) else []

    def unlink_later(self, d: StoreDir, keys: list[PageKey], records: list[str]) -> None:
        try:
            if self._janitor is not None:
                self._janitor.submit(self.unlink, d, keys, records)
                return
        except RuntimeError:
            pass  # the janitor has shut down (the store is closing): unlink here instead
        self.unlink(d, keys, records)

    def unlink(self, d: StoreDir, keys: list[PageKey], records: list[str]) -> None:
        """Unlink page files of keys made busy by the caller, releasing each key as soon as its
        file is gone, then unlink the records of files left without pages (see FileTable).

        Each key is released on its own: a file read again right after its invalidation (same
        version, same keys) stores each page once that page's old file is gone, instead of
        having every write refused until the whole file is unlinked (a 1 GB file re-read at once
        lost its first 200 pages that way)."""
        state = self._state
        released = 0
        try:
            for key in keys:
                self._io(d.disk.unlink, key, key.file_name)
                with state.lock:
                    state.busy.discard(key)
                released += 1
        finally:
            if released < len(keys):
                with state.lock:
                    state.busy.difference_update(keys[released:])
        if keys:
            self._drain(d, d.disk.take_sparse())
        for file_id in records:
            self._io(d.disk.unlink_record, file_id, f"the URI record of {file_id}")
            with state.lock:
                rewrite = d.files.removed(file_id)
            if rewrite is not None and self._io(
                functools.partial(d.disk.write_record, uri=rewrite), file_id, "a URI record"
            ):
                with state.lock:
                    d.files.written(file_id)

    def _drain(self, d: StoreDir, keys: list[PageKey]) -> None:
        """Drop the last pages of packs that became sparse (see ``Pack.sparse``), as evictions,
        so their packs are unlinked and the space they hold comes back."""
        state = self._state
        doomed: list[PageKey] = []
        records: list[str] = []
        with state.lock:
            for key in keys:
                entry = state.index.get(key)
                if entry is not None and entry.dir == d.number and key not in state.busy:
                    records += self.forget(d, key)
                    doomed.append(key)
        if doomed:
            state.counters.add(Count.EVICTIONS, len(doomed))
            self.unlink(d, doomed, records)

    def _io(self, action: Callable[[_T], None], what: _T, name: str) -> bool:
        """Run an unlink (or a record's rewrite); a failure is counted and logged, and a file
        left behind is an orphan the next restore removes."""
        try:
            action(what)
        except OSError as exc:
            self._state.counters.add(Count.IO_ERRORS)
            logger.warning("removing or writing %s failed: %s", name, exc)
            return False
        return True

    def take_out_of_service(self, d: StoreDir, reason: str) -> None:
        """Stop using a directory that failed: its pages leave the index (their files stay)."""
        state = self._state
        with state.lock:
            if not d.in_service:
                return
            d.take_out_of_service()
            dropped = [key for key, entry in state.index if entry.dir == d.number]
            for key in dropped:
                state.index.remove(key)
        logger.error(
            "page directory %s is out of service (%s); %d pages dropped from the index",
            d.disk.root,
            reason,
            len(dropped),
        )
