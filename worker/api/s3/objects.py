"""Object operations: GetObject and HeadObject (ranges, conditions, ``response-*``
overrides, ``partNumber``), PutObject, CopyObject, DeleteObject and DeleteObjects.

Reads go through the page cache by the one streamer (``worker.api.body.read_body``), pinned to
the version whose ETag the answer names, so a read never mixes versions. A write's body
streams through its check (signature, payload hash, checksums) into the store's write, which
commits only once the whole body has passed (a failed check aborts it), and a copy streams
the source's pinned version into the write, so a source that changes mid-copy fails the copy
instead of writing a mix."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from urllib.parse import unquote

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ufs.attributes import Attributes
from ufs.errors import UfsIsADirectory, UfsNotFound
from ufs.status import UfsStatus
from worker import keys as worker_keys
from worker.api.body import read_body
from worker.api.params import byte_range, header_number
from worker.api.s3 import xmlbody
from worker.api.s3.attributes import requested
from worker.api.s3.call import S3Call
from worker.api.s3.conditions import etag, failed, precondition_failed
from worker.api.s3.errors import S3Error, invalid_argument, not_implemented, translated
from worker.common.errors import IsADirectory
from worker.common.ranges import ByteRange, Span, Window
from worker.reader import ReadResult

DEFAULT_TYPE = "binary/octet-stream"
"""S3's Content-Type of an object stored without one (or in a store that keeps none)."""
OVERRIDES = {
    "response-content-type": "Content-Type",
    "response-content-language": "Content-Language",
    "response-expires": "Expires",
    "response-cache-control": "Cache-Control",
    "response-content-disposition": "Content-Disposition",
    "response-content-encoding": "Content-Encoding",
}
"""GetObject's query parameters that set a header of the answer."""


def object_headers(call: S3Call, status: UfsStatus, attributes: Attributes) -> dict[str, str]:
    """What every answer about an object carries: its ETag and Last-Modified (the store's),
    its type, kept headers and user metadata (``attributes``), byte ranges offered, and the
    ``response-*`` overrides the request asked for."""
    headers = {
        "ETag": etag(status),
        "Last-Modified": xmlbody.http_time(status.mtime_ns),
        "Content-Type": DEFAULT_TYPE,
        "Accept-Ranges": "bytes",
        **attributes.to_headers(),
    }
    query = call.request.query_params
    for name, header in OVERRIDES.items():
        if (value := query.get(name)) is not None:
            headers[header] = value
    return headers


def stored_attributes(call: S3Call, status: UfsStatus) -> Attributes:
    """The attributes the store keeps with the version ``status`` names: remembered ones
    (:class:`worker.api.s3.attributes.AttributeMemo`), else the store's answer. Blocking."""

    def load() -> Attributes:
        return call.service.ufs.attributes(status.uri, status.version,
                                           deadline=call.context(status.uri).deadline)  # fmt: skip

    return call.endpoint.memo.get(status, load)


def _head(call: S3Call) -> tuple[UfsStatus, Attributes]:
    """The object's status, as fresh as the request asks, and its attributes; NoSuchKey for
    a prefix."""
    status = _file(call.service.status(call.context(call.uri())))
    return status, stored_attributes(call, status)


def _file(status: UfsStatus) -> UfsStatus:
    if status.is_dir:
        raise IsADirectory(f"{status.uri!r} is a prefix, not a key")
    return status


class _NotModified(Exception):
    """A GET's ``If-None-Match`` or ``If-Modified-Since`` says the client has the object."""

    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__("not modified")
        self.headers = headers


def _span(call: S3Call) -> tuple[Span | None, bool]:
    """The range asked (None: the whole object) and whether it is a part (``partNumber``:
    parts are not kept apart from the object, so part 1 is the whole object)."""
    part = call.request.query_params.get("partNumber")
    header = call.request.headers.get("range")
    if part is not None:
        if header is not None:
            raise invalid_argument("Range and partNumber cannot both be given")
        if header_number("partNumber", part, part) != 1:
            raise S3Error("InvalidPartNumber", 416, "the object has one part")
        return None, True
    return (None if header is None else byte_range(header)), False


async def get_object(call: S3Call) -> Response:
    """The object, or the range asked, read through the page cache pinned to the version whose
    ETag the conditions were checked against; status, conditions and the first bytes in one
    thread-pool hop."""
    span, part = _span(call)
    context = call.context(call.uri())
    kept: list[Attributes] = []

    def start() -> ReadResult:
        status = _file(call.service.status(context))
        refused = failed(call.request.headers, status)
        if refused == 412:
            raise precondition_failed()
        if refused == 304:
            raise _NotModified({"ETag": etag(status),
                                "Last-Modified": xmlbody.http_time(status.mtime_ns)})  # fmt: skip
        kept.append(stored_attributes(call, status))
        pinned = replace(context, version=status.version)
        return call.service.read_span(pinned, Window() if span is None else span)

    def answer(result: ReadResult) -> tuple[int, dict[str, str]]:
        headers = object_headers(call, result.status, kept[0])
        if part:
            headers["x-amz-mp-parts-count"] = "1"
        if span is None and not part:
            return 200, headers
        last = result.offset + result.length - 1
        headers["Content-Range"] = f"bytes {result.offset}-{last}/{result.status.size}"
        return 206, headers

    try:
        return await read_body(start, answer)
    except _NotModified as exc:
        return Response(b"", 304, exc.headers)


async def head_object(call: S3Call) -> Response:
    status, attributes = await run_in_threadpool(_head, call)
    headers = object_headers(call, status, attributes)
    refused = failed(call.request.headers, status)
    if refused is not None:
        return Response(b"", refused, headers)
    span, part = _span(call)
    length, code = status.size, 200
    if span is not None or part:
        offset, length = (span or ByteRange(0, None)).resolve(status.size)
        headers["Content-Range"] = f"bytes {offset}-{offset + length - 1}/{status.size}"
        code = 206
    headers["Content-Length"] = str(length)
    return Response(b"", code, headers)


FOLDER_BODY_LIMIT = 0
"""A folder's body is empty."""


async def put_object(call: S3Call) -> Response:
    """The body streamed through to the store as it arrives, committed only once it has
    passed its check (:meth:`S3Call.written`); a key ending in ``/`` with an empty body is a
    folder (a directory where the store has them)."""
    target = call.context(call.uri())
    service = call.service
    _unconditional(call)
    await run_in_threadpool(service.admit, target, "create")
    if (call.key or "").endswith("/"):
        try:
            await call.small(FOLDER_BODY_LIMIT)
        except S3Error as exc:
            raise invalid_argument(
                "a key ending in '/' names a folder: its body must be empty"
            ) from exc
        status = await run_in_threadpool(service.mkdir, target.renewed())
    else:
        limit = service.config.get(worker_keys.MAX_WRITE_SIZE)
        attributes = requested(call.request.headers)
        status, _ = await call.written(
            lambda chunks: service.write(target, chunks, attributes), limit
        )
        call.endpoint.memo.forget(target.uri)
    return Response(b"", 200, {"ETag": etag(status)})


def _unconditional(call: S3Call) -> None:
    """Refuse a conditional write (``If-Match``, ``If-None-Match``): the store's write is not
    made conditional here, and writing anyway could overwrite what the client meant to keep."""
    for name in ("if-match", "if-none-match"):
        if name in call.request.headers:
            raise not_implemented(f"A conditional PutObject ({name})")


async def delete_object(call: S3Call) -> Response:
    """Deleted through; a key that is not there is deleted too (S3's DeleteObject is
    idempotent), and so is a prefix (it has no object to delete)."""
    context = call.context(call.uri())
    await run_in_threadpool(_delete, call, context.uri)
    return Response(b"", 204)


def _delete(call: S3Call, uri: str) -> None:
    call.endpoint.memo.forget(uri)
    with contextlib.suppress(UfsNotFound, UfsIsADirectory):
        call.service.delete(call.context(uri))


MAX_DELETE_KEYS = 1000
DELETE_BODY_LIMIT = 2 << 20
"""A DeleteObjects body of 1,000 keys of 1 KiB each, with room for its XML."""


async def delete_objects(call: S3Call) -> Response:
    """Each key of the body deleted as DeleteObject deletes it; the answer names each (or,
    quiet, only the failures)."""
    body = await call.small(DELETE_BODY_LIMIT)
    try:
        names, quiet = xmlbody.parse_delete(body)
    except xmlbody.BadXml as exc:
        raise S3Error("MalformedXML", 400, str(exc)) from None
    if len(names) > MAX_DELETE_KEYS:
        raise S3Error("MalformedXML", 400, f"more than {MAX_DELETE_KEYS} keys in one request")

    def work() -> str:
        parts = []
        for name in names:
            try:
                _delete(call, call.uri(name))
            except Exception as exc:  # noqa: BLE001 — each key's failure is reported in the answer
                code = _code_of(exc)
                parts.append(f"<Error>{xmlbody.el('Key', name)}{xmlbody.el('Code', code)}"
                             f"{xmlbody.el('Message', str(exc))}</Error>")  # fmt: skip
                continue
            if not quiet:
                parts.append(f"<Deleted>{xmlbody.el('Key', name)}</Deleted>")
        return "".join(parts)

    answer = xmlbody.document("DeleteResult", await run_in_threadpool(work))
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)


def _code_of(exc: Exception) -> str:
    return translated(exc).code


# -- copy ---------------------------------------------------------------------------------------


def copy_source(call: S3Call) -> tuple[str, str]:
    """The bucket and key of ``x-amz-copy-source`` (``[/]bucket/key``, URL-encoded; a
    ``?versionId=`` is refused: stores' versions are not served)."""
    header = call.request.headers.get("x-amz-copy-source", "")
    path, _, query = header.partition("?")
    if query:
        raise S3Error("NotImplemented", 501, "copying a version (versionId) is not implemented")
    bucket, _, key = unquote(path).lstrip("/").partition("/")
    if not bucket or not key:
        raise invalid_argument(f"x-amz-copy-source {header!r}: expected bucket/key")
    return bucket, key


async def source_status(call: S3Call) -> tuple[str, UfsStatus]:
    """The copy source's URI and status; 412 when an ``x-amz-copy-source-if-*`` fails."""
    bucket, key = copy_source(call)
    uri = call.endpoint.buckets.uri(bucket, key)
    status = _file(await run_in_threadpool(call.service.status, call.context(uri)))
    if failed(call.request.headers, status, "x-amz-copy-source-") is not None:
        raise precondition_failed()
    return uri, status


def pinned_chunks(call: S3Call, status: UfsStatus, span: Span | None = None) -> Iterator[bytes]:
    """The bytes of ``span`` of the version ``status`` names, through the page cache; a
    change of the source mid-read ends them with an error (the write they feed fails)."""
    pinned = call.context(status.uri, status.version)
    return call.service.read_span(pinned, Window() if span is None else span).chunks


async def copy_object(call: S3Call) -> Response:
    directive = call.request.headers.get("x-amz-metadata-directive", "COPY").upper()
    if directive not in ("COPY", "REPLACE"):
        raise invalid_argument(f"x-amz-metadata-directive {directive!r}: expected COPY or REPLACE")
    uri, status = await source_status(call)
    target = call.context(call.uri())
    if target.uri == uri and directive == "COPY":
        raise S3Error("InvalidRequest", 400, "copying an object to itself needs "
                      "x-amz-metadata-directive: REPLACE")  # fmt: skip
    await run_in_threadpool(call.service.admit, target, "create")

    def work() -> UfsStatus:
        if directive == "REPLACE":
            attributes = requested(call.request.headers)
        else:
            attributes = stored_attributes(call, status)
        written = call.service.write(target, pinned_chunks(call, status), attributes)[0]
        call.endpoint.memo.forget(target.uri)
        return written

    written = await run_in_threadpool(work)
    answer = xmlbody.copy_result("CopyObjectResult", etag(written), written.mtime_ns)
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)
