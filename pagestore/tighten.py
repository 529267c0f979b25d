"""Bringing a page directory made before the cache set its modes itself (under a looser umask)
to the modes it uses now (:mod:`pagestore.modes`), when the store opens it.

A directory of the store that group or others may write lets them plant a page that the worker
and its short-circuit clients serve, so tightening cannot wait for the pages to be rewritten.
Only bits are taken away (a tighter mode is left as it is), only from what the store names as
its own (:mod:`pagestore.layout`), and never through a symbolic link.

It costs one ``lstat`` per directory when nothing is loose. A loose directory has its files
tightened before itself, so a directory found tight holds tight files even after a crash in
the middle: the files of tight directories are not looked at.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from pagestore import modes
from pagestore.layout import GENERATIONS, PACKS, Kind, classify, is_bucket, pack_of

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class Tightened:
    """What :func:`tighten` changed."""

    directories: int = 0
    files: int = 0


def tighten(root: Path, base: Path, own_root_files: tuple[str, ...]) -> Tightened:
    """Tighten the page directory ``root``, its layout ``base`` and the buckets and packs under
    it, deepest first, with the files in each that was loose; log what changed. The caller
    holds the directory's lock. Raises OSError."""
    done = Tightened()
    root = Path(os.path.realpath(root))  # the configured path may be a link to the directory
    base = root / base.name
    for directory, own in _own_directories(root, base, own_root_files):
        mode = stat.S_IMODE(os.lstat(directory).st_mode)
        if not mode & ~modes.SHARED_DIR:
            continue
        for path in _own_files(directory, own):
            done.files += modes.tighten(path, modes.SHARED_FILE)
        done.directories += modes.tighten(directory, modes.SHARED_DIR)
    if done.directories or done.files:
        logger.warning(
            "page directory %s was made under a looser umask: took group and other write "
            "(and other read) away from %d directories and %d files (now at most %o and %o)",
            root,
            done.directories,
            done.files,
            modes.SHARED_DIR,
            modes.SHARED_FILE,
        )
    return done


def _own_directories(
    root: Path, base: Path, own_root_files: tuple[str, ...]
) -> Iterator[tuple[str, Callable[[str], bool]]]:
    """The store's directories, deepest first, each with which of its file names are own."""
    for entry in _entries(str(base)):
        if not entry.is_dir(follow_symlinks=False):
            continue
        if entry.name == PACKS:
            yield entry.path, lambda name: pack_of(name) is not None
        elif is_bucket(entry.name):
            yield entry.path, partial(_in_bucket, entry.name)
    if base.is_dir() and not base.is_symlink():
        yield str(base), lambda name: False
    yield str(root), {*own_root_files, GENERATIONS}.__contains__


def _in_bucket(bucket: str, name: str) -> bool:
    return classify(bucket, name) is not Kind.FOREIGN


def _own_files(directory: str, own: Callable[[str], bool]) -> Iterator[str]:
    """The regular files of ``directory`` whose names are own."""
    for entry in _entries(directory):
        if own(entry.name) and entry.is_file(follow_symlinks=False):
            yield entry.path


def _entries(path: str) -> list[os.DirEntry[str]]:
    try:
        with contextlib.closing(os.scandir(path)) as entries:
            return list(entries)
    except FileNotFoundError:
        return []
