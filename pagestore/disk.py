"""One page directory on disk: layout, atomic writes, verified reads and scanning.

Layout: ``<root>/<page_size>/<bucket>/<file_id>.<version_key>.<index>`` where ``bucket`` is the
first two characters of the file id, so no directory holds more than a fraction of the pages and
pages written with another page size are never read as this one. Temporary files end in ``.tmp``.

This layer moves bytes and raises (OSError, CorruptPageError); turning failures into misses and
outcomes is the store's job.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pagestore.page import HEADER_SIZE, CorruptPageError, PageKey, encode_header, verify

TEMP_SUFFIX = ".tmp"
_LOCK_FILE = ".lock"
_HEX = "0123456789abcdef"


class DirBusyError(OSError):
    """Another live process holds this page directory."""


@dataclass(frozen=True, slots=True)
class ScanEntry:
    """One file met while scanning: a page (``key`` and data ``size``) or junk to remove."""

    path: str
    key: PageKey | None
    size: int


class PageDir:
    """The files of one page directory. Thread-safe: every method is a few independent syscalls
    on distinct paths, and writers never share a temporary file."""

    def __init__(self, root: Path, page_size: int) -> None:
        self.root = root
        self.page_size = page_size
        self.base = root / str(page_size)
        self._lock_fd: int | None = None
        self._temp_names = itertools.count()

    def open(self) -> None:
        """Create the directory and take an exclusive lock on the directory, so two workers never
        share (and clean up) one directory. Raises DirBusyError or OSError."""
        self.base.mkdir(parents=True, exist_ok=True)
        # Read-only, so holding the lock does not stop the directory being remounted read-only.
        fd = os.open(self.root / _LOCK_FILE, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DirBusyError(f"page directory {self.root} is in use by another process") from None
        self._lock_fd = fd

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def exists(self) -> bool:
        """Whether the directory is still there (it may vanish under a running worker)."""
        return self.base.is_dir()

    def path(self, key: PageKey) -> str:
        return f"{self.base}/{key.file_id[:2]}/{key.file_name}"

    def write(self, key: PageKey, data: bytes) -> None:
        """Write a page atomically: to a temporary file, then renamed into place, so a reader
        or a restart never sees a partial page under the page's name. No fsync: a page lost or
        torn by a power cut fails its checksum and becomes a miss, which a cache can afford."""
        path = self.path(key)
        temp = f"{path}.{os.getpid()}-{next(self._temp_names)}{TEMP_SUFFIX}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        try:
            fd = os.open(temp, flags, 0o644)
        except FileNotFoundError:
            # Buckets are made on first use. If the directory itself is gone, mkdir raises
            # FileNotFoundError too, and the store takes the directory out of service.
            with contextlib.suppress(FileExistsError):  # another writer made it meanwhile
                os.mkdir(os.path.dirname(path))
            fd = os.open(temp, flags, 0o644)
        try:
            try:
                _write_all(fd, encode_header(data), data)
            finally:
                os.close(fd)
            os.rename(temp, path)
        except BaseException:
            # Best effort: the original error is the one to report, and restore removes any
            # temporary file left behind.
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    def read(self, key: PageKey, size: int) -> bytes:
        """The verified data of a page expected to hold ``size`` bytes. Raises
        FileNotFoundError, CorruptPageError (short, torn or altered) or OSError."""
        fd = os.open(self.path(key), os.O_RDONLY | os.O_CLOEXEC)
        try:
            header = os.read(fd, HEADER_SIZE)
            data = os.read(fd, size)
        finally:
            os.close(fd)
        if len(data) != size:
            raise CorruptPageError(f"page {key.file_name} is short: {len(data)} of {size} bytes")
        verify(header, data)
        return data

    def unlink(self, key: PageKey) -> None:
        """Remove a page's file; a page already gone is not an error."""
        _unlink_quietly(self.path(key))

    def remove(self, path: str) -> None:
        """Remove a file met by :meth:`scan` (a temporary file or junk); gone is not an error."""
        _unlink_quietly(path)

    def scan(self) -> Iterator[list[ScanEntry]]:
        """Every file under the layout, one list per bucket. Page sizes come from the file size
        (no page is read), so a restore costs one stat per page."""
        for bucket in self._bucket_names():
            try:
                entries = list(os.scandir(self.base / bucket))
            except FileNotFoundError:
                continue
            yield [_classify(entry, self.page_size) for entry in entries]

    def remove_other_layouts(self) -> int:
        """Delete the pages of other page sizes (they can never be read by this store); returns
        the number of directories removed."""
        removed = 0
        for child in self.root.iterdir():
            if child.is_dir() and child.name != self.base.name and child.name.isdigit():
                shutil.rmtree(child, ignore_errors=True)
                removed += 1
        return removed

    def _bucket_names(self) -> Iterator[str]:
        return (a + b for a in _HEX for b in _HEX)


def _classify(entry: os.DirEntry[str], page_size: int) -> ScanEntry:
    key = None if entry.name.endswith(TEMP_SUFFIX) else PageKey.parse(entry.name)
    if key is None:
        return ScanEntry(entry.path, None, 0)
    try:
        size = entry.stat(follow_symlinks=False).st_size - HEADER_SIZE
    except FileNotFoundError:
        size = -1
    if not 0 <= size <= page_size:
        return ScanEntry(entry.path, None, 0)
    return ScanEntry(entry.path, key, size)


def _write_all(fd: int, header: bytes, data: bytes) -> None:
    # One writev for header and data avoids copying the page into a joined buffer.
    written = os.writev(fd, [header, data])
    total = len(header) + len(data)
    if written < total:
        # A short write on a regular file means the disk filled up mid-page; finish or raise.
        rest = memoryview(header + data)[written:]
        while rest:
            rest = rest[os.write(fd, rest) :]


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
