"""Which body a request announces, and the :class:`BodyCheck` that holds it to that.

``x-amz-content-sha256`` names the payload mode: a hex SHA-256 of the body, ``UNSIGNED-PAYLOAD``,
or one of the aws-chunked streaming modes (signed chunks, signed chunks and a signed trailer,
unsigned chunks and a trailer). Digests come in ``Content-MD5``, in one ``x-amz-checksum-*``
header, or in a trailer that ``x-amz-trailer`` declares.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from worker.api.s3auth.body import BodyCheck
from worker.api.s3auth.checksums import CHECKSUMS, Expected, expected_checksum, expected_md5
from worker.api.s3auth.chunked import ChunkChain, ChunkedDecoder
from worker.api.s3auth.claim import UNSIGNED_PAYLOAD
from worker.api.s3auth.errors import invalid_argument, invalid_request, missing_length

STREAMING_SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
STREAMING_SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
_SIGNED_MODES = (STREAMING_SIGNED, STREAMING_SIGNED_TRAILER)
_TRAILER_MODES = (STREAMING_SIGNED_TRAILER, STREAMING_UNSIGNED_TRAILER)
_HEX_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_NUMBER = re.compile(r"[0-9]{1,19}")


def plan_body(
    mode: str | None,
    headers: Mapping[str, str],
    chain: ChunkChain | None,
    object_checksums: bool,
) -> BodyCheck:
    """The check of a body sent in payload ``mode`` (None: none named, as in an anonymous or
    presigned request). ``chain``: the signature chain, for header-authenticated requests only;
    ``object_checksums``: the ``x-amz-checksum-*`` headers name the whole object's digest
    (CompleteMultipartUpload), not the body's, and are left to the surface."""
    if mode is not None and mode != UNSIGNED_PAYLOAD and not _known(mode):
        raise invalid_argument(
            "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, "
            "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, STREAMING-UNSIGNED-PAYLOAD-TRAILER "
            "or a valid sha256 value."
        )
    trailers = _declared_trailers(headers, mode)
    expected = _header_digests(headers, trailers, object_checksums)
    if mode in _SIGNED_MODES or mode == STREAMING_UNSIGNED_TRAILER:
        signed = mode in _SIGNED_MODES
        if signed and chain is None:
            raise invalid_request(f"{mode} needs the Authorization header's signature.")
        length = _length(headers, "x-amz-decoded-content-length")
        if length is None and signed:
            raise missing_length()
        decoder = ChunkedDecoder(chain if signed else None, mode in _TRAILER_MODES, length)
        return BodyCheck(decoder, None, expected, trailers, length)
    content_sha256 = mode if mode is not None and _HEX_SHA256.fullmatch(mode) else None
    return BodyCheck(None, content_sha256, expected, trailers, _length(headers, "content-length"))


def _known(mode: str) -> bool:
    return (
        mode in _SIGNED_MODES
        or mode == STREAMING_UNSIGNED_TRAILER
        or bool(_HEX_SHA256.fullmatch(mode))
    )


def _declared_trailers(headers: Mapping[str, str], mode: str | None) -> list[str]:
    declared = headers.get("x-amz-trailer", "")
    names = [name.strip().lower() for name in declared.split(",") if name.strip()]
    if names and mode not in _TRAILER_MODES:
        raise invalid_request(
            f"x-amz-trailer needs x-amz-content-sha256 {STREAMING_UNSIGNED_TRAILER}"
            f" or {STREAMING_SIGNED_TRAILER}."
        )
    for name in names:
        if name not in CHECKSUMS:
            raise invalid_request(f"The trailer {name} is not supported: only x-amz-checksum-*.")
    return names


def _header_digests(
    headers: Mapping[str, str], trailers: list[str], object_checksums: bool
) -> list[Expected]:
    named = [] if object_checksums else [name for name in CHECKSUMS if name in headers]
    if len(named) + len(trailers) > 1:
        raise invalid_request(
            "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed."
        )
    expected = [expected_checksum(name, headers[name]) for name in named]
    sdk_algorithm = headers.get("x-amz-sdk-checksum-algorithm")
    if sdk_algorithm is not None and not object_checksums:
        announced = f"x-amz-checksum-{sdk_algorithm.strip().lower()}"
        if announced not in named and announced not in trailers:
            raise invalid_request(
                "x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* "
                "or x-amz-trailer headers were found."
            )
    md5 = headers.get("content-md5")
    if md5 is not None:
        expected.append(expected_md5(md5))
    return expected


def _length(headers: Mapping[str, str], name: str) -> int | None:
    text = headers.get(name)
    if text is None:
        return None
    if not _NUMBER.fullmatch(text.strip()):
        raise invalid_argument(f"{name} must be a number of bytes.")
    return int(text)
