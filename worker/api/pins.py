"""The cache-steering routes of REST v1 (docs/cache-policy.md, "Cache policy: pins and free"):

- ``POST /v1/pin?path=&recursive=``: pin a file (with ``recursive``, everything under a
  prefix): its pages are never evicted, within ``dora.worker.page.store.pin.max`` (507
  PinLimitExceeded beyond);
- ``POST /v1/unpin?path=&recursive=``: drop the pin, the pages become evictable again;
- ``POST /v1/free?path=&recursive=``: drop a path's cached pages and metadata, the UFS
  untouched (Alluxio's ``free``): the invalidation of ``/v1/invalidate`` under its Alluxio
  name, the same operation.

A status shows whether its file is pinned (``pinned``).
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from worker.api import contract as c
from worker.api.jsonbody import json_response
from worker.api.surface import Route, context
from worker.service import WorkerService


class Pinned(BaseModel):
    pinned: str = Field(description="The URI pinned.")
    bytes: int = Field(description="Bytes the pin added against the bound: its files' sizes.")


class Unpinned(BaseModel):
    unpinned: int = Field(description="Pins dropped.")


async def pin(
    service: WorkerService, request: Request, path: c.UfsPath, recursive: c.Recursive = False
) -> Response:
    call = context(service, request, path)
    added = await run_in_threadpool(service.pin, call, recursive)
    return json_response({"pinned": call.uri, "bytes": added})


async def unpin(
    service: WorkerService, request: Request, path: c.UfsPath, recursive: c.Recursive = False
) -> Response:
    call = context(service, request, path)
    return json_response({"unpinned": await run_in_threadpool(service.unpin, call, recursive)})


async def free(
    service: WorkerService, request: Request, path: c.UfsPath, recursive: c.Recursive = False
) -> Response:
    call = context(service, request, path)
    return json_response(
        {"invalidated": await run_in_threadpool(service.invalidate, call, recursive)}
    )


def _declared(model: type[BaseModel], summary: str, *more: int) -> dict[str, object]:
    return {
        "response_model": model,
        "summary": summary,
        "responses": c.errors(*c.UFS_ERRORS, *more),
    }


ROUTES = (
    Route("POST", "/v1/pin", pin, _declared(Pinned, "Pin a file or prefix", 507)),
    Route("POST", "/v1/unpin", unpin, _declared(Unpinned, "Unpin a file or prefix")),
    Route(
        "POST",
        "/v1/free",
        free,
        _declared(c.Invalidated, "Free cached pages and metadata; the UFS is untouched"),
    ),
)
