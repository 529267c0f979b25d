"""The same-host fast path's REST routes (DESIGN.md, "The same-host fast path"), part of REST v1:

- ``GET /v1/locate?path=&version=&offset=&length=``: where the cached pages of a range of one
  pinned file version are (``PageLocations.to_dict``), the page indices of the range that are
  not cached (``missing``) and the status the range was resolved against;
- ``GET /v1/local``: the generation file a near-cache checks, the page size and the default
  sync interval.

Both are answered to any caller the token check lets through, like every route; handing out a
location gives no access by itself. A short-circuit read needs the client to open the page files
under their paths as the worker names them: the same host (or the same volume mounted at the
same path, as the Helm chart does for the executor, naming it in ``DORACACHE_SHORT_CIRCUIT_ROOT``)
and read permission (page files are 0644). A client that cannot open a page reads it over HTTP.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from worker.api import contract as c
from worker.api import params
from worker.api.jsonbody import json_response
from worker.api.params import Query
from worker.api.surface import Route, context
from worker.reader import Located
from worker.service import WorkerService


class Locations(BaseModel):
    """Where the cached pages of a range of one file version are."""

    file_id: str
    version: str
    page_size: int
    format: int = Field(description="The page file format; a client refuses one it does not know.")
    header_size: int
    block_size: int = Field(description="Bytes covered by each checksum of the page's table.")
    pages: list[tuple[int, str, int, int]] = Field(
        description="[page index, absolute path of its page file or pack, data bytes, offset of "
        "the page in that file (0 but in a pack)] of each cached page."
    )
    missing: list[int] = Field(description="Page indices of the range that are not cached.")
    status: c.FileStatus


class SameHost(BaseModel):
    """What a client on the worker's host needs for its fast path."""

    generations: str | None = Field(description="The generation counter file (None: none).")
    page_size: int
    sync_interval_ms: int


async def locate(
    service: WorkerService,
    request: Request,
    path: c.UfsPath,
    version: c.Version = None,
    offset: c.Offset = None,
    length: c.Length = None,
) -> Response:
    call = context(service, request, path, version=version)

    def work() -> dict[str, Any]:
        return answer(service, service.locate(call, offset or 0, length))

    return json_response(await run_in_threadpool(work))


def answer(service: WorkerService, located: Located) -> dict[str, Any]:
    """The JSON form of a :class:`Located`: the locations' fields, ``missing`` and ``status``."""
    data = pages_answer(located)
    data["status"] = service.describe(located.status)
    return data


def pages_answer(located: Located) -> dict[str, Any]:
    """The locations' fields of a :class:`Located` and ``missing`` (also WebHDFS's
    ``GETPAGELOCATIONS``)."""
    data = located.locations.to_dict()
    data["missing"] = list(located.missing)
    return data


async def local(service: WorkerService) -> Response:
    return json_response(service.same_host())


ROUTES = (
    Route(
        "GET",
        "/v1/locate",
        locate,
        {
            "response_model": Locations,
            "summary": "Page locations of a pinned file version (same-host reads)",
            "responses": c.errors(*c.UFS_ERRORS, 412, 416),
        },
        lean=params.Lean(
            {
                "path": Query.required,
                "version": Query.given,
                "offset": Query.optional_natural,
                "length": Query.optional_natural,
            },
            request=True,
        ),
    ),
    Route(
        "GET",
        "/v1/local",
        local,
        {"response_model": SameHost, "summary": "The same-host fast path's facts"},
    ),
)
