"""Who sent an S3 request, proven by its AWS Signature V4, and the check of its body."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from worker.api.s3auth import sigv2, sigv4
from worker.api.s3auth.body import BodyCheck
from worker.api.s3auth.checksums import CHECKSUMS
from worker.api.s3auth.chunked import ChunkChain
from worker.api.s3auth.claim import (
    MAX_EXPIRES,
    UNSIGNED_PAYLOAD,
    Claim,
    from_header,
    from_query,
    is_presigned,
)
from worker.api.s3auth.errors import (
    access_denied,
    invalid_access_key,
    invalid_argument,
    query_malformed,
    signature_mismatch,
    time_skewed,
)
from worker.api.s3auth.payload import plan_body

MAX_SKEW = 15 * 60.0
"""Seconds a header-signed request's time may differ from the worker's clock, as S3 allows."""
MAX_V2_LIFE = MAX_EXPIRES + MAX_SKEW
"""How far ahead a SigV2 presigned URL's expiry may be: a week, as for SigV4, and the skew."""

_UNSIGNED_ALLOWED = frozenset(
    {
        "x-amz-content-sha256",
        "x-amz-date",
        "x-amz-decoded-content-length",
        "x-amz-trailer",
        "x-amz-sdk-checksum-algorithm",
        "x-amz-user-agent",
        *CHECKSUMS,
    }
)
"""``x-amz-*`` headers a request may carry unsigned: each only describes or checks the body (or
is covered by the signature some other way). Any other unsigned ``x-amz-*`` header — metadata,
a copy source, a directive — could be added to a captured request, and is refused as S3 does."""


@dataclass(frozen=True)
class AccessKey:
    """One access key pair the endpoint accepts."""

    access_key_id: str
    secret_access_key: str

    def __repr__(self) -> str:
        return f"AccessKey(access_key_id={self.access_key_id!r}, secret_access_key=<hidden>)"


@dataclass(frozen=True)
class Principal:
    """Who a request comes from: an access key id, or None for an anonymous request."""

    access_key_id: str | None


@dataclass
class Verified:
    """A request whose signature holds: its principal and the check its body must pass."""

    principal: Principal
    body: BodyCheck


class Verifier:
    """Verifies S3 requests against a set of credentials: SigV4 in the ``Authorization`` header
    or a presigned URL, SigV2 presigned URLs, anonymous requests when allowed. Thread-safe:
    immutable after construction (the signing-key cache it uses is thread-safe)."""

    def __init__(
        self,
        credentials: Sequence[AccessKey],
        allow_anonymous: bool,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secrets = {c.access_key_id: c.secret_access_key for c in credentials}
        self._allow_anonymous = allow_anonymous
        self._clock = clock

    def verify(
        self,
        method: str,
        raw_path: str,
        raw_query: str,
        headers: Mapping[str, str],
        host: str,
    ) -> Verified:
        """The principal of a request and its body's check.

        ``raw_path`` and ``raw_query``: as sent, still percent-encoded; ``headers``: lower-case
        names, values decoded as Latin-1 (as ASGI gives them), repeated headers joined by
        ``,``; ``host``: the Host the client sent (port included), used when ``headers`` has
        no ``host``. Raises :class:`S3AuthError`."""
        pairs = sigv4.split_query(raw_query)
        authorization = headers.get("authorization")
        presigned = is_presigned(pairs)
        if authorization is not None and presigned:
            raise invalid_argument(
                "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter or "
                "the Authorization header should be specified."
            )
        object_checksums = method == "POST" and any(name == "uploadId" for name, _ in pairs)
        if authorization is None and not presigned:
            if sigv2.is_presigned_v2(pairs):
                return self._presigned_v2(method, raw_path, raw_query, headers, object_checksums)
            return self._anonymous(headers, object_checksums)
        if authorization is not None:
            claim = from_header(authorization, headers, pairs)
        else:
            claim = from_query(pairs)
        return self._signed_v4(claim, method, raw_path, headers, host, object_checksums)

    def _signed_v4(
        self,
        claim: Claim,
        method: str,
        raw_path: str,
        headers: Mapping[str, str],
        host: str,
        object_checksums: bool,
    ) -> Verified:
        secret = self._secrets.get(claim.access_key_id)
        if secret is None:
            raise invalid_access_key()
        self._check_time(claim)
        key = sigv4.signing_key(secret, claim.date, claim.region, claim.service)
        canonical = sigv4.canonical_request(
            method,
            sigv4.canonical_uri(raw_path),
            sigv4.canonical_query(claim.query),
            _signed_values(claim, headers, host),
            claim.payload_hash,
        )
        expected = sigv4.sign(key, sigv4.string_to_sign(claim.timestamp, claim.scope, canonical))
        if not sigv4.matches(expected, claim.signature):
            raise signature_mismatch()
        _refuse_unsigned(headers, claim.signed_headers)
        if claim.expires is None:
            chain = ChunkChain(key, claim.timestamp, claim.scope, claim.signature)
            body = plan_body(claim.payload_hash, headers, chain, object_checksums)
        else:
            # A presigned URL signs UNSIGNED-PAYLOAD, or a hash in its query string.
            mode = claim.payload_hash
            if mode == UNSIGNED_PAYLOAD:
                mode = headers.get("x-amz-content-sha256", mode)
            body = plan_body(mode, headers, None, object_checksums)
        return Verified(Principal(claim.access_key_id), body)

    def _presigned_v2(
        self,
        method: str,
        raw_path: str,
        raw_query: str,
        headers: Mapping[str, str],
        object_checksums: bool,
    ) -> Verified:
        found = sigv2.claim(sigv4.split_query(raw_query))
        secret = self._secrets.get(found.access_key_id)
        if secret is None:
            raise invalid_access_key()
        if self._clock() > found.expires:
            raise access_denied("Request has expired")
        if found.expires > self._clock() + MAX_V2_LIFE:
            raise query_malformed("Expires must be at most a week from now.")
        sigv2.check(found, secret, method, raw_path, raw_query, headers)
        body = plan_body(headers.get("x-amz-content-sha256"), headers, None, object_checksums)
        return Verified(Principal(found.access_key_id), body)

    def _anonymous(self, headers: Mapping[str, str], object_checksums: bool) -> Verified:
        if not self._allow_anonymous:
            raise access_denied("Anonymous access is forbidden for this operation.")
        body = plan_body(headers.get("x-amz-content-sha256"), headers, None, object_checksums)
        return Verified(Principal(None), body)

    def _check_time(self, claim: Claim) -> None:
        now = self._clock()
        if claim.expires is None:
            if abs(now - claim.time) > MAX_SKEW:
                raise time_skewed()
            return
        if now > claim.time + claim.expires:
            raise access_denied("Request has expired")
        if claim.time > now + MAX_SKEW:
            raise access_denied("Request is not valid yet")


def _signed_values(claim: Claim, headers: Mapping[str, str], host: str) -> list[tuple[str, str]]:
    values: list[tuple[str, str]] = []
    for name in claim.signed_headers:
        value = headers.get(name, host if name == "host" else None)
        if value is None:
            raise signature_mismatch(f"The signed header {name} is not in the request.")
        values.append((name, sigv4.canonical_header_value(value)))
    return values


def _refuse_unsigned(headers: Mapping[str, str], signed: tuple[str, ...]) -> None:
    unsigned = [
        name
        for name in headers
        if name.startswith("x-amz-") and name not in signed and name not in _UNSIGNED_ALLOWED
    ]
    if unsigned:
        raise access_denied(
            "There were headers present in the request which were not signed: "
            + ", ".join(sorted(unsigned))
        )
