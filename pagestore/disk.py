"""One page directory on disk: ownership, layout, atomic writes, verified reads and scanning.

Layout (names in :mod:`pagestore.layout`):
``<root>/v3-<page_size>/<bucket>/<file_id>.<version_key>.<index>``, where ``bucket`` is the
first two characters of the file id, so no directory holds more than a fraction of the pages and
pages written with another page size are never read as this one. Small pages go to shared packs
instead, ``<root>/v3-<page_size>/packs/<n>.pack`` (:mod:`pagestore.pack`). The root holds the
store's marker (:mod:`pagestore.owner`) and lock file. Only files of the store's own naming
inside its marked root are ever removed.

This layer moves bytes and raises (OSError, CorruptPageError, ForeignPageDirError); turning
failures into misses and outcomes is the store's job.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pagestore import modes, owner, pagefile
from pagestore.files import decode_record, encode_record
from pagestore.layout import (
    PACKS,
    Kind,
    bucket_of,
    classify,
    is_bucket,
    is_layout,
    layout_name,
    pack_name,
    pack_of,
    record_name,
    record_of,
    temp_name,
)
from pagestore.pack import (
    DEAD,
    PACK_BYTES,
    Pack,
    TornEntryError,
    encode_entry,
    parse_entry,
)
from pagestore.page import PageKey
from pagestore.pagefile import ShortPageError, encode_header, header_size, parse_header, verify
from pagestore.tighten import tighten

logger = logging.getLogger(__name__)
_RECORD_LIMIT = 1 << 16  # URIs are far shorter; a longer file is cut and fails its checksum
_IOV_MAX = 1024  # buffers per writev (Linux's limit)


class DirBusyError(OSError):
    """Another live process holds this page directory."""


@dataclass(frozen=True, slots=True)
class ScanEntry:
    """A page met while scanning: its path (its pack's, if packed), key and data size."""

    path: str
    key: PageKey
    size: int
    packed: bool = False


@dataclass(slots=True)
class ScanBatch:
    """The store's files in one bucket, or one pack: pages, URI records by file id (the paths
    of their files) or, for a pack, the URIs its entries carry, and the paths of temporary
    files, unusable pages and empty packs, to remove."""

    pages: list[ScanEntry] = field(default_factory=list)
    records: dict[str, str] = field(default_factory=dict)
    uris: dict[str, str] = field(default_factory=dict)
    junk: list[str] = field(default_factory=list)


class PageDir:
    """The files of one page directory. Thread-safe: every method is a few independent syscalls
    on distinct paths, writers never share a temporary file, and the packs' bookkeeping (which
    pages are in which pack, and where) is guarded by one lock held for in-memory work only;
    writers given distinct ranges of a pack write them concurrently."""

    def __init__(self, root: Path, page_size: int) -> None:
        self.root = root
        self.page_size = page_size
        self.base = root / layout_name(page_size)
        self._base = os.path.abspath(self.base)  # paths handed out must not depend on the cwd
        self.header_size = header_size(page_size)
        self._lock_fd: int | None = None
        self._temp_names = itertools.count()
        self._pack_lock = threading.Lock()
        self._packed: dict[PageKey, tuple[Pack, int]] = {}  # the page's pack and offset
        self._packs: dict[int, Pack] = {}
        self._open_pack: Pack | None = None
        self._next_pack = 0
        self._sparse: list[Pack] = []

    def open(self) -> None:
        """Create the directory (or check that an existing one is the store's, before writing
        anything in it), take an exclusive lock on it, so two workers never share (and clean
        up) one directory, and mark it as the store's. Raises ForeignPageDirError,
        DirBusyError or OSError."""
        modes.make_dirs(self.root, modes.SHARED_DIR)
        unmarked = owner.check(self.root)
        # Read-only, so holding the lock does not stop the directory being remounted read-only.
        lock = self.root / owner.LOCK_FILE
        fd = modes.create(lock, os.O_RDONLY | os.O_CLOEXEC, modes.SHARED_FILE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DirBusyError(f"page directory {self.root} is in use by another process") from None
        self._lock_fd = fd
        try:
            if unmarked:
                owner.mark(self.root)
            modes.make_dirs(self.base, modes.SHARED_DIR)
            tighten(self.root, self.base, (owner.LOCK_FILE, owner.MARKER))
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
        """The absolute path of a page's own file (where it is when it is not packed)."""
        return f"{self._base}/{bucket_of(key.file_id)}/{key.file_name}"

    def location(self, key: PageKey) -> tuple[str, int]:
        """Where a stored page is: the path of its file (or pack) and the offset of the page
        there."""
        with self._pack_lock:
            found = self._packed.get(key)
        return (self.path(key), 0) if found is None else (found[0].path, found[1])

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
        fd = _create(temp, os.O_EXCL)
        try:
            try:
                _write_all(fd, [header, data], 0)
            finally:
                os.close(fd)
            os.rename(temp, path)
        except BaseException:
            # Best effort: the original error is the one to report, and restore removes any
            # temporary file left behind.
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    def write_packed(self, pages: Sequence[tuple[PageKey, bytes, str]]) -> None:
        """Append small pages ``(key, data, uri)`` to the open pack, in one write; each page is
        readable once this returns. A pack that reaches PACK_BYTES is sealed and the next
        write starts another. Raises OSError (and the pack is sealed: no entry follows a
        range that may be torn)."""
        parts: list[bytes] = []
        placed: list[tuple[PageKey, int, int]] = []  # key, data size, offset in this write
        total = 0
        for key, data, uri in pages:
            header = encode_header(key.file_name, data, self.page_size)
            head = encode_entry(key.file_name, uri, len(header) + len(data))
            placed.append((key, len(data), total + len(head)))
            parts += (head, header, data)
            total += len(head) + len(header) + len(data)
        with self._pack_lock:
            pack = self._open_pack
            if pack is None:
                pack = self._open_pack = self._new_pack()
            start = pack.end
            pack.end += total
            pack.writing += 1
            if pack.end >= PACK_BYTES:
                self._seal(pack)
        try:
            self._pwrite(pack.path, parts, start)
        except BaseException:
            # Entries written whole before the failure must not come back at a restart: the
            # store never took them (an invalidation may even have come meanwhile).
            self._mark_removed(pack.path, [start + at for _, _, at in placed])
            with self._pack_lock:
                pack.writing -= 1
                self._seal(pack)
                gone = self._forget_if_empty(pack)
            if gone:
                _unlink_quietly(pack.path)
            raise
        with self._pack_lock:
            pack.writing -= 1
            for key, size, at in placed:
                pack.add(key, size)
                self._packed[key] = (pack, start + at)

    def _new_pack(self) -> Pack:
        number = self._next_pack
        self._next_pack += 1
        pack = self._packs[number] = Pack(number, f"{self._base}/{PACKS}/{pack_name(number)}")
        return pack

    def _seal(self, pack: Pack) -> None:
        pack.sealed = True
        if self._open_pack is pack:
            self._open_pack = None

    def _forget_if_empty(self, pack: Pack) -> bool:
        """Forget a sealed pack with nothing in it (under the pack lock); whether the caller
        must unlink its file."""
        if not (pack.sealed and pack.empty()) or self._packs.get(pack.number) is not pack:
            return False
        del self._packs[pack.number]
        return True

    @staticmethod
    def _pwrite(path: str, parts: list[bytes], offset: int) -> None:
        fd = _create(path, 0)
        try:
            _write_all(fd, parts, offset)
        finally:
            os.close(fd)

    def read(self, key: PageKey, size: int, offset: int, length: int) -> bytes:
        """Bytes ``[offset, offset + length)`` (within the data) of a page expected to hold
        ``size`` bytes; only the blocks they fall in are read and verified. Raises
        FileNotFoundError, CorruptPageError (short, torn, altered or another page) or
        OSError."""
        path, at = self.location(key)
        fd = pagefile.open_page(path)  # a FIFO in its place fails, never blocks
        try:
            header = parse_header(
                os.pread(fd, self.header_size, at), self.page_size, key.file_name, size
            )
            start, end = header.blocks(offset, length)
            data = os.pread(fd, end - start, at + self.header_size + start)
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
        """Remove a page: its file, or its entry in a pack (marked removed, and the pack
        unlinked with its last page); a page already gone is not an error."""
        with self._pack_lock:
            found = self._packed.pop(key, None)
            if found is not None:
                pack, at = found
                pack.remove(key)
                gone = self._forget_if_empty(pack)
                if not gone and pack.sparse():
                    pack.draining = True
                    self._sparse.append(pack)
        if found is None:
            _unlink_quietly(self.path(key))
        elif gone:
            _unlink_quietly(pack.path)
        else:
            # Marked so that a restart does not bring the page back, and so that a reader
            # holding the pack open sees it go.
            self._mark_removed(pack.path, [at])

    @staticmethod
    def _mark_removed(path: str, pages: list[int]) -> None:
        """Set the state of the entries of the pages at these offsets of a pack to removed;
        best effort (the pack may be gone, or its disk failing)."""
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
            try:
                for at in pages:
                    os.pwrite(fd, DEAD, at - 1)
            finally:
                os.close(fd)

    def pack_bytes(self) -> int:
        """Bytes of this directory's packs (given out to entries, written or being written)."""
        with self._pack_lock:
            return sum(pack.end for pack in self._packs.values())

    def take_sparse(self) -> list[PageKey]:
        """The pages still stored in packs that became sparse (see ``Pack.sparse``) since the
        last call: the store drops them so those packs can go."""
        with self._pack_lock:
            sparse, self._sparse = self._sparse, []
            return [key for pack in sparse for key in pack.pages]

    def remove(self, path: str) -> None:
        """Remove a file met by :meth:`scan`; gone is not an error."""
        _unlink_quietly(path)

    def scan(self) -> Iterator[ScanBatch]:
        """The store's files under the layout, a batch per bucket; files of other names are
        left out (and logged). Page sizes come from the file size (no page is read), so a
        restore costs one stat per page and one read per file."""
        for bucket in _entries(self.base):
            if bucket.name == PACKS and bucket.is_dir(follow_symlinks=False):
                yield from self._scan_packs(bucket.path)
            elif is_bucket(bucket.name) and bucket.is_dir(follow_symlinks=False):
                yield self._scan_bucket(Path(bucket.path))
            else:
                logger.warning("leaving %s alone: not a page store bucket", bucket.path)

    def _scan_packs(self, path: str) -> Iterator[ScanBatch]:
        """A batch per pack, oldest first; each pack is read whole once. Entries are taken up
        to the first whose header is torn; a page whose key was met before (a removal lost
        in a crash) is marked removed. Packs found are sealed: writing starts a new one."""
        found = sorted(_own_packs(Path(path)), key=lambda pair: pair[0])
        with self._pack_lock:
            self._next_pack = max([self._next_pack, *(n + 1 for n, _ in found)])
        for number, entry in found:
            yield self._scan_pack(number, entry.path)

    def _scan_pack(self, number: int, path: str) -> ScanBatch:
        batch = ScanBatch()
        with open(path, "rb") as handle:
            raw = memoryview(handle.read())
        pack = Pack(number, path, end=len(raw), sealed=True)
        duplicates: list[int] = []
        offset = 0
        with self._pack_lock:
            while offset < len(raw):
                try:
                    entry = parse_entry(raw, offset)
                except TornEntryError:
                    break
                offset = entry.end
                size = entry.page_length - self.header_size
                if entry.key is None or not entry.live or not 0 <= size <= self.page_size:
                    continue
                if entry.end > len(raw) or entry.key in self._packed:
                    duplicates.append(entry.page_offset)
                    continue
                pack.add(entry.key, size)
                self._packed[entry.key] = (pack, entry.page_offset)
                batch.pages.append(ScanEntry(path, entry.key, size, packed=True))
                batch.uris[entry.key.file_id] = entry.uri
            if pack.pages:
                self._packs[number] = pack
        if not pack.pages:
            batch.junk.append(path)
            return batch
        self._mark_removed(path, duplicates)
        return batch

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
                if bucket.name == PACKS and bucket.is_dir(follow_symlinks=False):
                    for _, entry in _own_packs(Path(bucket.path)):
                        _unlink_quietly(entry.path)
                        removed += 1
                    _rmdir_if_empty(bucket.path)
                elif is_bucket(bucket.name) and bucket.is_dir(follow_symlinks=False):
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


def _own_packs(directory: Path) -> Iterator[tuple[int, os.DirEntry[str]]]:
    """The packs in a packs directory, by number; other files are left out (and logged)."""
    for entry in _entries(directory):
        number = pack_of(entry.name)
        if number is not None and entry.is_file(follow_symlinks=False):
            yield number, entry
        else:
            logger.warning("leaving %s alone: not a file of the page store", entry.path)


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


def _create(path: str, flags: int) -> int:
    """Open ``path`` for writing, creating it (and its bucket or packs directory, made on first
    use). If the page directory itself is gone, mkdir raises FileNotFoundError too, and the
    store takes the directory out of service."""
    flags |= os.O_WRONLY | os.O_CLOEXEC
    try:
        return modes.create(path, flags, modes.SHARED_FILE)
    except FileNotFoundError:
        modes.make_dir(os.path.dirname(path), modes.SHARED_DIR)
        return modes.create(path, flags, modes.SHARED_FILE)


def _write_all(fd: int, parts: list[bytes], offset: int) -> None:
    # One pwritev for a page's header and data (or a batch of pack entries) avoids copying
    # them into a joined buffer.
    for first in range(0, len(parts), _IOV_MAX):
        chunk = parts[first : first + _IOV_MAX]
        size = sum(map(len, chunk))
        written = os.pwritev(fd, chunk, offset)
        if written < size:
            # A short write on a regular file means the disk filled up; finish or raise.
            rest = memoryview(b"".join(chunk))[written:]
            while rest:
                rest = rest[os.pwrite(fd, rest, offset + size - len(rest)) :]
        offset += size


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
