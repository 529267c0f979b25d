"""The REST API (v1) of DESIGN.md over a :class:`WorkerService`.

Handlers parse parameters by hand, run blocking work in the thread pool (never on the event
loop), and map errors once (``worker.api.errors``). Reads stream: the status, range and first
chunk are resolved before the answer starts, so errors get their status code; a failure after
that (the file changed mid-read) cuts the body short of its Content-Length, so a client sees an
error, never mixed bytes.
"""

from __future__ import annotations

import hmac
import itertools
import json
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import IO, Any

from fastapi import FastAPI
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from worker import keys
from worker.api import params, webhdfs
from worker.api.errors import PayloadTooLarge, Unauthorized, classify, response_for
from worker.service import ReadResult, WorkerService

Handler = Callable[[Request], Awaitable[Response]]
Route = Callable[[WorkerService, Request], Awaitable[Response]]
OPEN_PATHS = frozenset({"/healthz", "/readyz"})
SPOOL_IN_MEMORY = 16 << 20
COPY_CHUNK = 1 << 20


def json_response(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data), status, media_type="application/json")


def create_app(service: WorkerService) -> FastAPI:
    """The ASGI app serving ``service``. Token checks (when ``dora.worker.security.token`` is
    set) cover every route but the probes ``/healthz`` and ``/readyz``."""
    app = FastAPI(title="doracache worker", version="1", docs_url=None, redoc_url=None)
    token = (service.config.get(keys.TOKEN) or "").encode()
    for method, path, fn in ROUTES:
        app.add_api_route(path, _wrap(service, path, fn, token), methods=[method])
    app.include_router(webhdfs.router(service))
    return app


def _wrap(service: WorkerService, path: str, fn: Route, token: bytes) -> Handler:
    """Auth, error mapping and latency metrics around one route."""
    metrics = service.metrics

    async def handle(request: Request) -> Response:
        started = time.perf_counter()
        try:
            if token and path not in OPEN_PATHS:
                _check_token(request, token)
            response = await fn(service, request)
        except Exception as exc:  # noqa: BLE001 — every error becomes an answer; bugs are logged
            response = response_for(exc)
            known = classify(exc)
            metrics.errors.labels(known[1] if known else "InternalError").inc()
        metrics.request_latency.labels(path).observe(time.perf_counter() - started)
        return response

    return handle


async def healthz(service: WorkerService, request: Request) -> Response:
    return json_response({"status": "ok"})


async def readyz(service: WorkerService, request: Request) -> Response:
    ready = service.ready()
    return json_response({"ready": ready}, 200 if ready else 503)


async def metrics_text(service: WorkerService, request: Request) -> Response:
    return Response(service.metrics.render(), media_type=CONTENT_TYPE_LATEST)


async def stats(service: WorkerService, request: Request) -> Response:
    return json_response(await run_in_threadpool(service.stats))


async def status(service: WorkerService, request: Request) -> Response:
    q = request.query_params
    path, interval = params.required(q, "path"), params.sync_interval(q)
    version = q.get("version") or None

    def work() -> dict[str, Any]:
        return service.describe(service.status(path, interval, version))

    return json_response(await run_in_threadpool(work))


async def listing(service: WorkerService, request: Request) -> Response:
    q = request.query_params
    path, interval = params.required(q, "path"), params.sync_interval(q)

    def work() -> dict[str, Any]:
        return {"entries": [service.describe(s) for s in service.list(path, interval)]}

    return json_response(await run_in_threadpool(work))


async def write(service: WorkerService, request: Request) -> Response:
    path = params.required(request.query_params, "path")
    service.roots.check(path)
    spool = await _spool_body(request, service.config.get(keys.MAX_WRITE_SIZE))
    try:
        written, created = await run_in_threadpool(service.write, path, _file_chunks(spool))
    finally:
        spool.close()
    return json_response(service.describe(written), 201 if created else 200)


async def delete(service: WorkerService, request: Request) -> Response:
    q = request.query_params
    path, recursive = params.required(q, "path"), params.boolean(q, "recursive")
    deleted = await run_in_threadpool(service.delete, path, recursive)
    return json_response({"deleted": deleted})


async def rename(service: WorkerService, request: Request) -> Response:
    q = request.query_params
    src, dst = params.required(q, "src"), params.required(q, "dst")
    moved = await run_in_threadpool(service.rename, src, dst)
    return json_response(service.describe(moved))


async def mkdir(service: WorkerService, request: Request) -> Response:
    made = await run_in_threadpool(service.mkdir, params.required(request.query_params, "path"))
    return json_response(service.describe(made))


async def invalidate(service: WorkerService, request: Request) -> Response:
    q = request.query_params
    path, recursive = params.required(q, "path"), params.boolean(q, "recursive")
    dropped = await run_in_threadpool(service.invalidate, path, recursive)
    return json_response({"invalidated": dropped})


async def load(service: WorkerService, request: Request) -> Response:
    q = request.query_params
    path, recursive = params.required(q, "path"), params.boolean(q, "recursive")
    include, exclude = _patterns(q.getlist("include")), _patterns(q.getlist("exclude"))
    job = await run_in_threadpool(service.loads.submit, path, recursive, include, exclude)
    return json_response(job.to_dict(), 202)


async def load_progress(service: WorkerService, request: Request) -> Response:
    return _job_answer(service.loads.get(request.path_params["job_id"]), request)


async def load_cancel(service: WorkerService, request: Request) -> Response:
    return _job_answer(service.loads.cancel(request.path_params["job_id"]), request)


def _check_token(request: Request, token: bytes) -> None:
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token):
        raise Unauthorized("missing or wrong bearer token (Authorization: Bearer <token>)")


def _job_answer(job: Any, request: Request) -> Response:
    if job is None:
        job_id = request.path_params["job_id"]
        return json_response({"error": "NotFound", "message": f"no load job {job_id!r}"}, 404)
    return json_response(job.to_dict())


def _patterns(values: list[str]) -> list[str]:
    return [p.strip() for value in values for p in value.split(",") if p.strip()]


async def read(service: WorkerService, request: Request) -> Response:
    q = request.query_params
    path, interval = params.required(q, "path"), params.sync_interval(q)
    version = q.get("version") or None
    offset, length = params.optional_int(q, "offset") or 0, params.optional_int(q, "length")
    header = request.headers.get("range")
    suffix = False
    if header is not None:
        offset, length, suffix = params.byte_range(header)

    def resolve() -> tuple[ReadResult, Iterator[bytes]]:
        if suffix:
            size = service.status(path, interval, version).size
            result = service.read(path, max(0, size - offset), None, interval, version)
        else:
            result = service.read(path, offset, length, interval, version)
        first = next(result.chunks, b"")
        return result, itertools.chain([first], result.chunks)

    result, body = await run_in_threadpool(resolve)
    headers = {
        "Content-Length": str(result.length),
        "X-Dora-Version": result.status.version,
        "Accept-Ranges": "bytes",
    }
    status_code = 200
    if header is not None:
        status_code = 206
        last = result.offset + result.length - 1
        headers["Content-Range"] = f"bytes {result.offset}-{last}/{result.status.size}"
    return StreamingResponse(body, status_code, headers, "application/octet-stream")


async def _spool_body(request: Request, limit: int) -> IO[bytes]:
    """The request body in a spooled temp file (memory, then disk), refused past ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"body of {declared} bytes exceeds the limit of {limit} bytes")
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115 — caller closes
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            spool.close()
            raise PayloadTooLarge(f"body exceeds the limit of {limit} bytes")
        spool.write(chunk)
    spool.seek(0)
    return spool


def _file_chunks(spool: IO[bytes]) -> Iterator[bytes]:
    while chunk := spool.read(COPY_CHUNK):
        yield chunk


ROUTES: tuple[tuple[str, str, Route], ...] = (
    ("GET", "/healthz", healthz),
    ("GET", "/readyz", readyz),
    ("GET", "/metrics", metrics_text),
    ("GET", "/v1/stats", stats),
    ("GET", "/v1/status", status),
    ("GET", "/v1/list", listing),
    ("GET", "/v1/read", read),
    ("PUT", "/v1/write", write),
    ("DELETE", "/v1/delete", delete),
    ("POST", "/v1/rename", rename),
    ("POST", "/v1/mkdir", mkdir),
    ("POST", "/v1/invalidate", invalidate),
    ("POST", "/v1/load", load),
    ("GET", "/v1/load/{job_id}", load_progress),
    ("DELETE", "/v1/load/{job_id}", load_cancel),
)
