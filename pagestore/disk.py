"""One page directory on disk: ownership, layout, atomic writes, verified reads and scanning.

Layout (names in :mod:`pagestore.layout`):
``<root>/v3-<page_size>/<bucket>/<file_id>.<version_key>.<index>``, where ``bucket`` is the
first two characters of the file id, so no directory holds more than a fraction of the pages and
pages written with another page size are never read as this one. The root holds the store's
marker (:mod:`pagestore.owner`) and lock file. Only files of the store's own naming inside its
marked root are ever removed.

This layer moves bytes and raises (OSError, CorruptPageError, ForeignPageDirError); turning
failures into misses and outcomes is the store's job.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pagestore import owner
from pagestore.files import decode_record, encode_record
from pagestore.layout import (
    Kind,
    bucket_of,
    classify,
    is_bucket,
    is_layout,
    layout_name,
    record_name,
    record_of,
    temp_name,
)
from pagestore.page import PageKey
from pagestore.pagefile import ShortPageError, encode_header, header_size, parse_header, verify

logger = logging.getLogger(__name__)
_RECORD_LIMIT = 1 << 16  # URIs are far shorter; a longer file is cut and fails its checksum


class DirBusyError(OSError):
    """Another live process holds this page directory."""


@dataclass(frozen=True, slots=True)
class ScanEntry:
    """A page met while scanning: its path, key and data size."""

    path: str
    key: PageKey
    size: int


@dataclass(slots=True)
class ScanBatch:
    """The store's files in one bucket: pages, URI records by file id, and the paths of
    temporary files and unusable pages, to remove."""

    pages: list[ScanEntry] = field(default_factory=list)
    records: dict[str, str] = field(default_factory=dict)
    junk: list[str] = field(default_factory=list)


class PageDir:
    """The files of one page directory. Thread-safe: every method is a few independent syscalls
    on distinct paths, and writers never share a temporary file."""

    def __init__(self, root: Path, page_size: int) -> None:
        self.root = root
        self.page_size = page_size
        self.base = root / layout_name(page_size)
        self._base = os.path.abspath(self.base)  # paths handed out must not depend on the cwd
        self.header_size = header_size(page_size)
        self._lock_fd: int | None = None
        self._temp_names = itertools.count()

    def open(self) -> None:
        """Create the directory (or check that an existing one is the store's, before writing
        anything in it), take an exclusive lock on it, so two workers never share (and clean
        up) one directory, and mark it as the store's. Raises ForeignPageDirError,
        DirBusyError or OSError."""
        self.root.mkdir(parents=True, exist_ok=True)
        unmarked = owner.check(self.root)
        # Read-only, so holding the lock does not stop the directory being remounted read-only.
        fd = os.open(self.root / owner.LOCK_FILE, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DirBusyError(f"page directory {self.root} is in use by another process") from None
        self._lock_fd = fd
        try:
            if unmarked:
                owner.mark(self.root)
            self.base.mkdir(exist_ok=True)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def exists(self) -> bool:
        """Whether the directory is still there (it may vanish under a running worker)."""
        return self.base.is_dir()

    def path(self, key: PageKey) -> str:
        """The absolute path of a page's file."""
        return f"{self._base}/{bucket_of(key.file_id)}/{key.file_name}"

    def record_path(self, file_id: str) -> str:
        return f"{self._base}/{bucket_of(file_id)}/{record_name(file_id)}"

    def write(self, key: PageKey, data: bytes) -> None:
        """Write a page atomically: to a temporary file, then renamed into place, so a reader
        or a restart never sees a partial page under the page's name. No fsync: a page lost or
        torn by a power cut fails its checksum and becomes a miss, which a cache can afford."""
        header = encode_header(key.file_name, data, self.page_size)
        self._write_atomic(self.path(key), header, data)

    def write_record(self, file_id: str, uri: str) -> None:
        """Write (or rewrite) the record of a file's URI, atomically as a page is."""
        self._write_atomic(self.record_path(file_id), encode_record(uri), b"")

    def read_record(self, path: str) -> str:
        """The URI in a record met by :meth:`scan`. Raises CorruptRecordError or OSError."""
        with open(path, "rb") as record:
            return decode_record(record.read(_RECORD_LIMIT))

    def unlink_record(self, file_id: str) -> None:
        """Remove a file's URI record; gone is not an error."""
        _unlink_quietly(self.record_path(file_id))

    def _write_atomic(self, path: str, header: bytes, data: bytes) -> None:
        temp = temp_name(path, os.getpid(), next(self._temp_names))
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
                _write_all(fd, header, data)
            finally:
                os.close(fd)
            os.rename(temp, path)
        except BaseException:
            # Best effort: the original error is the one to report, and restore removes any
            # temporary file left behind.
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    def read(self, key: PageKey, size: int, offset: int, length: int) -> bytes:
        """Bytes ``[offset, offset + length)`` (within the data) of a page expected to hold
        ``size`` bytes; only the blocks they fall in are read and verified. Raises
        FileNotFoundError, CorruptPageError (short, torn, altered or another page) or
        OSError."""
        fd = os.open(self.path(key), os.O_RDONLY | os.O_CLOEXEC)
        try:
            header = parse_header(
                os.pread(fd, self.header_size, 0), self.page_size, key.file_name, size
            )
            start, end = header.blocks(offset, length)
            data = os.pread(fd, end - start, self.header_size + start)
        finally:
            os.close(fd)
        if len(data) != end - start:
            raise ShortPageError(
                f"page {key.file_name} is short: {len(data)} of {end - start} bytes"
            )
        verify(header, start, [memoryview(data)])
        if (start, end) == (offset, offset + length):
            return data  # whole blocks asked for (a whole page, say): no copy
        return data[offset - start : offset - start + length]

    def unlink(self, key: PageKey) -> None:
        """Remove a page's file; a page already gone is not an error."""
        _unlink_quietly(self.path(key))

    def remove(self, path: str) -> None:
        """Remove a file met by :meth:`scan`; gone is not an error."""
        _unlink_quietly(path)

    def scan(self) -> Iterator[ScanBatch]:
        """The store's files under the layout, a batch per bucket; files of other names are
        left out (and logged). Page sizes come from the file size (no page is read), so a
        restore costs one stat per page and one read per file."""
        for bucket in _entries(self.base):
            if is_bucket(bucket.name) and bucket.is_dir(follow_symlinks=False):
                yield self._scan_bucket(Path(bucket.path))
            else:
                logger.warning("leaving %s alone: not a page store bucket", bucket.path)

    def remove_other_layouts(self) -> int:
        """Delete the pages and temporary files of other page sizes (they can never be read by
        this store), then the directories they leave empty; returns the number of files
        removed. Anything else in those directories stays, and so do they."""
        removed = 0
        for layout in _entries(self.root):
            if layout.name == self.base.name or not is_layout(layout.name):
                continue
            if not layout.is_dir(follow_symlinks=False):
                continue
            for bucket in _entries(Path(layout.path)):
                if is_bucket(bucket.name) and bucket.is_dir(follow_symlinks=False):
                    for entry in self._own_files(Path(bucket.path)):
                        _unlink_quietly(entry.path)
                        removed += 1
                    _rmdir_if_empty(bucket.path)
            _rmdir_if_empty(layout.path)
        return removed

    def _scan_bucket(self, bucket: Path) -> ScanBatch:
        batch = ScanBatch()
        for entry in self._own_files(bucket):
            kind = classify(bucket.name, entry.name)
            file_id = record_of(entry.name)
            if kind is Kind.RECORD and file_id is not None:
                batch.records[file_id] = entry.path
                continue
            page = _page(entry, self.page_size) if kind is Kind.PAGE else None
            if page is None:
                batch.junk.append(entry.path)
            else:
                batch.pages.append(page)
        return batch

    def _own_files(self, bucket: Path) -> Iterator[os.DirEntry[str]]:
        for entry in _entries(bucket):
            if entry.is_file(follow_symlinks=False) and (
                classify(bucket.name, entry.name) is not Kind.FOREIGN
            ):
                yield entry
            else:
                logger.warning("leaving %s alone: not a file of the page store", entry.path)


def _entries(path: Path) -> list[os.DirEntry[str]]:
    """The entries of a directory; none if it is gone."""
    try:
        with contextlib.closing(os.scandir(path)) as entries:
            return list(entries)
    except FileNotFoundError:
        return []


def _page(entry: os.DirEntry[str], page_size: int) -> ScanEntry | None:
    """The page a file holds, or None if it cannot hold one (of this page size)."""
    key = PageKey.parse(entry.name)
    try:
        size = entry.stat(follow_symlinks=False).st_size - header_size(page_size)
    except FileNotFoundError:
        return None
    if key is None or not 0 <= size <= page_size:
        return None
    return ScanEntry(entry.path, key, size)


def _rmdir_if_empty(path: str) -> None:
    with contextlib.suppress(OSError):  # not empty: something else lives there
        os.rmdir(path)


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
