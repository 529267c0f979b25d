"""Which page directories the store may use and clean: those it marked as its own.

A page directory the store creates, or finds empty, gets a marker file, ``DORACACHE``, before
anything else is written there. A directory with the marker is the store's; a non-empty
directory without it is somebody else's, and the store refuses to start on it rather than
delete anything (:class:`ForeignPageDirError`). Stores of earlier versions wrote no marker: a
directory holding nothing but what such a store creates (its lock file and its layout, see
:mod:`pagestore.layout`) is adopted and marked.

Damage is not foreignness: a marker that does not read as it should (a flipped bit) in a
directory that holds the store's layout and nothing else is the store's own, damaged
(:class:`DamagedMarkerError`): the store serves it as a failing directory, deletes nothing in
it and does not rewrite the marker, since it cannot prove the directory is its own.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from pagestore import modes
from pagestore.layout import (
    GENERATIONS,
    PACKS,
    Kind,
    classify,
    is_bucket,
    is_layout,
    pack_of,
)

logger = logging.getLogger(__name__)

MARKER = "DORACACHE"
MARKER_TEXT = b"doracache page store\n"
LOCK_FILE = ".lock"
_MARKER_TEMP = f".{MARKER}.tmp"
# mkfs makes it at the root of every ext file system: a dedicated disk mounted as a page
# directory is still empty. The store never touches it.
_LOST_FOUND = "lost+found"
_SHOWN = 5  # foreign entries named in the error


class ForeignPageDirError(Exception):
    """A page directory that is not empty and is not a page store's (no marker, or the marker
    of something else). The store does not start and touches nothing in it."""


class DamagedMarkerError(OSError):
    """A page directory whose marker is damaged but which holds the store's layout and nothing
    else: the store's own, served as a failing directory (an OSError, as a failing disk's)."""


def check(root: Path) -> bool:
    """Whether the existing directory ``root`` may be used; True if it still needs its marker
    (it is empty, or an unmarked store of an earlier version). Raises ForeignPageDirError,
    DamagedMarkerError, or OSError when the directory cannot be inspected."""
    marker = root / MARKER
    if marker.is_file() and not marker.is_symlink():
        if marker.read_bytes() != MARKER_TEXT:
            raise _damaged_or_foreign(root)
        return False
    foreign = _foreign_entries(root)
    if foreign:
        shown = ", ".join(repr(name) for name in foreign[:_SHOWN])
        raise ForeignPageDirError(
            f"page directory {str(root)!r} is not empty and is not a page store (it has no "
            f"{MARKER} marker and holds {shown}); refusing to use it, so nothing in it is "
            "deleted: point dora.worker.page.store.dirs at an empty or new directory"
        )
    if any(entry.name != _LOST_FOUND for entry in _entries(root)):
        logger.info("adopting page directory %s, written by an earlier version", root)
    return True


def _damaged_or_foreign(root: Path) -> Exception:
    """The error for ``root``, whose marker does not read as the store's."""
    layouts = [e for e in _entries(root) if is_layout(e.name) and e.is_dir(follow_symlinks=False)]
    if layouts and not _foreign_entries(root):
        return DamagedMarkerError(
            f"page directory {str(root)!r} holds a page store's layout but its {MARKER} marker "
            f"is damaged (it should read {MARKER_TEXT!r}); nothing in it is used or deleted: "
            "check the disk, then write the marker back or empty the directory"
        )
    return ForeignPageDirError(
        f"page directory {str(root)!r} carries a {MARKER} marker of another kind "
        "(not a page store); refusing to use it: point dora.worker.page.store.dirs "
        "at a directory of its own"
    )


def mark(root: Path) -> None:
    """Write the marker atomically (a crash leaves no marker or a whole one). Raises OSError."""
    temp = root / _MARKER_TEMP
    modes.write_file(temp, MARKER_TEXT, modes.SHARED_FILE)
    os.rename(temp, root / MARKER)


def _foreign_entries(root: Path) -> list[str]:
    """Paths (relative to ``root``) of entries no page store creates; only the first few."""
    foreign: list[str] = []
    for path in _walk_foreign(root):
        foreign.append(path)
        if len(foreign) == _SHOWN:
            break
    return foreign


def _walk_foreign(root: Path) -> Iterator[str]:
    for entry in _entries(root):
        own = (LOCK_FILE, MARKER, _MARKER_TEMP, GENERATIONS)
        if entry.name in own and entry.is_file(follow_symlinks=False):
            continue
        if entry.name == _LOST_FOUND and entry.is_dir(follow_symlinks=False):
            continue
        if not (is_layout(entry.name) and entry.is_dir(follow_symlinks=False)):
            yield entry.name
            continue
        for bucket in _entries(Path(entry.path)):
            if bucket.name == PACKS and bucket.is_dir(follow_symlinks=False):
                yield from _foreign_in_packs(f"{entry.name}/{PACKS}", Path(bucket.path))
                continue
            if not (is_bucket(bucket.name) and bucket.is_dir(follow_symlinks=False)):
                yield f"{entry.name}/{bucket.name}"
                continue
            for item in _entries(Path(bucket.path)):
                if not item.is_file(follow_symlinks=False) or (
                    classify(bucket.name, item.name) is Kind.FOREIGN
                ):
                    yield f"{entry.name}/{bucket.name}/{item.name}"


def _foreign_in_packs(name: str, packs: Path) -> Iterator[str]:
    """The entries of a layout's packs directory that are not packs (packs are written in
    place, so the store leaves nothing else there)."""
    for item in _entries(packs):
        if pack_of(item.name) is None or not item.is_file(follow_symlinks=False):
            yield f"{name}/{item.name}"


def _entries(path: Path) -> list[os.DirEntry[str]]:
    with contextlib.closing(os.scandir(path)) as entries:
        return sorted(entries, key=lambda e: e.name)
