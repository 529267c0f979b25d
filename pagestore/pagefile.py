"""The page file format (version 3): a header with a checksum per 16 KiB block, then the data.

Checksums cover blocks, not whole pages, so a reader verifies only the blocks its range falls
in: a 64 KiB read verifies 64 KiB when block-aligned and 80 KiB at most otherwise, whatever the
page size. (Format 2 had 64 KiB blocks: an unaligned 64 KiB read read and hashed 128 KiB, the
largest cost of a warm random read by short circuit.) The worker's reads
and same-host clients' short-circuit reads (:mod:`pagestore.shortcircuit`) both use this
module; it depends on nothing but ``xxhash`` and :mod:`pagestore.page`.

Layout of a page file, little-endian::

    0   4  magic b"DPG3"
    4   1  checksum algorithm (2: xxh3-64)
    5   3  zero
    8   4  block size in bytes
    12  4  number of table entries: ceil(page size / block size), fixed per page size
    16  8  data length
    24  8  xxh3-64 of the page's file name: a page file copied or renamed to another page's
           name is caught, not served as that page
    32     the table: one xxh3-64 per block of data (zero past the data's last block)
    32 + 8 * entries: xxh3-64 of all the header before it: a torn or altered header is caught
    40 + 8 * entries: the data

The header has the same size for every page of a page size (:func:`header_size`), so a page's
data length follows from its file size, and restore needs no read.
"""

from __future__ import annotations

import functools
import os
import stat
import struct
from collections.abc import Sequence
from typing import NamedTuple

import xxhash

from pagestore.page import CorruptPageError

FORMAT = 3
BLOCK_SIZE = 16 << 10
_FIXED = struct.Struct("<4sB3xIIQQ")
_MAGIC = b"DPG3"
_XXH3_64 = 2
_ENTRY = struct.Struct("<Q")


class ShortPageError(CorruptPageError):
    """A page file that ends before its header or data does (truncated or torn)."""


class NotAPageFile(CorruptPageError):
    """What a page's path names is not a regular file (a FIFO, a device, a directory)."""


def open_page(path: str) -> int:
    """A page file's descriptor, for reading; the caller closes it. O_NONBLOCK: a FIFO put in
    a page file's place must fail the read at once, not block the reader until a writer
    comes. Raises NotAPageFile for anything but a regular file, OSError as ``os.open``."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotAPageFile(f"{path} is not a regular file")
    return fd


class WrongPageError(CorruptPageError):
    """A well-formed page file that is not the page expected (another page's, or of another
    length): found where a page was replaced or mixed up."""


def table_entries(page_size: int) -> int:
    return -(-page_size // BLOCK_SIZE)


@functools.lru_cache(maxsize=64)
def header_size(page_size: int) -> int:
    """Bytes before the data in every page file of this page size."""
    return _FIXED.size + _ENTRY.size * (table_entries(page_size) + 1)


@functools.lru_cache(maxsize=64)
def _table(entries: int) -> struct.Struct:
    return struct.Struct(f"<{entries}Q")


def name_hash(file_name: str) -> int:
    return xxhash.xxh3_64_intdigest(file_name.encode())


class Header(NamedTuple):
    """A parsed, self-consistent page header."""

    block_size: int
    length: int
    checksums: tuple[int, ...]

    def blocks(self, offset: int, length: int) -> tuple[int, int]:
        """The data span ``[start, end)`` of the whole blocks that cover ``[offset, offset +
        length)`` (clipped to the data); the bytes to read and verify for that range."""
        start = offset - offset % self.block_size
        last = offset + max(length, 1) - 1
        end = min(last - last % self.block_size + self.block_size, self.length)
        return start, end


def encode_header(file_name: str, data: bytes | memoryview, page_size: int) -> bytes:
    """The header written in front of ``data``, the page stored under ``file_name``."""
    view = memoryview(data)
    entries = table_entries(page_size)
    sums = [
        xxhash.xxh3_64_intdigest(view[i : i + BLOCK_SIZE]) for i in range(0, len(view), BLOCK_SIZE)
    ]
    fixed = _FIXED.pack(_MAGIC, _XXH3_64, BLOCK_SIZE, entries, len(view), name_hash(file_name))
    checked = fixed + _table(entries).pack(*sums, *([0] * (entries - len(sums))))
    return checked + _ENTRY.pack(xxhash.xxh3_64_intdigest(checked))


def parse_header(raw: bytes, page_size: int, file_name: str, length: int) -> Header:
    """Check a header read from the file of page ``file_name`` expected to hold ``length``
    bytes. Raises ShortPageError, WrongPageError or CorruptPageError."""
    size = header_size(page_size)
    if len(raw) < size:
        raise ShortPageError(f"short header ({len(raw)} of {size} bytes)")
    magic, algorithm, block_size, entries, data_length, name = _FIXED.unpack_from(raw)
    if magic != _MAGIC or algorithm != _XXH3_64:
        raise CorruptPageError(
            f"not a page file of format {FORMAT} (bad magic or checksum algorithm)"
        )
    if block_size != BLOCK_SIZE or entries != table_entries(page_size):
        raise CorruptPageError(f"written for another layout ({entries} blocks of {block_size})")
    checked = size - _ENTRY.size
    if xxhash.xxh3_64_intdigest(memoryview(raw)[:checked]) != _ENTRY.unpack_from(raw, checked)[0]:
        raise CorruptPageError("header checksum mismatch")
    if name != name_hash(file_name) or data_length != length:
        raise WrongPageError(f"holds another page ({data_length} bytes), not {file_name}")
    return Header(block_size, data_length, _table(entries).unpack_from(raw, _FIXED.size))


def verify(header: Header, start: int, pieces: Sequence[memoryview]) -> None:
    """Check the data span that begins at block-aligned ``start`` and is held, in order, by
    ``pieces`` (one buffer, or a caller's buffer between two scratch ones) against the
    block checksums. Raises CorruptPageError."""
    size = header.block_size
    if len(pieces) == 1:
        verify_span(header, start, pieces[0])
        return
    block = start // size
    parts: list[memoryview] = []
    room = min(size, header.length - start)
    for piece in pieces:
        at = 0
        while at < len(piece):
            if room <= 0:
                raise ValueError(f"more data than the page's {header.length} bytes")
            part = piece[at : at + room]
            parts.append(part)
            at += len(part)
            room -= len(part)
            if room == 0:
                _check_block(header, block, parts)
                block, parts = block + 1, []
                room = min(size, header.length - block * size)
    if parts:
        raise ShortPageError(f"block {block} is incomplete")


def verify_span(header: Header, start: int, data: memoryview) -> None:
    """The common case of :func:`verify`: one buffer of whole blocks (the last may end with
    the data), hashed slice by slice. Raises CorruptPageError or ShortPageError."""
    size, sums, end = header.block_size, header.checksums, start + len(data)
    if end > header.length:
        raise ValueError(f"more data than the page's {header.length} bytes")
    if end % size and end != header.length:
        raise ShortPageError(f"block {end // size} is incomplete")
    block = start // size
    for at in range(0, len(data), size):
        if xxhash.xxh3_64_intdigest(data[at : at + size]) != sums[block]:
            raise CorruptPageError(f"checksum mismatch in block {block}")
        block += 1


def _check_block(header: Header, block: int, parts: list[memoryview]) -> None:
    if len(parts) == 1:
        digest = xxhash.xxh3_64_intdigest(parts[0])
    else:
        hasher = xxhash.xxh3_64()
        for part in parts:
            hasher.update(part)
        digest = hasher.intdigest()
    if digest != header.checksums[block]:
        raise CorruptPageError(f"checksum mismatch in block {block}")
