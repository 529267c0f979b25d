"""What a signed request claims: who signed it, when, over which headers, with which signature,
read from the ``Authorization`` header or from a presigned URL's query string. Parsing only;
nothing here knows a secret.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import lru_cache
from urllib.parse import unquote

from worker.api.s3auth import sigv4
from worker.api.s3auth.errors import (
    S3AuthError,
    access_denied,
    header_malformed,
    invalid_request,
    query_malformed,
    signature_mismatch,
)

UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
MAX_EXPIRES = 604800
"""Longest life of a presigned URL: seven days, as S3 allows."""

PRESIGN_PARAMS = (
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
)
_PRESIGN_MARKS = frozenset({"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature"})
_TIMESTAMP = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})T([0-9]{2})([0-9]{2})([0-9]{2})Z")
_DATE = re.compile(r"[0-9]{8}")
_NUMBER = re.compile(r"[0-9]{1,7}")


@dataclass(frozen=True)
class Claim:
    """A request's signature and everything it covers but the request itself."""

    access_key_id: str
    date: str
    """The credential scope's date, ``YYYYMMDD``."""
    region: str
    service: str
    signed_headers: tuple[str, ...]
    signature: str
    timestamp: str
    """The request time as signed, ``YYYYMMDDTHHMMSSZ``."""
    time: float
    """The same as seconds since the epoch."""
    query: tuple[tuple[str, str], ...]
    """The raw query pairs the signature covers (all but ``X-Amz-Signature``)."""
    payload_hash: str
    """The canonical request's last line."""
    expires: int | None
    """A presigned URL's life in seconds; None for header authentication."""

    @property
    def scope(self) -> str:
        return f"{self.date}/{self.region}/{self.service}/aws4_request"


def is_presigned(pairs: list[tuple[str, str]]) -> bool:
    return any(name in _PRESIGN_MARKS for name, _ in pairs)


def from_header(
    authorization: str, headers: Mapping[str, str], pairs: list[tuple[str, str]]
) -> Claim:
    """The claim of an ``Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
    Signature=...`` header."""
    algorithm, _, rest = authorization.strip().partition(" ")
    if algorithm != sigv4.ALGORITHM:
        raise invalid_request(
            "The authorization mechanism you have provided is not supported. "
            "Please use AWS4-HMAC-SHA256."
        )
    fields: dict[str, str] = {}
    for part in rest.split(","):
        name, equals, value = part.partition("=")
        if equals:
            fields[name.strip()] = value.strip()
    missing = [f for f in ("Credential", "SignedHeaders", "Signature") if f not in fields]
    if missing:
        raise header_malformed(f"The authorization header is malformed; missing {missing[0]}.")
    payload_hash = headers.get("x-amz-content-sha256")
    if payload_hash is None:
        raise invalid_request("Missing required header for this request: x-amz-content-sha256")
    timestamp, time = _header_time(headers)
    access_key_id, date, region, service = _credential(fields["Credential"], header_malformed)
    return Claim(
        access_key_id=access_key_id,
        date=_scope_date(date, timestamp, header_malformed),
        region=region,
        service=service,
        signed_headers=_signed_headers(fields["SignedHeaders"], header_malformed),
        signature=_signature(fields["Signature"]),
        timestamp=timestamp,
        time=time,
        query=tuple(pairs),
        payload_hash=payload_hash,
        expires=None,
    )


def from_query(pairs: list[tuple[str, str]]) -> Claim:
    """The claim of a presigned URL's ``X-Amz-*`` query parameters."""
    params = {name: unquote(value) for name, value in pairs}
    if any(name not in params for name in PRESIGN_PARAMS):
        raise query_malformed(
            "Query-string authentication version 4 requires the "
            + ", ".join(PRESIGN_PARAMS)
            + " parameters."
        )
    if params["X-Amz-Algorithm"] != sigv4.ALGORITHM:
        raise query_malformed('X-Amz-Algorithm only supports "AWS4-HMAC-SHA256".')
    expires_text = params["X-Amz-Expires"]
    if not _NUMBER.fullmatch(expires_text) or int(expires_text) > MAX_EXPIRES:
        raise query_malformed(
            f"X-Amz-Expires must be a number of seconds from 0 to {MAX_EXPIRES} (a week)."
        )
    timestamp = params["X-Amz-Date"]
    time = _parse_timestamp(timestamp)
    if time is None:
        raise query_malformed("X-Amz-Date must be in the ISO8601 Long Format yyyyMMdd'T'HHmmss'Z'.")
    access_key_id, date, region, service = _credential(params["X-Amz-Credential"], query_malformed)
    return Claim(
        access_key_id=access_key_id,
        date=_scope_date(date, timestamp, query_malformed),
        region=region,
        service=service,
        signed_headers=_signed_headers(params["X-Amz-SignedHeaders"], query_malformed),
        signature=_signature(params["X-Amz-Signature"]),
        timestamp=timestamp,
        time=time,
        query=tuple(pair for pair in pairs if pair[0] != "X-Amz-Signature"),
        payload_hash=params.get("X-Amz-Content-Sha256", UNSIGNED_PAYLOAD),
        expires=int(expires_text),
    )


def _credential(
    credential: str, malformed: Callable[[str], S3AuthError]
) -> tuple[str, str, str, str]:
    parts = credential.rsplit("/", 4)
    if len(parts) != 5 or not parts[0]:
        raise malformed(
            "The credential is malformed; expecting "
            '"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".'
        )
    access_key_id, date, region, service, terminator = parts
    if terminator != "aws4_request":
        raise malformed(
            f"The credential's terminator is wrong: expecting aws4_request, not {terminator!r}."
        )
    if service != "s3":
        raise malformed(f"The credential's service is wrong: expecting s3, not {service!r}.")
    return access_key_id, date, region, service


def _scope_date(date: str, timestamp: str, malformed: Callable[[str], S3AuthError]) -> str:
    if not _DATE.fullmatch(date) or date != timestamp[:8]:
        raise malformed(f"Invalid credential date {date!r}: it is not the date of the request.")
    return date


def _signed_headers(text: str, malformed: Callable[[str], S3AuthError]) -> tuple[str, ...]:
    names = tuple(text.split(";"))
    if "host" not in names or any(not n or n != n.lower() for n in names):
        raise malformed("SignedHeaders must be lower-case names separated by ';', with host.")
    return names


def _signature(text: str) -> str:
    if not sigv4.SIGNATURE.fullmatch(text):
        raise signature_mismatch()
    return text


def _header_time(headers: Mapping[str, str]) -> tuple[str, float]:
    amz_date = headers.get("x-amz-date")
    if amz_date is not None:
        time = _parse_timestamp(amz_date)
        if time is not None:
            return amz_date, time
    else:
        date = headers.get("date")
        if date is not None:
            try:
                parsed = parsedate_to_datetime(date)
            except (TypeError, ValueError):
                parsed = None
            if parsed is not None and parsed.tzinfo is not None:
                return parsed.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ"), parsed.timestamp()
    raise access_denied("AWS authentication requires a valid Date or x-amz-date header.")


@lru_cache(maxsize=256)
def _parse_timestamp(text: str) -> float | None:
    """Cached: the requests of one second share their timestamp, and parsing is a tenth of a
    small request's verification."""
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return None
    try:
        year, month, day, hour, minute, second = (int(g) for g in match.groups())
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp()
    except ValueError:
        return None
