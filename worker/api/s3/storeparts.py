"""Multipart uploads as the store's own (an S3 store: ``ufs.stores.Uploads``):
CreateMultipartUpload, UploadPart, UploadPartCopy, CompleteMultipartUpload,
AbortMultipartUpload, ListParts, ListMultipartUploads, each one request to the store.

Upload ids, part ETags and the object's ETag are the store's, so any worker can take any part
of an upload, and nothing of it lives on the worker. A part's body waits in the worker's body
spool (``worker.spool``: on disk, never in memory) until it has arrived whole and passed its
check (signature, payload hash, checksums), then streams from there to the store: a part that
does not match is never sent. Completing is a mutation as any write is (audited, the key's
cached status and pages replaced, the change published). Each store call has the request's
deadline (``X-Dora-Timeout-Ms``) capped by ``dora.ufs.call.deadline``. Safe for concurrent
requests: it keeps no state."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import IO
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ufs import uri as uris
from ufs.status import UfsStatus
from ufs.stores import Uploads
from worker import keys as worker_keys
from worker.api.s3 import xmlbody
from worker.api.s3.attributes import requested
from worker.api.s3.call import S3Call
from worker.api.s3.conditions import etag
from worker.api.s3.errors import malformed_xml
from worker.api.s3.keepalive import answered_while_working
from worker.api.s3.objects import pinned_chunks, source_status
from worker.api.s3.partlists import (
    COMPLETE_BODY_LIMIT,
    MAX_PART,
    ListedPart,
    ListedUpload,
    copy_range,
    no_such_upload,
    part_number,
    parts_paging,
    parts_result,
    uploads_paging,
    uploads_result,
)
from worker.api.s3.xmlbody import el


def uploads_of(call: S3Call) -> Uploads | None:
    """The store's own uploads for the request's bucket; None where its store has none."""
    return call.service.ufs.uploads(call.endpoint.buckets.root(call.named_bucket()))


def _upload_id(call: S3Call) -> str:
    upload_id = call.request.query_params.get("uploadId", "")
    if not upload_id:
        raise no_such_upload(upload_id)
    return upload_id


async def create(call: S3Call, store: Uploads) -> Response:
    target = call.context(call.uri())
    await run_in_threadpool(call.service.admit, target, "create")
    attributes = requested(call.request.headers)
    upload_id = await run_in_threadpool(store.create, target.uri, target.deadline, attributes)
    answer = xmlbody.document("InitiateMultipartUploadResult", el("Bucket", call.named_bucket()),
                              el("Key", call.key or ""), el("UploadId", upload_id))  # fmt: skip
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)


def _send(call: S3Call, store: Uploads, upload_id: str, number: int, spooled: IO[bytes]) -> str:
    """The spooled part, from its start, sent to the store; its ETag."""
    size = spooled.tell()
    spooled.seek(0)
    target = call.context(call.uri())
    return store.upload_part(target.uri, upload_id, number, spooled, size, target.deadline)


async def upload_part(call: S3Call, store: Uploads) -> Response:
    upload_id, number = _upload_id(call), part_number(call)
    limit = min(MAX_PART, call.service.config.get(worker_keys.MAX_WRITE_SIZE))
    with call.service.spool.open() as spooled:

        def spool(chunks: Iterator[bytes]) -> None:
            for chunk in chunks:
                spooled.write(chunk)

        await call.written(spool, limit)
        tag = await run_in_threadpool(_send, call, store, upload_id, number, spooled)
    return Response(b"", 200, {"ETag": tag})


async def upload_part_copy(call: S3Call, store: Uploads) -> Response:
    """A part copied from a range of an object (``x-amz-copy-source-range``), pinned to the
    source's version, read through the cache (the source may be in any bucket)."""
    upload_id, number = _upload_id(call), part_number(call)
    _, status = await source_status(call)
    header = call.request.headers.get("x-amz-copy-source-range")
    span = None if header is None else copy_range(header, status.size)

    def work() -> str:
        with call.service.spool.open() as spooled:
            for chunk in pinned_chunks(call, status, span):
                spooled.write(chunk)
            return _send(call, store, upload_id, number, spooled)

    tag = await run_in_threadpool(work)
    answer = xmlbody.copy_result("CopyPartResult", tag, time.time_ns())
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)


async def complete(call: S3Call, store: Uploads) -> Response:
    """The store's upload completed as the object, a mutation as every write is; the answer
    is under way while the store works (``worker.api.s3.keepalive``)."""
    upload_id = _upload_id(call)
    body = await call.small(COMPLETE_BODY_LIMIT)
    try:
        asked = xmlbody.parse_complete(body)
    except xmlbody.BadXml as exc:
        raise malformed_xml(str(exc)) from None
    parts = [(part.number, f'"{part.etag}"') for part in asked]
    target = call.context(call.uri()).renewed()
    bucket, key = call.named_bucket(), call.key or ""
    host = call.request.headers.get("host", "")
    location = f"{call.request.url.scheme}://{host}/{bucket}/{quote(key)}"

    def work() -> UfsStatus:
        def finish(uri: str) -> UfsStatus:
            return store.complete(uri, upload_id, parts, target.deadline)

        return call.service.commit(target, finish)[0]

    def render(status: UfsStatus) -> str:
        tags = el("Location", location), el("Bucket", bucket), el("Key", key)
        return xmlbody.root("CompleteMultipartUploadResult", *tags, el("ETag", etag(status)))

    return answered_while_working(work, render, f"/{bucket}/{key}")


async def abort(call: S3Call, store: Uploads) -> Response:
    upload_id = _upload_id(call)
    target = call.context(call.uri())
    await run_in_threadpool(store.abort, target.uri, upload_id, target.deadline)
    return Response(b"", 204)


async def list_parts(call: S3Call, store: Uploads) -> Response:
    upload_id = _upload_id(call)
    marker, most = parts_paging(call)
    target = call.context(call.uri())
    page = await run_in_threadpool(store.parts, target.uri, upload_id, marker, most,
                                   target.deadline)  # fmt: skip
    shown = [ListedPart(p.number, p.etag, p.size, p.mtime_ns) for p in page.parts]
    answer = parts_result(call, upload_id, marker, most, shown, page.truncated)
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)


async def list_uploads(call: S3Call, store: Uploads) -> Response:
    """The bucket's uploads in progress under ``prefix``, as the store lists them; an upload
    to a key outside the bucket's root (a bucket that is a prefix of the store's) is not
    shown."""
    bucket = call.named_bucket()
    root = call.endpoint.buckets.root(bucket)
    paging = uploads_paging(call)
    prefix, key_marker, id_marker, most = paging
    after = (call.uri(key_marker), id_marker) if key_marker else None
    deadline = call.context(root).deadline
    page = await run_in_threadpool(store.in_progress, f"{root}/{prefix}", after, most, deadline)
    shown = [
        ListedUpload(call.endpoint.buckets.key(bucket, upload.uri), upload.id, upload.initiated_ns)
        for upload in page.uploads
        if uris.is_under(upload.uri, root) and upload.uri != root
    ]
    answer = uploads_result(call, paging, shown, page.truncated)
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)
