"""Rebuilding the page index from the page directories after a restart."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pagestore.disk import PageDir, ScanEntry
from pagestore.files import CorruptRecordError

logger = logging.getLogger(__name__)

Admit = Callable[[int, list[ScanEntry], dict[str, str]], list[ScanEntry]]
"""Offer one directory's pages (by its number) to the index, with the URIs of their files (by
file id); returns the pages refused."""


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
    """Scan every directory bucket by bucket (and pack by pack), handing pages to ``admit`` as
    they are found (so they become readable while the rest is scanned) and removing the store's
    temporary files, unusable pages, pages whose file has no readable URI record (prefix
    invalidation could not find them), records left without pages, and refused pages
    (duplicates, over capacity, invalidated meanwhile; a refused page in a pack is marked
    removed). Stops early when ``stop`` is set. A directory that fails mid-scan is logged and
    skipped; nothing is raised.

    Page files are not read, only listed (packs are read for their entries' headers): a torn
    or altered page is found when it is first read.
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
                recorded, doomed = _read_records(disk, batch.records)
                refused = admit(number, batch.pages, {**batch.uris, **recorded})
                refused_ids = {id(entry) for entry in refused}
                kept = {e.key.file_id for e in batch.pages if id(e) not in refused_ids}
                doomed += [batch.records[file_id] for file_id in recorded if file_id not in kept]
                doomed += batch.junk + [entry.path for entry in refused if not entry.packed]
                pages += len(batch.pages) - len(refused)
                removed += _remove(disk, doomed)
                for entry in refused:
                    if entry.packed:
                        disk.unlink(entry.key)
                        removed += 1
        except OSError as exc:
            logger.warning("restoring pages from %s stopped: %s", disk.root, exc)
    return RestoreReport(pages, removed, clock() - started, complete=True)


def _read_records(disk: PageDir, records: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The URIs of the records that can be read, by file id, and the paths of the others."""
    uris: dict[str, str] = {}
    unreadable: list[str] = []
    for file_id, path in records.items():
        try:
            uris[file_id] = disk.read_record(path)
        except (CorruptRecordError, OSError) as exc:
            logger.warning("dropping unreadable URI record %s: %s", path, exc)
            unreadable.append(path)
    return uris, unreadable


def _remove(disk: PageDir, paths: list[str]) -> int:
    """Remove files; one that cannot be removed (say, on a read-only disk) is left behind and
    refused again next time, which is harmless."""
    removed = 0
    for path in paths:
        try:
            disk.remove(path)
            removed += 1
        except OSError as exc:
            logger.warning("cannot remove %s: %s", path, exc)
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
