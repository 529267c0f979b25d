"""Page identity and the name of a page's file (its content's format: :mod:`pagestore.pagefile`).

A page is named by :class:`PageId` (what callers know: the file id, the file's version and the
page's index) and stored under a :class:`PageKey` (what the disk knows: the version replaced by a
fixed-length hash, so any version string — S3 ETags carry quotes and dashes — makes a safe file
name, and pages of one version can never be found under another).
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from typing import NamedTuple

_FILE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_VERSION_KEY_CHARS = 32  # 128 bits of sha256: collisions are not a practical concern.
_PAGE_NAME = re.compile(r"^([A-Za-z0-9_-]{1,128})\.([0-9a-f]{32})\.([0-9]{1,19})$")


class CorruptPageError(Exception):
    """A page file's header or checksums do not match its content (torn, short or flipped)."""


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


def check_range(offset: int, length: int | None) -> None:
    """Raise ValueError for a negative offset or length (a caller's bug, not a cache failure)."""
    if offset < 0 or (length is not None and length < 0):
        raise ValueError(f"invalid page range: offset={offset}, length={length}")


def check_pages(first: int, last: int | None) -> None:
    """Raise ValueError for a negative or reversed page range (a caller's bug)."""
    if first < 0 or (last is not None and last < first):
        raise ValueError(f"invalid page range: first={first}, last={last}")


def slice_page(data: bytes, offset: int, length: int | None) -> bytes:
    """Bytes ``[offset, offset + length)`` of a whole page's data (no copy for all of it)."""
    if offset == 0 and (length is None or length >= len(data)):
        return data  # the common whole-page read: no copy
    end = len(data) if length is None else offset + length
    return data[offset:end]
