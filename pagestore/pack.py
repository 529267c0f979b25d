"""Pack files: small pages of many files appended to one shared file, so that storing a small
page costs a write, not a file creation.

Loading 100k small files into the store as a page file each costs two file creations per file
(the page and its file's URI record), and this disk creates files at 3-30k per second: the
creations, not the bytes, bound such a load. A pack holds the pages :func:`packed` sends it
(short of a whole page, up to ``dora.worker.page.store.pack.limit`` bytes), each with its file's
URI, and is appended to until it reaches :data:`PACK_BYTES`; then it is sealed and the next one
starts.

An entry, little-endian::

    0   4  magic b"DPK1"
    4   2  length of the page's file name (ASCII)
    6   2  zero
    8   4  length of the file's URI (UTF-8)
    12  4  length of the page: a whole page file image (format 3 header, then the data)
    16  8  xxh3-64 of bytes 0-16, the name and the URI
    24     the name, then the URI
    ..  1  state: b"L" while the page is stored, b"D" once it is removed
    ..     the page, exactly as in a page file

The page sits whole in the pack, so readers (the worker's and same-host clients') read it as
they read a page file, from its offset, with the same checks: a page is read only after its
header and block checksums match and the header names it. The state byte sits just before the
page, so a reader holding the pack open can tell that the page was removed (see
``pagestore.shortcircuit``). Entries are never rewritten, only marked removed; a pack whose
entries are all removed is unlinked, and one mostly removed has its last pages dropped by the
store so that the space comes back (see :class:`Pack`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import xxhash

from pagestore.page import PageKey

PACK_BYTES = 4 << 20
"""A pack is sealed once it holds this many bytes."""

_HEAD = struct.Struct("<4sH2xII")
_SUM = struct.Struct("<Q")
ENTRY_HEAD = _HEAD.size + _SUM.size
_MAGIC = b"DPK1"
LIVE = b"L"
DEAD = b"D"


def packed(size: int, pack_limit: int, page_size: int) -> bool:
    """Whether a page of ``size`` data bytes goes to a pack rather than its own file: one no
    larger than the pack limit, and short of a whole page (a small file, or the end of a larger
    one). Whole pages keep their files, so a large file's pages stay where they were."""
    return size <= pack_limit and size < page_size


class TornEntryError(Exception):
    """Bytes where an entry should start that are not a whole, intact entry header."""


def encode_entry(file_name: str, uri: str, page_length: int) -> bytes:
    """Everything of an entry that comes before its page, the state byte (live) included."""
    name = file_name.encode("ascii")
    text = uri.encode("utf-8", "surrogatepass")
    head = _HEAD.pack(_MAGIC, len(name), len(text), page_length)
    checksum = _SUM.pack(xxhash.xxh3_64_intdigest(head + name + text))
    return head + checksum + name + text + LIVE


@dataclass(frozen=True, slots=True)
class PackEntry:
    """An entry read back from a pack: its page, the page's offset and length, and the URI."""

    key: PageKey | None  # None: the name is not a page's (the entry is skipped)
    uri: str
    page_offset: int
    page_length: int
    live: bool

    @property
    def end(self) -> int:
        return self.page_offset + self.page_length


def parse_entry(raw: memoryview, offset: int) -> PackEntry:
    """The entry at ``offset`` of a pack's bytes. Raises TornEntryError if its header is cut
    short or does not check; its page may still be short (found when it is read)."""
    if len(raw) - offset < ENTRY_HEAD:
        raise TornEntryError(f"{len(raw) - offset} bytes left at {offset}")
    magic, name_length, uri_length, page_length = _HEAD.unpack_from(raw, offset)
    (checksum,) = _SUM.unpack_from(raw, offset + _HEAD.size)
    head = offset + ENTRY_HEAD
    state_at = head + name_length + uri_length
    if magic != _MAGIC or state_at >= len(raw):
        raise TornEntryError(f"no entry at {offset}")
    fixed = bytes(raw[offset : offset + _HEAD.size])
    if xxhash.xxh3_64_intdigest(fixed + bytes(raw[head:state_at])) != checksum:
        raise TornEntryError(f"entry header at {offset} does not check")
    try:
        name = bytes(raw[head : head + name_length]).decode("ascii")
        uri = bytes(raw[head + name_length : state_at]).decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise TornEntryError(f"entry at {offset}: {exc}") from None
    live = bytes(raw[state_at : state_at + 1]) == LIVE
    return PackEntry(PageKey.parse(name), uri, state_at + 1, page_length, live)


@dataclass(eq=False, slots=True)
class Pack:
    """One pack's bookkeeping in memory: the bytes given out for entries, the pages stored in
    it (by key, with their data sizes), and entries being written. Guarded by its directory's
    pack lock."""

    number: int
    path: str
    end: int = 0
    sealed: bool = False
    pages: dict[PageKey, int] = field(default_factory=dict)
    live_bytes: int = 0  # the data bytes of ``pages``
    writing: int = 0
    draining: bool = False

    def add(self, key: PageKey, size: int) -> None:
        self.pages[key] = size
        self.live_bytes += size

    def remove(self, key: PageKey) -> None:
        self.live_bytes -= self.pages.pop(key)

    def empty(self) -> bool:
        """Nothing stored or being written: a sealed pack in this state can go."""
        return not self.pages and not self.writing

    def sparse(self) -> bool:
        """Sealed, and less than a quarter of its bytes are stored pages' data: the store drops
        its last pages (they are a cache's, and read again on demand) so the pack can go,
        rather than keep 4 MiB on disk for a few small pages. This bounds the space a pack
        wastes to three times what it holds."""
        return self.sealed and not self.draining and 4 * self.live_bytes < self.end
