"""Page identity and the on-disk form of one page: its file name and its checksummed header.

A page is named by :class:`PageId` (what callers know: the file id, the file's version and the
page's index) and stored under a :class:`PageKey` (what the disk knows: the version replaced by a
fixed-length hash, so any version string — S3 ETags carry quotes and dashes — makes a safe file
name, and pages of one version can never be found under another).
"""

from __future__ import annotations

import functools
import hashlib
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import xxhash

_FILE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_VERSION_KEY_CHARS = 32  # 128 bits of sha256: collisions are not a practical concern.
_PAGE_NAME = re.compile(r"^([A-Za-z0-9_-]{1,128})\.([0-9a-f]{32})\.([0-9]{1,19})$")


class CorruptPageError(Exception):
    """A page file's header or checksum does not match its content (torn, short or flipped)."""


@functools.lru_cache(maxsize=65536)
def version_key(version: str) -> str:
    """The file-name-safe, fixed-length stand-in for a version string (cached: it is on the
    read path, and a worker sees a bounded set of hot versions)."""
    digest = hashlib.sha256(version.encode("utf-8", "surrogatepass")).hexdigest()
    return digest[:_VERSION_KEY_CHARS]


class PageKey(NamedTuple):
    """A page as the disk and the index know it. Hashable and cheap to compare."""

    file_id: str
    version_key: str
    page_index: int

    @property
    def file_name(self) -> str:
        return f"{self.file_id}.{self.version_key}.{self.page_index}"

    @classmethod
    def parse(cls, name: str) -> PageKey | None:
        """The key a page file name stands for, or None for any other name."""
        match = _PAGE_NAME.match(name)
        if match is None:
            return None
        return cls(match.group(1), match.group(2), int(match.group(3)))


@dataclass(frozen=True)
class PageId:
    """One page of one version of one file: bytes ``[index * page_size, (index + 1) * page_size)``.

    ``file_id`` is the caller's stable id of the file (sha256 of its URI in the worker); it must be
    1-128 characters of ``[A-Za-z0-9_-]`` because it becomes part of a file name. ``version`` is
    any string. Raises ValueError for an invalid file id or a negative index. Immutable.
    """

    file_id: str
    version: str
    index: int

    def __post_init__(self) -> None:
        if not _FILE_ID.match(self.file_id):
            raise ValueError(f"file id {self.file_id!r} is not 1-128 characters of [A-Za-z0-9_-]")
        if self.index < 0:
            raise ValueError(f"page index {self.index} is negative")

    @property
    def key(self) -> PageKey:
        return PageKey(self.file_id, version_key(self.version), self.index)


# Header: magic, checksum algorithm, reserved, data length, 64-bit checksum. Pages are written
# with xxh3-64: verifying every read with crc32 cost ~250 us per MB, 3x the read itself; xxh3
# runs at tens of GB/s. crc32 pages (from older stores) are still verified and served.
_HEADER = struct.Struct("<4sB3xQQ")
HEADER_SIZE = _HEADER.size
_MAGIC = b"DPG1"
_CRC32 = 1
_XXH3_64 = 2
_CHECKSUMS: dict[int, Callable[[bytes], int]] = {
    _CRC32: zlib.crc32,
    _XXH3_64: xxhash.xxh3_64_intdigest,
}


def encode_header(data: bytes) -> bytes:
    """The header written in front of ``data`` in its page file."""
    return _HEADER.pack(_MAGIC, _XXH3_64, len(data), xxhash.xxh3_64_intdigest(data))


def verify(header: bytes, data: bytes) -> None:
    """Check ``data`` against the ``header`` read with it; raise CorruptPageError if they differ."""
    if len(header) != HEADER_SIZE:
        raise CorruptPageError(f"short header ({len(header)} bytes)")
    magic, algorithm, length, checksum = _HEADER.unpack(header)
    checksum_of = _CHECKSUMS.get(algorithm)
    if magic != _MAGIC or checksum_of is None:
        raise CorruptPageError("not a page file (bad magic or checksum algorithm)")
    if length != len(data):
        raise CorruptPageError(f"length {len(data)} does not match header ({length})")
    if checksum_of(data) != checksum:
        raise CorruptPageError("checksum mismatch")
