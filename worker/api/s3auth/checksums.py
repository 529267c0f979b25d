"""The digests a request may carry for its body: ``Content-MD5`` and ``x-amz-checksum-*``.

Each algorithm is a running digest (``update`` then ``digest``) fed as the body streams. The CRCs
come from ``awscrt`` (the AWS common runtime botocore itself uses for CRC64NVME): compiled,
with the hardware CRC instructions where the CPU has them, and the same polynomials S3 uses.
A digest travels base64-encoded, big-endian for the CRCs.
"""

from __future__ import annotations

import binascii
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from awscrt import checksums as crt

from worker.api.s3auth.errors import S3AuthError, bad_digest, invalid_digest, invalid_request


class Digest(Protocol):
    def update(self, data: bytes | memoryview, /) -> None: ...

    def digest(self) -> bytes: ...


class _Crc:
    """A CRC kept as an integer, continued chunk by chunk as awscrt allows. Not thread-safe:
    one per body."""

    def __init__(self, function: Callable[[bytes | memoryview, int], int], size: int) -> None:
        self._function = function
        self._size = size
        self._value = 0

    def update(self, data: bytes | memoryview, /) -> None:
        self._value = self._function(data, self._value)

    def digest(self) -> bytes:
        return self._value.to_bytes(self._size, "big")


def _crc32() -> Digest:
    return _Crc(crt.crc32, 4)


def _crc32c() -> Digest:
    return _Crc(crt.crc32c, 4)


def _crc64nvme() -> Digest:
    return _Crc(crt.crc64nvme, 8)


def _sha1() -> Digest:
    return hashlib.sha1()


def _sha256() -> Digest:
    return hashlib.sha256()


def _md5() -> Digest:
    return hashlib.md5()


@dataclass(frozen=True)
class Algorithm:
    """One digest a body can be checked against: ``label`` as S3's messages name it."""

    label: str
    size: int
    new: Callable[[], Digest]


CHECKSUMS: dict[str, Algorithm] = {
    "x-amz-checksum-crc32": Algorithm("CRC32", 4, _crc32),
    "x-amz-checksum-crc32c": Algorithm("CRC32C", 4, _crc32c),
    "x-amz-checksum-crc64nvme": Algorithm("CRC64NVME", 8, _crc64nvme),
    "x-amz-checksum-sha1": Algorithm("SHA1", 20, _sha1),
    "x-amz-checksum-sha256": Algorithm("SHA256", 32, _sha256),
}
"""The ``x-amz-checksum-*`` headers (and trailers) that carry a body's digest, by name."""

CONTENT_MD5 = Algorithm("Content-MD5", 16, _md5)


@dataclass(frozen=True)
class Expected:
    """A digest the client sent, decoded, with the algorithm that must reproduce it."""

    algorithm: Algorithm
    value: bytes


def _decode(text: str, size: int) -> bytes | None:
    try:
        raw = binascii.a2b_base64(text.strip().encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        return None
    return raw if len(raw) == size else None


def expected_checksum(name: str, text: str) -> Expected:
    """The ``x-amz-checksum-*`` value ``text`` of header or trailer ``name``; a value that is
    not the base64 of a digest of the right size is InvalidRequest, as S3 answers."""
    algorithm = CHECKSUMS[name]
    value = _decode(text, algorithm.size)
    if value is None:
        raise invalid_request(f"Value for {name} header is invalid.")
    return Expected(algorithm, value)


def expected_md5(text: str) -> Expected:
    value = _decode(text, CONTENT_MD5.size)
    if value is None:
        raise invalid_digest("The Content-MD5 you specified is not valid.")
    return Expected(CONTENT_MD5, value)


def mismatch(expected: Expected) -> S3AuthError:
    """BadDigest naming the algorithm, as S3 words it."""
    return bad_digest(expected.algorithm.label)
