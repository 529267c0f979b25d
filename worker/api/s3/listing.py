"""ListObjectsV2 and ListObjects (v1): the keys under a bucket, in S3's order (by UTF-8
bytes, which is Python's order of ``str``), a page at a time.

A listing walks the directories of the bucket's root through the service (``list``, cached
as every listing is, under the request's freshness), depth first, children in key order:
a directory's keys all start with ``name/``, so ordering each directory's children by
``name`` for a file and ``name/`` for a directory orders every key below. The walk starts
at the deepest directory the prefix names and skips what lies before the start key, so a
page costs the directories it visits, not the bucket; with the delimiter ``/`` a
subdirectory is a common prefix and is not entered at all."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ufs.errors import UfsNotADirectory, UfsNotFound
from ufs.status import UfsStatus
from worker.api.s3 import xmlbody
from worker.api.s3.call import S3Call
from worker.api.s3.conditions import etag
from worker.api.s3.errors import invalid_argument
from worker.api.s3.xmlbody import el

MAX_KEYS = 1000


@dataclass(frozen=True)
class KeyEntry:
    """A key and its status, or (``status`` None) a common prefix."""

    key: str
    status: UfsStatus | None


@dataclass(frozen=True)
class Page:
    entries: list[KeyEntry]
    truncated: bool


def walk(call: S3Call, prefix: str, delimiter: str, after: str) -> Iterator[KeyEntry]:
    """Every key of the bucket starting with ``prefix`` and after ``after``, in order, and
    with a ``delimiter`` the common prefixes in their place."""
    start = prefix.rpartition("/")[0]
    last_prefix: str | None = None
    for entry in _tree(call, start, prefix, delimiter == "/", after):
        rest = entry.key[len(prefix) :]
        cut = rest.find(delimiter) if delimiter and entry.status is not None else -1
        if cut >= 0:
            common = prefix + rest[: cut + len(delimiter)]
            if common != last_prefix and common > after:
                last_prefix = common
                yield KeyEntry(common, None)
            continue
        yield entry


def _tree(call: S3Call, directory: str, prefix: str, flat: bool, after: str) -> Iterator[KeyEntry]:
    """The keys under ``directory`` (a key without its ``/``; empty: the root) that start
    with ``prefix``, in order; with ``flat``, a subdirectory is one entry (``name/``)."""
    try:
        children = call.service.list(call.context(call.uri(directory)))
    except (UfsNotFound, UfsNotADirectory):
        return
    base = f"{directory}/" if directory else ""
    ordered = sorted(children, key=lambda child: child.name + ("/" if child.is_dir else ""))
    for child in ordered:
        key = base + child.name + ("/" if child.is_dir else "")
        if not child.is_dir:
            if key.startswith(prefix) and key > after:
                yield KeyEntry(key, child)
        elif not (key.startswith(prefix) or prefix.startswith(key)):
            continue
        elif flat and len(key) > len(prefix):
            if key > after:
                yield KeyEntry(key, None)
        elif not (key < after and not after.startswith(key)):
            yield from _tree(call, key[:-1], prefix, flat, after)


def page(call: S3Call, prefix: str, delimiter: str, after: str, max_keys: int) -> Page:
    """Up to ``max_keys`` entries of :func:`walk` and whether more follow (none do for a
    page of none: S3 answers ``max-keys=0`` with an empty page that is not truncated)."""
    entries: list[KeyEntry] = []
    if max_keys == 0:
        return Page(entries, False)
    walker = walk(call, prefix, delimiter, after)
    for entry in walker:
        if len(entries) == max_keys:
            return Page(entries, True)
        entries.append(entry)
    return Page(entries, False)


def _max_keys(call: S3Call) -> int:
    text = call.request.query_params.get("max-keys")
    if text is None:
        return MAX_KEYS
    if not text.isdigit():
        raise invalid_argument(f"max-keys={text!r}: expected a non-negative integer")
    return min(int(text), MAX_KEYS)


def _encoder(call: S3Call) -> tuple[str, Callable[[str], str]]:
    """The ``EncodingType`` element (or nothing) and how keys are written in the answer."""
    encoding = call.request.query_params.get("encoding-type")
    if encoding is None:
        return "", str
    if encoding != "url":
        raise invalid_argument(f"encoding-type={encoding!r}: expected url")
    return el("EncodingType", "url"), lambda key: quote(key, safe="/")


def _contents(entries: list[KeyEntry], encode: Callable[[str], str], owner: bool) -> str:
    parts = []
    for entry in entries:
        if entry.status is None:
            parts.append(f"<CommonPrefixes>{el('Prefix', encode(entry.key))}</CommonPrefixes>")
            continue
        status = entry.status
        parts.append(
            "<Contents>"
            + el("Key", encode(entry.key))
            + el("LastModified", xmlbody.iso_time(status.mtime_ns))
            + el("ETag", etag(status))
            + el("Size", status.size)
            + (f"<Owner>{xmlbody.OWNER}</Owner>" if owner else "")
            + el("StorageClass", "STANDARD")
            + "</Contents>"
        )
    return "".join(parts)


def _token(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode()


def _untoken(token: str) -> str:
    try:
        key = base64.b64decode(token.encode(), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        key = ""
    if not key:
        raise invalid_argument("the continuation token is not one this endpoint gave")
    return key


async def list_objects_v2(call: S3Call) -> Response:
    query = call.request.query_params
    bucket = call.named_bucket()
    prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
    max_keys, (encoding, encode) = _max_keys(call), _encoder(call)
    token, start_after = query.get("continuation-token"), query.get("start-after", "")
    after = _untoken(token) if token else start_after
    owner = query.get("fetch-owner", "false").lower() == "true"
    found = await run_in_threadpool(page, call, prefix, delimiter, after, max_keys)
    parts = [
        el("Name", bucket),
        el("Prefix", encode(prefix)),
        el("Delimiter", encode(delimiter)) if delimiter else "",
        el("MaxKeys", max_keys),
        el("KeyCount", len(found.entries)),
        el("IsTruncated", found.truncated),
        el("ContinuationToken", token) if token is not None else "",
        el("StartAfter", encode(start_after)) if start_after else "",
        encoding,
    ]
    if found.truncated:
        parts.append(el("NextContinuationToken", _token(found.entries[-1].key)))
    parts.append(_contents(found.entries, encode, owner))
    answer = xmlbody.document("ListBucketResult", *parts)
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)


async def list_objects(call: S3Call) -> Response:
    """ListObjects (v1): ``marker`` in place of a token; ``NextMarker`` with a delimiter. With
    ``encoding-type=url`` its ``Prefix`` stays as given: S3 encodes only the keys, the marker
    and the delimiter of a v1 answer (and its clients decode only those)."""
    query = call.request.query_params
    bucket = call.named_bucket()
    prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
    max_keys, (encoding, encode) = _max_keys(call), _encoder(call)
    marker = query.get("marker", "")
    found = await run_in_threadpool(page, call, prefix, delimiter, marker, max_keys)
    parts = [
        el("Name", bucket),
        el("Prefix", prefix),
        el("Marker", encode(marker)),
        el("Delimiter", encode(delimiter)) if delimiter else "",
        el("MaxKeys", max_keys),
        el("IsTruncated", found.truncated),
        encoding,
    ]
    if found.truncated and delimiter:
        parts.append(el("NextMarker", encode(found.entries[-1].key)))
    parts.append(_contents(found.entries, encode, True))
    answer = xmlbody.document("ListBucketResult", *parts)
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)
