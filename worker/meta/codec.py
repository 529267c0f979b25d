"""The compact byte encoding of a :class:`MetaEntry` in the metastore (key = the URI's UTF-8).

Layout (little-endian): format (1 byte), operation (1), flags (1), ``loaded_at`` (int64); then,
for a status, ``size`` (int64) and ``mtime_ns`` (int64); then the strings the flags say are
stored, each as a uint16 length and UTF-8 bytes, in the order name, version, content hash.

Strings that can be derived are left out, so a typical file costs 27 bytes: the name when it is
the URI's last segment, the version when it is ``<size>-<mtime_ns>``, the content hash when it
equals the version (an ETag). A negative entry costs 11 bytes.
"""

from __future__ import annotations

import struct

from ufs import uri as uris
from ufs.status import UfsStatus, make_version
from worker.meta.entry import MetaEntry, Operation
from worker.meta.errors import CorruptEntry

FORMAT = 1

_HEAD = struct.Struct("<BBBq")
_BODY = struct.Struct("<qq")
_LEN = struct.Struct("<H")

_NEGATIVE = 0x01
_IS_DIR = 0x02
_NAME = 0x04
_VERSION = 0x08
_HASH = 0x10
_HASH_IS_VERSION = 0x20
_KNOWN_FLAGS = _NEGATIVE | _IS_DIR | _NAME | _VERSION | _HASH | _HASH_IS_VERSION

_OPS = {op.value: op for op in Operation}


def encode(entry: MetaEntry) -> bytes:
    """The stored bytes of ``entry`` (the URI is the key, so it is not repeated)."""
    status = entry.status
    if status is None:
        return _HEAD.pack(FORMAT, entry.op.value, _NEGATIVE, entry.loaded_at)
    flags = _IS_DIR if status.is_dir else 0
    strings: list[bytes] = []
    if status.name != uris.name(status.uri):
        flags |= _NAME
        strings.append(status.name.encode())
    if status.version != make_version(status.size, status.mtime_ns, None):
        flags |= _VERSION
        strings.append(status.version.encode())
    if status.content_hash is not None:
        if status.content_hash == status.version:
            flags |= _HASH_IS_VERSION
        else:
            flags |= _HASH
            strings.append(status.content_hash.encode())
    parts = [
        _HEAD.pack(FORMAT, entry.op.value, flags, entry.loaded_at),
        _BODY.pack(status.size, status.mtime_ns),
    ]
    for text in strings:
        parts.append(_LEN.pack(len(text)))
        parts.append(text)
    return b"".join(parts)


def decode(uri: str, data: bytes) -> MetaEntry:
    """The entry stored under ``uri``; raises CorruptEntry if ``data`` is not a valid encoding."""
    try:
        return _decode(uri, data)
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise CorruptEntry(f"undecodable metastore value for {uri!r}: {exc}") from exc


def _decode(uri: str, data: bytes) -> MetaEntry:
    fmt, op_code, flags, loaded_at = _HEAD.unpack_from(data, 0)
    if fmt != FORMAT:
        raise CorruptEntry(f"metastore value for {uri!r} has unknown format {fmt}")
    op = _OPS.get(op_code)
    if op is None or flags & ~_KNOWN_FLAGS:
        raise CorruptEntry(f"metastore value for {uri!r} has bad operation or flags")
    if flags & _NEGATIVE:
        _expect_end(uri, data, _HEAD.size)
        return MetaEntry(None, loaded_at, op)
    size, mtime_ns = _BODY.unpack_from(data, _HEAD.size)
    offset = _HEAD.size + _BODY.size
    name = uris.name(uri)
    version = make_version(size, mtime_ns, None)
    content_hash: str | None = None
    if flags & _NAME:
        name, offset = _read_string(data, offset)
    if flags & _VERSION:
        version, offset = _read_string(data, offset)
    if flags & _HASH:
        content_hash, offset = _read_string(data, offset)
    elif flags & _HASH_IS_VERSION:
        content_hash = version
    _expect_end(uri, data, offset)
    status = UfsStatus(uri, name, bool(flags & _IS_DIR), size, mtime_ns, version, content_hash)
    return MetaEntry(status, loaded_at, op)


def _read_string(data: bytes, offset: int) -> tuple[str, int]:
    (length,) = _LEN.unpack_from(data, offset)
    start = offset + _LEN.size
    end = start + length
    if end > len(data):
        raise IndexError(f"string of {length} bytes runs past the value's end")
    return data[start:end].decode(), end


def _expect_end(uri: str, data: bytes, offset: int) -> None:
    if offset != len(data):
        raise CorruptEntry(f"metastore value for {uri!r} has {len(data) - offset} stray bytes")
