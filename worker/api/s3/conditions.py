"""Conditional requests (RFC 9110 §13, as S3 applies them): ``If-Match``,
``If-Unmodified-Since``, ``If-None-Match``, ``If-Modified-Since`` on reads, and the
``x-amz-copy-source-if-*`` forms on a copy's source, checked against the store's ETag and
Last-Modified (to the second, as HTTP dates go)."""

from __future__ import annotations

from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from ufs.status import UfsStatus
from worker.api.s3.errors import S3Error


def etag(status: UfsStatus) -> str:
    """The ETag the endpoint shows for ``status``, quoted: the store's, or where the store
    has none (a local directory) the version the cache keys pages by."""
    return f'"{status.content_hash or status.version}"'


def _matches(header: str, status: UfsStatus) -> bool:
    given = [tag.strip().removeprefix("W/").strip('"') for tag in header.split(",")]
    return "*" in given or etag(status).strip('"') in given


def _seconds(header: str) -> int | None:
    """An HTTP date in seconds since the epoch; None for one that does not parse (ignored,
    as RFC 9110 says an invalid date is)."""
    try:
        return int(parsedate_to_datetime(header).timestamp())
    except (TypeError, ValueError):
        return None


def _modified_after(header: str | None, status: UfsStatus) -> bool | None:
    """Whether the object changed after the date of ``header``; None without a usable one."""
    since = None if header is None else _seconds(header)
    return None if since is None else status.mtime_ns // 1_000_000_000 > since


def failed(headers: Mapping[str, str], status: UfsStatus, prefix: str = "") -> int | None:
    """The status a conditional request is answered with instead (412, or 304 on a read),
    None when its conditions hold. ``prefix`` is ``x-amz-copy-source-`` for a copy's source,
    whose failed conditions are all 412."""
    if_match = headers.get(prefix + "if-match")
    if if_match is not None:
        if not _matches(if_match, status):
            return 412
    elif _modified_after(headers.get(prefix + "if-unmodified-since"), status):
        return 412
    not_modified = 412 if prefix else 304
    if_none = headers.get(prefix + "if-none-match")
    if if_none is not None:
        return not_modified if _matches(if_none, status) else None
    if _modified_after(headers.get(prefix + "if-modified-since"), status) is False:
        return not_modified
    return None


def precondition_failed() -> S3Error:
    return S3Error("PreconditionFailed", 412, "at least one of the preconditions does not hold")
