"""AWS Signature Version 4 as S3 computes it: canonical request, strings to sign, signing key.

S3 differs from the other AWS services in two ways that matter here: the canonical URI is the
path as sent, neither normalised (``a//b``, ``./`` stay) nor encoded twice, and the payload hash
is whatever ``x-amz-content-sha256`` says. Each path segment and each query name and value is
decoded and encoded again by AWS's rule (unreserved ``A-Za-z0-9-._~`` kept, every other byte
``%XX`` upper case), so ``%7e``, ``~`` and ``%7E`` all sign the same way, as S3 treats them.

Pure functions; the signing-key cache is ``functools.lru_cache``, which is thread-safe.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from urllib.parse import quote, unquote_to_bytes

ALGORITHM = "AWS4-HMAC-SHA256"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
SIGNATURE = re.compile(r"[0-9a-f]{64}")
"""A signature as SigV4 writes it: 64 lower-case hex digits."""

_CLEAN_PATH = re.compile(r"[A-Za-z0-9\-._~/]*")
_CLEAN_COMPONENT = re.compile(r"[A-Za-z0-9\-._~]*")


def wire_bytes(text: str) -> bytes:
    """The bytes a request's text came from. ASGI servers and Starlette decode the path and
    header values as Latin-1, which gives every byte back; text beyond Latin-1 can only have
    been decoded as UTF-8."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _aws_encode(raw: str, clean: re.Pattern[str]) -> str:
    if clean.fullmatch(raw):
        return raw  # the common case: nothing to decode or encode
    return quote(unquote_to_bytes(wire_bytes(raw)), safe="")


def canonical_uri(raw_path: str) -> str:
    """The canonical URI of a path as sent: each ``/``-separated segment encoded by AWS's rule,
    nothing resolved or collapsed. An encoded slash (``%2F``) stays inside its segment."""
    if not raw_path:
        return "/"
    if _CLEAN_PATH.fullmatch(raw_path):
        return raw_path
    return "/".join(_aws_encode(segment, _CLEAN_COMPONENT) for segment in raw_path.split("/"))


def split_query(raw_query: str) -> list[tuple[str, str]]:
    """The ``name=value`` pairs of a raw query string, still encoded; a bare ``name`` has the
    value ``""`` (``?uploads``)."""
    pairs: list[tuple[str, str]] = []
    for part in raw_query.split("&"):
        if part:
            name, _, value = part.partition("=")
            pairs.append((name, value))
    return pairs


def canonical_query(pairs: Iterable[tuple[str, str]]) -> str:
    """Encoded pairs sorted by name, then value, joined by ``&``."""
    encoded = sorted(
        (_aws_encode(name, _CLEAN_COMPONENT), _aws_encode(value, _CLEAN_COMPONENT))
        for name, value in pairs
    )
    return "&".join(f"{name}={value}" for name, value in encoded)


def canonical_header_value(value: str) -> str:
    """Leading and trailing blanks dropped, inner runs of blanks one space."""
    return " ".join(value.split())


def canonical_request(
    method: str,
    uri: str,
    query: str,
    headers: Sequence[tuple[str, str]],
    payload_hash: str,
) -> str:
    """The canonical request of already canonical parts; ``headers`` are the signed headers in
    the order ``SignedHeaders`` lists them, values canonical."""
    lines = "".join(f"{name}:{value}\n" for name, value in headers)
    signed = ";".join(name for name, _ in headers)
    return f"{method}\n{uri}\n{query}\n{lines}\n{signed}\n{payload_hash}"


def _sha256_hex(text: str) -> str:
    return hashlib.sha256(wire_bytes(text)).hexdigest()


def string_to_sign(timestamp: str, scope: str, canonical: str) -> str:
    return f"{ALGORITHM}\n{timestamp}\n{scope}\n{_sha256_hex(canonical)}"


def chunk_string_to_sign(timestamp: str, scope: str, previous: str, chunk_sha256: str) -> str:
    """What signs one chunk of a ``STREAMING-AWS4-HMAC-SHA256-PAYLOAD`` body, chained to the
    previous chunk's signature (the request's own for the first)."""
    return f"{ALGORITHM}-PAYLOAD\n{timestamp}\n{scope}\n{previous}\n{EMPTY_SHA256}\n{chunk_sha256}"


def trailer_string_to_sign(timestamp: str, scope: str, previous: str, trailer: str) -> str:
    """What signs the trailer of a ``...-PAYLOAD-TRAILER`` body, chained to the final (empty)
    chunk's signature; ``trailer`` is each trailing header as ``name:value\\n``."""
    return f"{ALGORITHM}-TRAILER\n{timestamp}\n{scope}\n{previous}\n{_sha256_hex(trailer)}"


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.digest(key, message.encode("utf-8", "replace"), "sha256")


@lru_cache(maxsize=256)
def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    """HMAC chain of the secret over the scope. Cached: it changes once a day per region, and
    four HMACs are most of a small request's signature cost."""
    key = _hmac(f"AWS4{secret}".encode(), date)
    key = _hmac(key, region)
    key = _hmac(key, service)
    return _hmac(key, "aws4_request")


def sign(key: bytes, text: str) -> str:
    return _hmac(key, text).hex()


def matches(expected: str, given: str) -> bool:
    """Constant-time comparison; ``given`` is known to be ASCII hex (checked by the parser)."""
    return hmac.compare_digest(expected, given)
