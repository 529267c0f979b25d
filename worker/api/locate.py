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

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from worker.api import params
from worker.api.surface import Route
from worker.service import Located, WorkerService


def _json(data: Any) -> Response:
    return Response(json.dumps(data), 200, media_type="application/json")


async def locate(service: WorkerService, request: Request) -> Response:
    q = request.query_params
    path, version = params.required(q, "path"), q.get("version") or None
    offset = params.optional_int(q, "offset") or 0
    length = params.optional_int(q, "length")

    def work() -> dict[str, Any]:
        return answer(service, service.locate(path, version, offset, length))

    return _json(await run_in_threadpool(work))


def answer(service: WorkerService, located: Located) -> dict[str, Any]:
    """The JSON form of a :class:`Located`: the locations' fields, ``missing`` and ``status``."""
    data = located.locations.to_dict()
    data["missing"] = list(located.missing)
    data["status"] = service.describe(located.status)
    return data


async def local(service: WorkerService, request: Request) -> Response:
    return _json(service.same_host())


ROUTES = (
    Route("GET", "/v1/locate", locate),
    Route("GET", "/v1/local", local),
)
