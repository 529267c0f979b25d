"""Short-circuit reads: a process on the worker's host reads cached pages straight from the page
files, given where they are (:class:`PageLocations`, from ``PageCache.locate``).

Every read verifies the checksums of the blocks it touches and that the file is the page asked
for, so whatever happens to a page file meanwhile the reader gets right bytes or a
:class:`PageMiss` (then it asks the worker over HTTP). Eviction racing a reader is safe: a file
unlinked after it was opened is still read whole (POSIX keeps it until closed), one unlinked
before is VANISHED, and one replaced by other content fails its checksums or its name check.

Dependency-light (the standard library, ``xxhash`` and :mod:`pagestore.page` /
:mod:`pagestore.pagefile`): a client imports it without the worker.
"""

from __future__ import annotations

import enum
import errno
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pagestore.pack import LIVE
from pagestore.page import CorruptPageError, PageKey, version_key
from pagestore.pagefile import (
    BLOCK_SIZE,
    FORMAT,
    Header,
    NotAPageFile,
    ShortPageError,
    WrongPageError,
    header_size,
    open_page,
    parse_header,
    verify,
    verify_span,
)

_SCRATCH = 128 << 10


@dataclass(frozen=True, slots=True)
class PageLocation:
    """One cached page: its index in the file, the absolute path of its page file (or of the
    pack it is in), its data bytes, and where the page starts in that file (0 but in a
    pack)."""

    index: int
    path: str
    size: int
    offset: int = 0


@dataclass(frozen=True, slots=True)
class PageLocations:
    """The cached pages of one file version (a page not listed is not cached) and the page
    size: page ``i`` holds the file's bytes ``[i * page_size, i * page_size + size)``. The
    page file format's facts (:attr:`format`, :attr:`header_size`, :attr:`block_size`) go
    with it to a client, which refuses a format it does not know. Immutable."""

    file_id: str
    version: str
    page_size: int
    pages: tuple[PageLocation, ...]

    @property
    def format(self) -> int:
        return FORMAT

    @property
    def header_size(self) -> int:
        return header_size(self.page_size)

    @property
    def block_size(self) -> int:
        return BLOCK_SIZE

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (what a worker sends a client)."""
        return {
            "file_id": self.file_id,
            "version": self.version,
            "page_size": self.page_size,
            "format": self.format,
            "header_size": self.header_size,
            "block_size": self.block_size,
            "pages": [[p.index, p.path, p.size, p.offset] for p in self.pages],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PageLocations:
        """The inverse of :meth:`to_dict`. Raises ValueError naming what is malformed or not
        understood (another format, header or block size): the client then reads over HTTP."""
        try:
            locations = cls(
                file_id=_typed(data["file_id"], str),
                version=_typed(data["version"], str),
                page_size=_typed(data["page_size"], int),
                pages=tuple(_location(page) for page in data["pages"]),
            )
            facts = tuple(_typed(data[k], int) for k in ("format", "header_size", "block_size"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed page locations: {exc!r}") from None
        known = (locations.format, locations.header_size, locations.block_size)
        if facts != known:
            raise ValueError(f"page file format {facts} is not the one this reader knows {known}")
        return locations


def _location(page: Any) -> PageLocation:
    """A page's ``[index, path, size, offset]`` (``offset`` absent from workers that wrote
    page files only)."""
    index, path, size, *rest = page
    if len(rest) > 1:
        raise ValueError(f"{page!r} has more than four fields")
    offset = _typed(rest[0], int) if rest else 0
    return PageLocation(_typed(index, int), _typed(path, str), _typed(size, int), offset)


def _typed(value: Any, kind: type[Any]) -> Any:
    if type(value) is not kind:
        raise TypeError(f"{value!r} is not {kind.__name__}")
    return value


class Miss(enum.Enum):
    """Why a page could not be read straight from its file."""

    VANISHED = "vanished"
    """The file is gone (evicted or invalidated)."""
    DENIED = "denied"
    """This process may not open it (another user, no shared group)."""
    SHORT = "short"
    """The file ends too early (truncated or torn)."""
    CORRUPT = "corrupt"
    """A header or block checksum does not match."""
    WRONG_PAGE = "wrong_page"
    """The file holds another page (replaced or mixed up)."""
    NOT_A_FILE = "not_a_file"
    """The path names no regular file (a FIFO, a device, a directory): a page directory
    tampered with, or a locate answer naming something else."""
    IO_ERROR = "io_error"


class PageMiss(Exception):
    """A page cannot be served from its file; read it through the worker instead."""

    def __init__(self, reason: Miss, path: str, detail: str) -> None:
        super().__init__(f"{reason.value}: {path}: {detail}")
        self.reason = reason


class PageFile:
    """An open, header-checked page file. Not thread-safe (one reader at a time); close it, or
    use it as a context manager. Raises :class:`PageMiss` for anything but right bytes."""

    def __init__(self, locations: PageLocations, page: PageLocation) -> None:
        self.page = page
        self._header_size = locations.header_size
        self._data_at = page.offset + self._header_size
        key = PageKey(locations.file_id, version_key(locations.version), page.index)
        self._scratch: memoryview | None = None
        try:
            self._fd: int | None = open_page(page.path)
        except (OSError, CorruptPageError) as exc:
            raise _miss(exc, page.path) from exc
        try:
            raw = os.pread(self._fd, self._header_size, page.offset)
            self._header: Header = parse_header(raw, locations.page_size, key.file_name, page.size)
        except (OSError, CorruptPageError) as exc:
            self.close()
            raise _miss(exc, page.path) from exc

    def read_into(self, offset: int, buffer: memoryview | bytearray) -> None:
        """Fill ``buffer`` with the page's data from ``offset``, reading and verifying only the
        blocks it falls in; the buffer is read into directly (scratch space only for the parts
        of the first and last block outside it). Raises ValueError for a range past the data,
        PageMiss otherwise; on a miss the buffer's content is undefined."""
        target = memoryview(buffer).cast("B")
        fd = self._open_fd(offset, len(target))
        if not len(target):
            return
        start, end = self._header.blocks(offset, len(target))
        if end - start != len(target) and end - start <= _SCRATCH:
            target[:] = self._read_small(fd, offset, len(target), start, end)
            return
        pieces = [target]
        if offset > start:
            pieces.insert(0, memoryview(bytearray(offset - start)))
        if end > offset + len(target):
            pieces.append(memoryview(bytearray(end - offset - len(target))))
        try:
            got = os.preadv(fd, pieces, self._data_at + start)
            if got != end - start:
                raise ShortPageError(f"read {got} of {end - start} bytes")
            verify(self._header, start, pieces)
        except (OSError, CorruptPageError) as exc:
            raise _miss(exc, self.page.path) from exc

    def read_bytes(self, offset: int, length: int) -> bytes:
        """The page's data ``[offset, offset + length)`` as new bytes: for a small read, one
        copy out of this file's scratch space instead of a buffer filled and then copied.
        Raises as :meth:`read_into`."""
        fd = self._open_fd(offset, length)
        start, end = self._header.blocks(offset, length)
        if not length or end - start > _SCRATCH:
            data = bytearray(length)
            self.read_into(offset, data)
            return bytes(data)
        return bytes(self._read_small(fd, offset, length, start, end))

    def _open_fd(self, offset: int, length: int) -> int:
        """The descriptor to read ``[offset, offset + length)`` from. ValueError for a range
        past the data or a closed file."""
        if offset < 0 or offset + length > self.page.size:
            raise ValueError(f"range {offset}+{length} is outside the page's {self.page.size}")
        if self._fd is None:
            raise ValueError("the page file is closed")
        return self._fd

    def _read_small(self, fd: int, offset: int, length: int, start: int, end: int) -> memoryview:
        """A read within a few blocks: read and verify the blocks whole in this file's scratch
        buffer; the range's part of it, valid until the next read (cheaper than a scratch
        piece at each end, for reads this small)."""
        if self._scratch is None:
            self._scratch = memoryview(bytearray(_SCRATCH))
        span = self._scratch[: end - start]
        try:
            got = os.preadv(fd, [span], self._data_at + start)
            if got != end - start:
                raise ShortPageError(f"read {got} of {end - start} bytes")
            verify_span(self._header, start, span)
        except (OSError, CorruptPageError) as exc:
            raise _miss(exc, self.page.path) from exc
        return span[offset - start : offset - start + length]

    def unlinked(self) -> bool:
        """Whether the page was removed since it was opened (evicted, or replaced by a rename;
        in a pack, marked removed): a reader keeping it open checks this to miss as one
        opening it anew would."""
        if self._fd is None:
            raise ValueError("the page file is closed")
        try:
            if os.fstat(self._fd).st_nlink == 0:
                return True
            # A page in a pack is preceded by its entry's state byte (pagestore.pack).
            return bool(self.page.offset) and os.pread(self._fd, 1, self.page.offset - 1) != LIVE
        except OSError as exc:
            raise _miss(exc, self.page.path) from exc

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> PageFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_into(
    locations: PageLocations, page: PageLocation, offset: int, buffer: memoryview | bytearray
) -> None:
    """Open a page file, fill ``buffer`` from ``offset`` in its data and close it. Raises
    PageMiss (read the page through the worker) or ValueError (a range past the data)."""
    with PageFile(locations, page) as opened:
        opened.read_into(offset, buffer)


def _miss(exc: Exception, path: str) -> PageMiss:
    """The one translation of a failure to a miss reason (by type and errno)."""
    if isinstance(exc, NotAPageFile):
        reason = Miss.NOT_A_FILE
    elif isinstance(exc, WrongPageError):
        reason = Miss.WRONG_PAGE
    elif isinstance(exc, ShortPageError):
        reason = Miss.SHORT
    elif isinstance(exc, CorruptPageError):
        reason = Miss.CORRUPT
    elif isinstance(exc, OSError) and exc.errno in (errno.ENOENT, errno.ENOTDIR):
        reason = Miss.VANISHED
    elif isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM):
        reason = Miss.DENIED
    else:
        reason = Miss.IO_ERROR
    return PageMiss(reason, path, str(exc))
