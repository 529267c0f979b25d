"""What both ways of keeping a multipart upload share (the worker's disk,
``worker.api.s3.multipart``; the store's own, ``worker.api.s3.storeparts``): S3's limits, the
part number and paging a request names, and the answers of ListParts and
ListMultipartUploads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from worker.api.params import byte_range, header_number
from worker.api.s3 import xmlbody
from worker.api.s3.call import S3Call
from worker.api.s3.errors import S3Error, invalid_argument
from worker.api.s3.xmlbody import el
from worker.common.ranges import ByteRange

MAX_PARTS = 10_000
MIN_PART = 5 << 20
"""S3's smallest part but the last."""
MAX_PART = 5 << 30
COMPLETE_BODY_LIMIT = 1 << 20
MAX_LISTED = 1000
"""The most parts or uploads one listing answers, as S3."""


@dataclass(frozen=True)
class ListedPart:
    """A part as ListParts shows it; ``etag`` quoted, as S3 answers it."""

    number: int
    etag: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class ListedUpload:
    """An upload in progress as ListMultipartUploads shows it."""

    key: str
    id: str
    initiated_ns: int


def no_such_upload(upload_id: str) -> S3Error:
    return S3Error("NoSuchUpload", 404, f"no upload {upload_id!r}: it was completed, aborted "
                   "or never made")  # fmt: skip


def part_number(call: S3Call) -> int:
    """The request's ``partNumber``, 1 to 10,000; InvalidArgument otherwise."""
    text = call.request.query_params.get("partNumber", "")
    number = header_number("partNumber", text, text) if text.isdigit() else 0
    if not 1 <= number <= MAX_PARTS:
        raise invalid_argument(f"partNumber={text!r}: expected 1 to {MAX_PARTS}")
    return number


def _count(call: S3Call, name: str, default: str) -> int:
    text = call.request.query_params.get(name, default)
    if not text.isdigit():
        raise invalid_argument(f"{name}={text!r}: expected a non-negative integer")
    return int(text)


def parts_paging(call: S3Call) -> tuple[int, int]:
    """ListParts' ``part-number-marker`` and ``max-parts`` (at most 1,000)."""
    most = min(_count(call, "max-parts", "1000"), MAX_LISTED)
    return _count(call, "part-number-marker", "0"), most


def uploads_paging(call: S3Call) -> tuple[str, str, str, int]:
    """ListMultipartUploads' ``prefix``, ``key-marker``, ``upload-id-marker`` and
    ``max-uploads`` (at most 1,000)."""
    query = call.request.query_params
    most = min(_count(call, "max-uploads", "1000"), MAX_LISTED)
    markers = query.get("key-marker", ""), query.get("upload-id-marker", "")
    return query.get("prefix", ""), *markers, most


def parts_result(
    call: S3Call, upload_id: str, marker: int, most: int,
    parts: Sequence[ListedPart], truncated: bool,
) -> bytes:  # fmt: skip
    """ListParts' answer: ``parts`` after ``marker``, a page of at most ``most``."""
    body = "".join(
        f"<Part>{el('PartNumber', part.number)}"
        f"{el('LastModified', xmlbody.iso_time(part.mtime_ns))}"
        f"{el('ETag', part.etag)}{el('Size', part.size)}</Part>"
        for part in parts
    )
    return xmlbody.document(
        "ListPartsResult",
        el("Bucket", call.named_bucket()),
        el("Key", call.key or ""),
        el("UploadId", upload_id),
        el("PartNumberMarker", marker),
        el("NextPartNumberMarker", parts[-1].number if parts else marker),
        el("MaxParts", most),
        el("IsTruncated", truncated),
        f"<Initiator>{xmlbody.OWNER}</Initiator><Owner>{xmlbody.OWNER}</Owner>",
        el("StorageClass", "STANDARD"),
        body,
    )


def uploads_result(
    call: S3Call, paging: tuple[str, str, str, int],
    uploads: Sequence[ListedUpload], truncated: bool,
) -> bytes:  # fmt: skip
    """ListMultipartUploads' answer: ``uploads``, a page of the listing ``paging`` asked."""
    prefix, key_marker, id_marker, most = paging
    body = "".join(
        f"<Upload>{el('Key', upload.key)}{el('UploadId', upload.id)}"
        f"<Initiator>{xmlbody.OWNER}</Initiator><Owner>{xmlbody.OWNER}</Owner>"
        f"{el('StorageClass', 'STANDARD')}"
        f"{el('Initiated', xmlbody.iso_time(upload.initiated_ns))}</Upload>"
        for upload in uploads
    )
    following = ""
    if truncated and uploads:
        following = el("NextKeyMarker", uploads[-1].key) + el("NextUploadIdMarker", uploads[-1].id)
    return xmlbody.document(
        "ListMultipartUploadsResult",
        el("Bucket", call.named_bucket()),
        el("KeyMarker", key_marker),
        el("UploadIdMarker", id_marker),
        following,
        el("Prefix", prefix),
        el("MaxUploads", most),
        el("IsTruncated", truncated),
        body,
    )


def copy_range(header: str, size: int) -> ByteRange:
    """The range an ``x-amz-copy-source-range`` ``header`` names, when it ends inside an
    object of ``size`` bytes: a part copies the bytes it names or nothing (InvalidRange), where
    a GET's range would be cut at the end."""
    span = byte_range(header)
    if span is None:
        raise invalid_argument("x-amz-copy-source-range must be bytes=first-last")
    if span.last is not None and span.first is not None and span.last >= size:
        raise S3Error("InvalidRange", 416, f"the range ends past the source's {size} bytes",
                      {"Content-Range": f"bytes */{size}"})  # fmt: skip
    return span
