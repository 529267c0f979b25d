"""The REST API (v1) of DESIGN.md: a surface over :class:`WorkerService`.

Parameters, answers and error answers are declared (``worker.api.contract``), so
``/openapi.json`` is the contract; the declared types check what ``worker.api.params`` checks
(precise 400s naming the parameter). Handlers run blocking work in the thread pool, never on
the event loop.
Reads stream: the service resolves the status, range and first chunk before the answer starts,
so errors get their status code; a failure after that (the file changed mid-read) cuts the body
short of its Content-Length, so a client sees an error, never mixed bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ufs.status import UfsStatus
from worker.api import advice, insight, locate, params, pins
from worker.api import contract as c
from worker.api.body import file_chunks, read_body, spool_upload
from worker.api.errors import error_response
from worker.api.jsonbody import json_response
from worker.api.params import Query
from worker.api.surface import Route, Surface, context
from worker.common.errors import NotFound
from worker.common.ranges import Window
from worker.freshness import Freshness
from worker.reader import ReadResult
from worker.service import WorkerService


async def healthz(service: WorkerService) -> Response:
    return json_response({"status": "ok"})


async def readyz(service: WorkerService) -> Response:
    answer = service.readiness()
    return json_response(answer, 200 if answer["ready"] else 503)


async def metrics_text(service: WorkerService) -> Response:
    return Response(service.render_metrics(), media_type=CONTENT_TYPE_LATEST)


async def stats(service: WorkerService) -> Response:
    return json_response(await run_in_threadpool(service.stats))


async def status(
    service: WorkerService,
    request: Request,
    path: c.UfsPath,
    sync_interval: c.SyncInterval = None,
    version: c.Version = None,
    serve_stale: c.ServeStale = None,
) -> Response:
    call = context(service, request, path, params.interval(sync_interval), version, serve_stale)
    cached = service.status_cached(call)
    if cached is not None:  # a memory-tier hit: a thread-pool hop would cost more than it
        return json_response(_aged(service, cached, call.fresh))

    def work() -> dict[str, Any]:
        return _aged(service, service.status(call), call.fresh)

    return json_response(await run_in_threadpool(work))


def _aged(service: WorkerService, status: UfsStatus, fresh: Freshness) -> dict[str, Any]:
    """``status`` as the API shows it, with how long ago the worker confirmed it and the sync
    interval a call to it without one gets (what a near-cache keeps it by)."""
    answer = service.describe(status)
    answer["age_ms"] = service.status_age(status)
    answer["sync_interval_ms"] = fresh.path_interval
    return answer


async def listing(
    service: WorkerService,
    request: Request,
    path: c.UfsPath,
    sync_interval: c.SyncInterval = None,
) -> Response:
    call = context(service, request, path, params.interval(sync_interval))

    def work() -> dict[str, Any]:
        children = service.list(call)
        age = service.listing_age(call, children)
        entries = service.describe_many(children)
        kept = service.child_intervals(call, [child.uri for child in children])
        for entry, interval in zip(entries, kept, strict=True):
            entry["age_ms"] = age
            entry["sync_interval_ms"] = interval
        return {"entries": entries}

    return json_response(await run_in_threadpool(work))


async def read(
    service: WorkerService,
    request: Request,
    path: c.UfsPath,
    offset: c.Offset = None,
    length: c.Length = None,
    sync_interval: c.SyncInterval = None,
    version: c.Version = None,
    header: c.ByteRangeHeader = None,
    serve_stale: c.ServeStale = None,
) -> Response:
    call = context(service, request, path, params.interval(sync_interval), version, serve_stale)
    requested = None if header is None else params.byte_range(header)
    span = requested or Window(offset or 0, length)

    def answer(result: ReadResult) -> tuple[int, dict[str, str]]:
        headers = {"X-Dora-Version": result.status.version, "Accept-Ranges": "bytes"}
        if requested is None:
            return 200, headers
        last = result.offset + result.length - 1
        headers["Content-Range"] = f"bytes {result.offset}-{last}/{result.status.size}"
        return 206, headers

    return await read_body(lambda: service.read_span(call, span), answer)


async def write(service: WorkerService, request: Request, path: c.UfsPath) -> Response:
    call = context(service, request, path)
    # Refused before the body is read; in a thread, since for a local path it looks at the disk.
    await run_in_threadpool(service.admit, call, "create")
    spool = await spool_upload(request, service)
    try:
        # The client's timeout counts from the end of its body: so does the write's deadline.
        written, created = await run_in_threadpool(
            service.write, call.renewed(), file_chunks(spool)
        )
    finally:
        spool.close()
    return json_response(service.describe(written), 201 if created else 200)


async def delete(
    service: WorkerService, request: Request, path: c.UfsPath, recursive: c.Recursive = False
) -> Response:
    deleted = await run_in_threadpool(service.delete, context(service, request, path), recursive)
    return json_response({"deleted": deleted})


async def rename(
    service: WorkerService, request: Request, src: c.UfsPath, dst: c.UfsPath
) -> Response:
    ends = (context(service, request, src), context(service, request, dst))
    moved = await run_in_threadpool(service.rename, *ends)
    return json_response(service.describe(moved))


async def mkdir(service: WorkerService, request: Request, path: c.UfsPath) -> Response:
    made = await run_in_threadpool(service.mkdir, context(service, request, path))
    return json_response(service.describe(made))


async def invalidate(
    service: WorkerService, request: Request, path: c.UfsPath, recursive: c.Recursive = False
) -> Response:
    call = context(service, request, path)
    dropped = await run_in_threadpool(service.invalidate, call, recursive)
    return json_response({"invalidated": dropped})


async def load(
    service: WorkerService,
    path: c.UfsPath,
    recursive: c.Recursive = False,
    include: c.Patterns = (),  # type: ignore[assignment]
    exclude: c.Patterns = (),  # type: ignore[assignment]
    metadata_only: c.MetadataOnly = False,
) -> Response:
    include, exclude = _patterns(include), _patterns(exclude)
    job = await run_in_threadpool(service.load, path, recursive, include, exclude, metadata_only)
    return json_response(job.to_dict(), 202)


async def load_progress(service: WorkerService, job_id: str) -> Response:
    return _job_answer(service.load_job(job_id), job_id)


async def load_cancel(service: WorkerService, job_id: str) -> Response:
    return _job_answer(service.cancel_load(job_id), job_id)


def _job_answer(job: Any, job_id: str) -> Response:
    if job is None:
        raise NotFound(f"no load job {job_id!r}")
    return json_response(job.to_dict())


def _json(
    model: Any,
    summary: str,
    *more: int,
    only: tuple[int, ...] | None = None,
    created: bool = False,
) -> dict[str, Any]:
    """The declaration of a route answering ``model`` as JSON (200, or 201 too when it can
    create); errors: a UFS call's and ``more`` (or ``only`` these)."""
    responses = c.errors(*(only if only is not None else (*_UFS, *more)))
    if created:
        responses[201] = {"model": model, "description": "Created"}
    return {"response_model": model, "summary": summary, "responses": responses}


def _patterns(values: Sequence[str]) -> list[str]:
    return [p.strip() for value in values for p in value.split(",") if p.strip()]


_UFS = c.UFS_ERRORS
_PATH: dict[str, params.QueryReader] = {"path": Query.required, "sync_interval": Query.given}
"""The query parameters of a call on a path (a listing's), read by the lean routes."""
_PINNED = {**_PATH, "version": Query.given, "serve_stale": Query.optional_boolean}
"""...and of a call on one file version (a status's; a read's with its offset and length)."""

SURFACE = Surface(
    name="rest-v1",
    prefix="/",
    routes=(
        Route("GET", "/healthz", healthz, {"response_model": c.Health, "summary": "Liveness"}),
        Route(
            "GET",
            "/readyz",
            readyz,
            {
                "response_model": c.Readiness,
                "summary": "Readiness",
                "responses": {503: {"model": c.Readiness, "description": "Not ready"}},
            },
        ),
        Route(
            "GET",
            "/metrics",
            metrics_text,
            {"response_class": c.PrometheusText, "summary": "Prometheus metrics"},
        ),
        Route(
            "GET",
            "/v1/stats",
            stats,
            {"response_model": dict[str, int], "summary": "Cache counters"},
        ),
        Route(
            "GET",
            "/v1/status",
            status,
            _json(c.FileStatus, "One status", 412),
            lean=params.Lean(_PINNED, request=True),
        ),
        Route(
            "GET",
            "/v1/list",
            listing,
            _json(c.ListingAnswer, "A directory's children"),
            lean=params.Lean(_PATH, request=True),
        ),
        Route(
            "GET",
            "/v1/read",
            read,
            {
                "response_class": c.OctetStream,
                "summary": "Bytes, read through the cache",
                "responses": c.READ_ANSWERS,
            },
            lean=params.Lean(
                {**_PINNED, "offset": Query.optional_natural, "length": Query.optional_natural},
                headers={"range": "header"},
                request=True,
            ),
        ),
        Route(
            "PUT",
            "/v1/write",
            write,
            _json(c.FileStatus, "Write through (body: the content)", 409, 413, created=True)
            | {"openapi_extra": c.WRITE_BODY},
        ),
        Route("DELETE", "/v1/delete", delete, _json(c.Deleted, "Delete", 409)),
        Route("POST", "/v1/rename", rename, _json(c.FileStatus, "Rename", 409)),
        Route("POST", "/v1/mkdir", mkdir, _json(c.FileStatus, "Make a directory", 409)),
        Route(
            "POST", "/v1/invalidate", invalidate, _json(c.Invalidated, "Drop metadata and pages")
        ),
        Route(
            "POST",
            "/v1/load",
            load,
            _json(c.LoadJobAnswer, "Prewarm metadata and data") | {"status_code": 202},
        ),
        Route(
            "GET",
            "/v1/load/{job_id}",
            load_progress,
            _json(c.LoadJobAnswer, "A load job's progress", only=(404,)),
        ),
        Route(
            "DELETE",
            "/v1/load/{job_id}",
            load_cancel,
            _json(c.LoadJobAnswer, "Cancel a load job", only=(404,)),
        ),
        *locate.ROUTES,
        *insight.ROUTES,
        *advice.ROUTES,
        *pins.ROUTES,
    ),
    render_error=error_response,
)
"""REST v1 owns every path no other surface claims (``prefix="/"``)."""
