"""WebHDFS ``OPEN``, ``CREATE`` and ``APPEND``: the two-step calls, as a NameNode and DataNode
make them.

A first call without ``data=true`` is answered ``307`` to the same URL with ``data=true`` (and,
for ``OPEN``, ``version=`` of the status it just resolved; ``noredirect=true`` gets the
location as JSON instead). The Hadoop client then reads from that location at every offset it
seeks to, so one opened stream reads one version of the file, and its open does not start a
stream at offset 0 that the client would abandon to seek to the footer.

The data call streams from ``offset`` to the end (the client sends no ``length`` and hangs up
when it has what it needs) through :meth:`WorkerService.read_span` with ``ramp``: only pages the
client consumes are filled, plus a read-ahead that starts at one page, and the body is closed as
soon as the client disconnects, which cancels the fills not yet started. ``CREATE`` and
``APPEND`` spool the body (up to ``dora.worker.http.max.write.size``) and write it through the
service. Every location handed out is percent-encoded (:func:`data_location`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ufs.errors import UfsAlreadyExists, UfsNotFound
from ufs.status import UfsStatus
from worker.api.body import file_chunks, read_body, spool_upload
from worker.api.params import Query
from worker.api.surface import context
from worker.api.webhdfs_errors import json_answer
from worker.common.errors import IsADirectory
from worker.common.ranges import Window
from worker.request import RequestContext
from worker.service import WorkerService


@dataclass(frozen=True)
class OpenSpan:
    """``OPEN``'s range: as a :class:`Window`, except that an offset at the very end of the
    file reads nothing rather than failing (a client may open at its end)."""

    offset: int
    length: int | None

    def resolve(self, size: int) -> tuple[int, int]:
        if self.offset == size:
            return size, 0
        return Window(self.offset, self.length).resolve(size)


async def open_file(
    service: WorkerService,
    request: Request,
    query: Query,
    call: RequestContext,
    owner: Callable[[str], str | None] = lambda uri: None,
) -> Response:
    """``OPEN`` of ``call``: the redirect to the version-pinned data URL — on the worker
    ``owner`` names (``host:port``) when it names one, else here — or the data from
    ``offset``."""
    span = OpenSpan(query.natural("offset", 0), query.optional_natural("length"))
    if not query.boolean("data"):
        status = await run_in_threadpool(service.status, call)
        if status.is_dir:
            raise IsADirectory(f"Path is not a file: {request.url.path}")
        target = await run_in_threadpool(owner, status.uri)
        extra = {"data": "true", "version": status.version}
        return redirect(request, query, extra, target)
    # Ramped: what the client never reads is never filled, nor sent far beyond what it took.
    return await read_body(
        lambda: service.read_span(call, span, ramp=True), lambda result: (200, {}), ramp=True
    )


async def create_file(
    service: WorkerService, request: Request, query: Query, uri: str, path: str
) -> Response:
    """``CREATE``: the redirect to the data URL, then the body written through. The path is
    checked against the mount roots before the redirect, so a client is never sent on to
    upload a body that would then be refused."""
    # Re-checked against the UFS: a create decides on the truth, not on a cached entry.
    call = context(service, request, uri, 0)
    await run_in_threadpool(service.admit, call, "create")
    if not query.boolean("overwrite") and (
        await run_in_threadpool(status_or_none, service, call) is not None
    ):
        raise UfsAlreadyExists(f"{path} already exists and overwrite is false")
    if not query.boolean("data"):
        return redirect(request, query, {"data": "true"})
    await _body_to(service.write, service, request, call)
    location = f"webhdfs://{request.url.netloc}{quote(path)}"
    return Response(b"", 201, {"Location": location})


async def append_file(service: WorkerService, request: Request, query: Query, uri: str) -> Response:
    """``APPEND``: the redirect to the data URL once the file is known to be one, then the
    body appended through (:meth:`WorkerService.append`)."""
    # Re-checked against the UFS, as for CREATE: the append itself looks again anyway.
    call = context(service, request, uri, 0)
    if not query.boolean("data"):
        status = await run_in_threadpool(service.status, call)
        if status.is_dir:
            raise IsADirectory(f"Path is not a file: {request.url.path}")
        return redirect(request, query, {"data": "true"})
    await _body_to(service.append, service, request, call)
    return Response(b"", 200)


async def _body_to(
    write: Callable[[RequestContext, Iterable[bytes]], object],
    service: WorkerService,
    request: Request,
    call: RequestContext,
) -> None:
    """The request's body, spooled (up to ``dora.worker.http.max.write.size``), then passed to
    ``write`` in a thread, under a deadline counted from the end of the body (as the client's
    timeout is)."""
    spool = await spool_upload(request, service)
    try:
        await run_in_threadpool(write, call.renewed(), file_chunks(spool))
    finally:
        spool.close()


def status_or_none(service: WorkerService, call: RequestContext) -> UfsStatus | None:
    """The status ``call`` asks for, or None if nothing is there."""
    try:
        return service.status(call)
    except UfsNotFound:
        return None


def data_location(request: Request, extra: dict[str, str], netloc: str | None = None) -> str:
    """The URL of the data step: this request's URL (at ``netloc`` if given: the file's owner)
    with ``extra`` parameters (replacing any of the same name, whatever their case).
    Percent-encoded whole, path and query: a client follows a ``Location`` as it is (Java's
    does), and a header carries no raw space or non-ASCII character."""
    params = [(k, v) for k, v in request.query_params.multi_items() if k.lower() not in extra]
    query = urlencode([*params, *extra.items()], quote_via=quote)
    base = f"{request.url.scheme}://{netloc or request.url.netloc}"
    return f"{base}{quote(request.scope['path'])}?{query}"


def redirect(
    request: Request, query: Query, extra: dict[str, str], netloc: str | None = None
) -> Response:
    """307 to the data step's URL (at ``netloc`` if given), or the location as JSON for
    noredirect."""
    location = data_location(request, extra, netloc)
    if query.boolean("noredirect"):
        return json_answer({"Location": location})
    return Response(b"", 307, {"Location": location})
