"""The REST API (v1) of DESIGN.md: a surface over :class:`WorkerService`.

Handlers parse parameters by hand (``worker.api.params``: precise 400s, no per-request model
validation on the hot path) and run blocking work in the thread pool, never on the event loop.
Reads stream: the service resolves the status, range and first chunk before the answer starts,
so errors get their status code; a failure after that (the file changed mid-read) cuts the body
short of its Content-Length, so a client sees an error, never mixed bytes.
"""

from __future__ import annotations

import json
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from worker import keys
from worker.api import params
from worker.api.body import file_chunks, spool_body
from worker.api.errors import error_response
from worker.api.surface import Route, Surface
from worker.errors import NotFound
from worker.ranges import Window
from worker.service import WorkerService


def json_response(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data), status, media_type="application/json")


async def healthz(service: WorkerService, request: Request) -> Response:
    return json_response({"status": "ok"})


async def readyz(service: WorkerService, request: Request) -> Response:
    answer = service.readiness()
    return json_response(answer, 200 if answer["ready"] else 503)


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


async def read(service: WorkerService, request: Request) -> Response:
    q = request.query_params
    path, interval = params.required(q, "path"), params.sync_interval(q)
    version = q.get("version") or None
    window = Window(params.optional_int(q, "offset") or 0, params.optional_int(q, "length"))
    header = request.headers.get("range")
    requested = None if header is None else params.byte_range(header)

    span = requested or window
    result = await run_in_threadpool(service.read_span, path, span, interval, version)
    headers = {
        "Content-Length": str(result.length),
        "X-Dora-Version": result.status.version,
        "Accept-Ranges": "bytes",
    }
    status_code = 200
    if requested is not None:
        status_code = 206
        last = result.offset + result.length - 1
        headers["Content-Range"] = f"bytes {result.offset}-{last}/{result.status.size}"
    return StreamingResponse(result.chunks, status_code, headers, "application/octet-stream")


async def write(service: WorkerService, request: Request) -> Response:
    path = params.required(request.query_params, "path")
    service.roots.check(path)
    spool = await spool_body(request, service.config.get(keys.MAX_WRITE_SIZE))
    try:
        written, created = await run_in_threadpool(service.write, path, file_chunks(spool))
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


def _job_answer(job: Any, request: Request) -> Response:
    if job is None:
        raise NotFound(f"no load job {request.path_params['job_id']!r}")
    return json_response(job.to_dict())


def _patterns(values: list[str]) -> list[str]:
    return [p.strip() for value in values for p in value.split(",") if p.strip()]


SURFACE = Surface(
    name="rest-v1",
    prefix="/",
    routes=(
        Route("GET", "/healthz", healthz),
        Route("GET", "/readyz", readyz),
        Route("GET", "/metrics", metrics_text),
        Route("GET", "/v1/stats", stats),
        Route("GET", "/v1/status", status),
        Route("GET", "/v1/list", listing),
        Route("GET", "/v1/read", read),
        Route("PUT", "/v1/write", write),
        Route("DELETE", "/v1/delete", delete),
        Route("POST", "/v1/rename", rename),
        Route("POST", "/v1/mkdir", mkdir),
        Route("POST", "/v1/invalidate", invalidate),
        Route("POST", "/v1/load", load),
        Route("GET", "/v1/load/{job_id}", load_progress),
        Route("DELETE", "/v1/load/{job_id}", load_cancel),
    ),
    render_error=error_response,
)
"""REST v1 owns every path no other surface claims (``prefix="/"``)."""
