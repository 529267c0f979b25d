"""The files whose pages a directory holds, with their URIs, so pages can be dropped by URI
prefix whatever else remembers the file.

Pages are named by file id (a hash), which no prefix can match; so the store keeps, beside a
file's pages, one small record of the file's URI (``uri.<file_id>`` in the pages' bucket). The
record is written, atomically, before the file's first page, and removed after its last one; a
restart reads it back with the pages. Pages in packs carry their file's URI in their entry, and
need no record. :class:`FileTable` tracks, per directory, which files have
pages (stored or being written) and whether their record is on disk.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

import xxhash

# Record: magic, xxh3-64 of the URI, then the URI in UTF-8. The checksum catches a record torn
# by a power cut (records are not fsynced, like pages), which would otherwise name a wrong URI.
_RECORD = struct.Struct("<4sQ")
_MAGIC = b"DUR1"


class CorruptRecordError(Exception):
    """A URI record that is short, torn or altered."""


def encode_record(uri: str) -> bytes:
    data = uri.encode("utf-8", "surrogatepass")
    return _RECORD.pack(_MAGIC, xxhash.xxh3_64_intdigest(data)) + data


def decode_record(record: bytes) -> str:
    """The URI a record holds. Raises CorruptRecordError."""
    if len(record) < _RECORD.size:
        raise CorruptRecordError(f"short record ({len(record)} bytes)")
    magic, checksum = _RECORD.unpack_from(record)
    data = record[_RECORD.size :]
    if magic != _MAGIC or xxhash.xxh3_64_intdigest(data) != checksum:
        raise CorruptRecordError("not a URI record, or its checksum does not match")
    return data.decode("utf-8", "surrogatepass")


def uri_under(uri: str, prefix: str) -> bool:
    """Whether ``uri`` is ``prefix`` or inside it, on a segment boundary (``s3://b/a`` holds
    ``s3://b/a/x`` but not ``s3://b/ab``). The same rule as ``ufs.uri.is_under``, which the
    page store may not import."""
    if uri == prefix:
        return True
    return uri.startswith(prefix if prefix.endswith("/") else prefix + "/")


class _Record(enum.Enum):
    WRITTEN = "written"
    REMOVING = "removing"


@dataclass(slots=True)
class _File:
    uri: str
    refs: int = 0  # pages stored plus pages being written
    record: _Record | None = None  # None: not known to be on disk


class FileTable:
    """One directory's files with pages, their URIs and the state of their records.

    A writer takes a reference (:meth:`acquire`) before writing a page, and writes the file's
    record first when asked to; it keeps the reference while the page is stored.
    :meth:`release` tells the caller when the last reference went and the record must be
    unlinked; :meth:`removed` ends that. Writers are never held up by a removal: one that
    arrives meanwhile writes the record itself, and if the unlink may have removed it,
    :meth:`removed` asks the remover to write it again. So a file with pages keeps its record
    on disk, but for the moment between an unlink and its rewrite; a rare race may leave a
    record without pages, which the next restore removes.

    Not thread-safe: the store guards it with its lock.
    """

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}
        self._live = 0  # files with a reference: counted as they change, not by a scan

    def acquire(self, file_id: str, uri: str) -> bool:
        """Take a reference for a page about to be written; True if the writer must write the
        file's record (idempotent: concurrent writers may all write it) before the page."""
        entry = self._files.get(file_id)
        if entry is None:
            entry = self._files[file_id] = _File(uri)
        self._live += entry.refs == 0
        entry.refs += 1
        return entry.record is not _Record.WRITTEN

    def written(self, file_id: str) -> None:
        """A writer wrote the file's record."""
        entry = self._files.get(file_id)
        if entry is not None and entry.record is None:
            entry.record = _Record.WRITTEN

    def adopt(self, file_id: str, uri: str, recorded: bool) -> None:
        """Take a reference for a page found on disk (after a restart), ``recorded`` if beside
        its file's record (a page in a pack carries the URI itself)."""
        entry = self._files.setdefault(file_id, _File(uri))
        if recorded:
            entry.record = _Record.WRITTEN
        self._live += entry.refs == 0
        entry.refs += 1

    def uris(self) -> dict[str, str]:
        """The URI of each file with pages, by id."""
        return {file_id: entry.uri for file_id, entry in self._files.items() if entry.refs}

    def release(self, file_id: str) -> bool:
        """Drop a reference (a page was removed, or a write failed or was refused). True when
        it was the last and the record is on disk: the caller unlinks it, then calls
        :meth:`removed`. Unknown files (say, after :meth:`clear`) are ignored."""
        entry = self._files.get(file_id)
        if entry is None or entry.refs == 0:
            return False
        entry.refs -= 1
        if entry.refs:
            return False
        self._live -= 1
        if entry.record is _Record.WRITTEN:
            entry.record = _Record.REMOVING
            return True
        if entry.record is None:
            del self._files[file_id]
        return False  # REMOVING: the remover at work decides

    def removed(self, file_id: str) -> str | None:
        """The record :meth:`release` asked to unlink is gone (or could not be unlinked).
        Returns the URI to write the record again with, if pages were written meanwhile (their
        writers' record may be the one just unlinked); the caller then calls :meth:`written`."""
        entry = self._files.get(file_id)
        if entry is None or entry.record is not _Record.REMOVING:
            return None
        if entry.refs == 0:
            del self._files[file_id]
            return None
        entry.record = None
        return entry.uri

    def __len__(self) -> int:
        """Files with pages stored or being written."""
        return self._live

    def under(self, prefix: str) -> list[str]:
        """The ids of files with pages whose URI is under ``prefix`` (see :func:`uri_under`)."""
        return [
            file_id
            for file_id, entry in self._files.items()
            if entry.refs and uri_under(entry.uri, prefix)
        ]

    def clear(self) -> None:
        """Forget every file (the directory is out of service; its records stay on disk)."""
        self._files.clear()
        self._live = 0
