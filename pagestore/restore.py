"""Rebuilding the page index from the page directories after a restart."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pagestore.disk import PageDir, ScanEntry

logger = logging.getLogger(__name__)

Admit = Callable[[int, list[ScanEntry]], list[ScanEntry]]
"""Offer one directory's pages (by its number) to the index; returns the ones refused."""


@dataclass(frozen=True)
class RestoreReport:
    pages: int
    removed: int
    seconds: float
    complete: bool


def restore(
    dirs: Sequence[tuple[int, PageDir]],
    admit: Admit,
    stop: threading.Event,
    clock: Callable[[], float],
) -> RestoreReport:
    """Scan every directory bucket by bucket, handing pages to ``admit`` as they are found (so
    they become readable while the rest is scanned) and removing temporary files, junk and
    refused pages (duplicates, over capacity, invalidated meanwhile). Stops early when ``stop``
    is set. A directory that fails mid-scan is logged and skipped; nothing is raised.

    Pages are not read, only listed: a torn or altered page is found when it is first read.
    They reach the evictor in scan order, so the first evictions after a restart follow that
    order rather than the last run's recency.
    """
    started = clock()
    pages = removed = 0
    for number, disk in dirs:
        try:
            for batch in disk.scan():
                if stop.is_set():
                    return RestoreReport(pages, removed, clock() - started, complete=False)
                found = [entry for entry in batch if entry.key is not None]
                refused = admit(number, found)
                doomed = [entry for entry in batch if entry.key is None] + refused
                pages += len(found) - len(refused)
                removed += _remove(disk, doomed)
        except OSError as exc:
            logger.warning("restoring pages from %s stopped: %s", disk.root, exc)
    return RestoreReport(pages, removed, clock() - started, complete=True)


def _remove(disk: PageDir, entries: list[ScanEntry]) -> int:
    """Remove files; one that cannot be removed (say, on a read-only disk) is left behind and
    refused again next time, which is harmless."""
    removed = 0
    for entry in entries:
        try:
            disk.remove(entry)
            removed += 1
        except OSError as exc:
            logger.warning("cannot remove %s: %s", entry.path, exc)
    return removed


def remove_other_layouts(dirs: Sequence[tuple[int, PageDir]]) -> None:
    """Delete pages written with another page size; they can never be read again."""
    for _, disk in dirs:
        try:
            removed = disk.remove_other_layouts()
        except OSError as exc:
            logger.warning("cleaning old page layouts in %s failed: %s", disk.root, exc)
            continue
        if removed:
            logger.info("removed %d old page layout(s) from %s", removed, disk.root)
