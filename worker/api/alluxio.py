"""Alluxio's worker REST API, as Alluxio's Python client ``alluxiofs`` calls it, over the same
:class:`WorkerService` as REST v1 (no read or write path of its own).

The app mounts :data:`ROUTES` beside its own, with the same token check, error shapes and
metrics. None of these paths is one of ours: where both use a name, the method or the path
shape differs (``GET /v1/load?opType=`` beside ``POST /v1/load`` and ``GET /v1/load/{id}``;
``POST /v1/mkdir/{id}`` beside ``POST /v1/mkdir?path=``). Semantics follow Alluxio where ours
differ: ``{path_id}`` is the sha256 of the path, page ``i`` is bytes ``[i*P, (i+1)*P)`` with
``P`` this worker's page size, ``mInAlluxioPercentage`` comes from the bytes in the page store.
Writes go through ``service.write``; the mutations answer ``{"success": true}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ufs.errors import UfsNotADirectory, UfsNotFound
from ufs.status import UfsStatus
from worker.api import alluxio_keys, params
from worker.api import alluxio_params as ap
from worker.api import alluxio_shapes as shapes
from worker.api.body import file_chunks, read_body, spool_upload
from worker.api.errors import error_response
from worker.api.jsonbody import json_response
from worker.api.surface import Route as SurfaceRoute
from worker.api.surface import Surface, context
from worker.common import errors as catalogue
from worker.common.errors import InvalidRequest as BadRequest
from worker.common.errors import RangeNotSatisfiable
from worker.common.ranges import Span, Window
from worker.reader import ReadResult
from worker.service import WorkerService

Route = Callable[[WorkerService, Request], Awaitable[Response]]
OBJECTS = "/v1/object"
SUCCESS = {"success": True}
HEAD_TAIL_BYTES = 1024

# Where alluxiofs reads meaning into a status code, the code it expects (route, error code):
# only a 500 from /v1/info becomes FileNotFoundError, so exists() answers False rather than
# counting an error and falling back to the UFS. Everywhere else REST v1's codes stand.
STATUS_FOR: dict[tuple[str, str], int] = {("/v1/info", "NotFound"): 500}


def _answering(path: str, fn: Route) -> Route:
    """``fn`` with the status codes of :data:`STATUS_FOR`; other errors go to the app."""

    async def handle(service: WorkerService, request: Request) -> Response:
        try:
            return await fn(service, request)
        except Exception as exc:
            kind = catalogue.kind_of(exc)
            status = STATUS_FOR.get((path, kind.code)) if kind else None
            if kind is None or status is None:
                raise
            return error_response(replace(kind, status=status), str(exc), {})

    return handle


def _record(service: WorkerService, status: UfsStatus) -> dict[str, Any]:
    return shapes.file_record(status, service.describe(status)["cached_bytes"])


async def _stream(
    service: WorkerService, request: Request, uri: str, span: Span, status: int = 200
) -> Response:
    """``span`` of ``uri``, streamed; errors before the first byte get their status."""
    call = context(service, request, uri)

    def answer(result: ReadResult) -> tuple[int, dict[str, str]]:
        headers = {"X-Dora-Version": result.status.version}
        if status == 206:
            last = result.offset + result.length - 1
            headers["Content-Range"] = f"bytes {result.offset}-{last}/{result.status.size}"
        return status, headers

    return await read_body(lambda: service.read_span(call, span), answer)


@dataclass(frozen=True)
class _Tail:
    """The last ``count`` bytes, or the whole file when it is shorter (an empty file too)."""

    count: int

    def resolve(self, size: int) -> tuple[int, int]:
        return max(0, size - self.count), min(self.count, size)


# -- metadata ----------------------------------------------------------------------------------


async def node(service: WorkerService, request: Request) -> Response:
    """The worker to ask about a path: this one, at the address the client reached it by."""
    host, port = request.url.hostname or "", request.url.port
    if port is None:
        port = 443 if request.url.scheme == "https" else 80
    if service.config.get(alluxio_keys.NODE_ANSWER) == alluxio_keys.NODE_ANSWER_LOCATIONS:
        return json_response(
            shapes.node_locations(host, port, request.query_params.get("path", ""))
        )
    return json_response(shapes.node_address(host, port))


async def info(service: WorkerService, request: Request) -> Response:
    call = context(service, request, params.required(request.query_params, "path"))
    return json_response(await run_in_threadpool(lambda: [_record(service, service.status(call))]))


async def files(service: WorkerService, request: Request) -> Response:
    """A directory's children; a file lists as itself, as in Alluxio."""
    call = context(service, request, params.required(request.query_params, "path"))

    def work() -> list[dict[str, Any]]:
        try:
            children = service.list(call)
        except UfsNotADirectory:
            children = [service.status(call)]
        return [_record(service, child) for child in children]

    return json_response(await run_in_threadpool(work))


# -- reads -------------------------------------------------------------------------------------


async def read_range(service: WorkerService, request: Request) -> Response:
    uri = ap.target(request)
    offset = params.optional_int(request.query_params, "offset") or 0
    length = params.optional_int(request.query_params, "length")
    return await _stream(service, request, uri, Window(offset, length))


async def read_page(service: WorkerService, request: Request) -> Response:
    """Page ``i`` of the file in this worker's page size, or ``[offset, offset+length)`` of
    it; a page that starts past the end of the file is 416."""
    uri, index = ap.target(request), ap.page_index(request)
    page_size = service.page_size
    within = params.optional_int(request.query_params, "offset") or 0
    length = params.optional_int(request.query_params, "length")
    if within >= page_size:
        raise RangeNotSatisfiable(f"offset {within} is past the page size {page_size}")
    length = page_size - within if length is None else min(length, page_size - within)
    return await _stream(service, request, uri, Window(index * page_size + within, length))


async def read_chunk(service: WorkerService, request: Request) -> Response:
    """The whole file, streamed (``chunkSize`` is the client's buffer size; it is checked and
    otherwise not needed)."""
    uri = ap.target(request)
    params.optional_int(request.query_params, "chunkSize")
    return await _stream(service, request, uri, Window())


async def head(service: WorkerService, request: Request) -> Response:
    uri, count = ap.target(request), ap.byte_count(request, "numOfBytes", HEAD_TAIL_BYTES)
    return await _stream(service, request, uri, Window(0, count))


async def tail(service: WorkerService, request: Request) -> Response:
    uri, count = ap.target(request), ap.byte_count(request, "numOfBytes", HEAD_TAIL_BYTES)
    return await _stream(service, request, uri, _Tail(count))


async def read_object(service: WorkerService, request: Request) -> Response:
    """``GET /<scheme>/<path>`` with an optional Range header, as Alluxio's S3 API answers it
    (alluxiofs 1.1.x reads byte ranges this way, by the record's ``mPath``)."""
    uri = shapes.uri_of(request.path_params["path"])
    header = request.headers.get("range")
    span = None if header is None else ap.object_range(header)
    if span is None:
        return await _stream(service, request, uri, Window())
    return await _stream(service, request, uri, span, 206)


# -- writes and mutations ----------------------------------------------------------------------


async def write_chunk(service: WorkerService, request: Request) -> Response:
    """The body (sent chunked) as the file's new content, written through."""
    call = context(service, request, ap.target(request))
    params.optional_int(request.query_params, "chunkSize")
    spool = await spool_upload(request, service)
    try:
        _, created = await run_in_threadpool(service.write, call.renewed(), file_chunks(spool))
    finally:
        spool.close()
    return json_response(SUCCESS, 201 if created else 200)


async def write_page(service: WorkerService, request: Request) -> Response:
    """The body as the bytes from ``i * page size`` on, the rest of the file kept: the new
    content is written through whole (a compatibility path, not a fast one). A page that would
    leave a hole after the end of the file is 416."""
    uri, index = ap.target(request), ap.page_index(request)
    call = context(service, request, uri)
    body = await spool_upload(request, service)
    call = call.renewed()  # the client's timeout counts from the end of its body
    try:
        created = await run_in_threadpool(
            service.write_at, call, index * service.page_size, file_chunks(body)
        )
    finally:
        body.close()
    return json_response(SUCCESS, 201 if created else 200)


async def mkdir(service: WorkerService, request: Request) -> Response:
    await run_in_threadpool(service.mkdir, context(service, request, ap.target(request)))
    return json_response(SUCCESS)


async def touch(service: WorkerService, request: Request) -> Response:
    """An empty file where none is; an existing file is left as it is."""
    call = context(service, request, ap.target(request))
    return json_response(SUCCESS, 201 if await run_in_threadpool(service.touch, call) else 200)


async def rm(service: WorkerService, request: Request) -> Response:
    """Delete through to the UFS, or with ``remove_alluxio_only`` drop only what the cache
    holds (Alluxio's "remove from Alluxio space only")."""
    call = context(service, request, ap.target(request))
    recursive = ap.flag(request, "recursive", "recursiveAlias")
    if ap.flag(request, "remove_alluxio_only"):
        await run_in_threadpool(service.invalidate, call, recursive)
    else:
        await run_in_threadpool(service.delete, call, recursive)
    return json_response(SUCCESS)


async def mv(service: WorkerService, request: Request) -> Response:
    src, dst = ap.target(request, "srcPath"), ap.unchecked_path(request, "dstPath")
    ends = (context(service, request, src), context(service, request, dst))
    await run_in_threadpool(service.rename, *ends)
    return json_response(SUCCESS)


async def copy(service: WorkerService, request: Request) -> Response:
    """A file, or with ``recursive`` a directory's files, read and written through; an
    existing destination file is replaced only with ``forced``."""
    src, dst = ap.target(request, "srcPath"), ap.unchecked_path(request, "dstPath")
    recursive, forced = ap.flag(request, "recursive"), ap.flag(request, "forced")
    call = context(service, request, src)
    await run_in_threadpool(service.copy, call, dst, recursive, forced)
    return json_response(SUCCESS)


# -- load jobs ---------------------------------------------------------------------------------


async def load(service: WorkerService, request: Request) -> Response:
    """``opType=submit`` starts loading a file or everything under a directory (one job per
    path: a submit while one runs joins it), ``progress`` reports the newest job for the path,
    ``stop`` cancels it."""
    q = request.query_params
    path, op = params.required(q, "path"), params.required(q, "opType")
    verbose = params.boolean(q, "verbose")
    if op not in ("submit", "progress", "stop"):
        raise BadRequest(f"query parameter opType={op!r}: expected submit, progress or stop")

    def work() -> dict[str, Any]:
        job = service.latest_load(path)
        running = job is not None and not job.state.final
        if op == "submit":
            if not running:
                service.load(path, True)
            return SUCCESS
        if job is None:
            raise UfsNotFound(f"no load job for {path!r}")
        if op == "progress":
            return shapes.load_progress(job, verbose)
        service.cancel_load(job.id)
        return {"success": running}

    return json_response(await run_in_threadpool(work))


ROUTES: tuple[SurfaceRoute, ...] = tuple(
    SurfaceRoute(method, path, _answering(path, fn))
    for method, path, fn in (
        ("GET", "/v1/node", node),
        ("GET", "/v1/info", info),
        ("GET", "/v1/files", files),
        ("GET", "/v1/range/{path_id}", read_range),
        ("GET", "/v1/file/{path_id}/page/{page_index}", read_page),
        ("POST", "/v1/file/{path_id}/page/{page_index}", write_page),
        ("GET", "/v1/chunk/{path_id}", read_chunk),
        ("POST", "/v1/chunk/{path_id}", write_chunk),
        ("GET", "/v1/head/{path_id}", head),
        ("GET", "/v1/tail/{path_id}", tail),
        ("POST", "/v1/mkdir/{path_id}", mkdir),
        ("POST", "/v1/touch/{path_id}", touch),
        ("POST", "/v1/rm/{path_id}", rm),
        ("POST", "/v1/mv/{path_id}", mv),
        ("POST", "/v1/copy/{path_id}", copy),
        ("GET", "/v1/load", load),
        ("GET", OBJECTS + "/{path:path}", read_object),
    )
)
"""Alluxio's calls."""

SURFACE = Surface(name="alluxio", prefix=OBJECTS, routes=ROUTES, render_error=error_response)
"""Alluxio's REST calls; errors in REST v1's shape (alluxiofs reads only status codes). It owns
only its object path: its other routes sit among REST v1's under /v1, whose answers for unknown
paths stand."""


def objects_on_port(app: ASGIApp, port: int) -> ASGIApp:
    """``app`` with every request that arrives on ``port`` (the S3 listener of
    ``dora.worker.alluxio.s3.port``) answered as ``GET /v1/object/<its path>``: alluxiofs 1.1.x
    reads ``http://<worker>:29998<mPath>``."""

    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        if scope["type"] == "http" and server is not None and server[1] == port:
            scope = dict(scope)
            scope["path"] = OBJECTS + scope["path"]
            scope["raw_path"] = OBJECTS.encode() + (scope.get("raw_path") or b"")
        await app(scope, receive, send)

    return dispatch
