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

from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from anyio.lowlevel import checkpoint
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ufs.errors import UfsAlreadyExists, UfsNotFound
from ufs.status import UfsStatus
from worker import keys
from worker.api.body import file_chunks, spool_body
from worker.api.webhdfs_errors import json_answer
from worker.api.webhdfs_query import Query
from worker.errors import IsADirectory
from worker.freshness import Freshness
from worker.ranges import Window
from worker.service import WorkerService

SEND_SLICE = 64 << 10


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
    uri: str,
    owner: Callable[[str], str | None] = lambda uri: None,
) -> Response:
    """``OPEN``: the redirect to the version-pinned data URL — on the worker ``owner`` names
    (``host:port``) when it names one, else here — or the data from ``offset``."""
    version = query.text("version")
    fresh = service.freshness(uri, query.sync_interval(), query.serve_stale())
    span = OpenSpan(query.long("offset", 0), query.optional_long("length"))
    if not query.boolean("data"):
        status = await run_in_threadpool(service.status, uri, fresh, version)
        if status.is_dir:
            raise IsADirectory(f"Path is not a file: {request.url.path}")
        target = await run_in_threadpool(owner, status.uri)
        extra = {"data": "true", "version": status.version}
        return _redirect(request, query, extra, target)
    result = await run_in_threadpool(
        lambda: service.read_span(uri, span, fresh, version, ramp=True)
    )
    return StreamingResponse(
        _until_disconnect(result.chunks),
        200,
        {"Content-Length": str(result.length)},
        media_type="application/octet-stream",
    )


async def create_file(
    service: WorkerService, request: Request, query: Query, uri: str, path: str
) -> Response:
    """``CREATE``: the redirect to the data URL, then the body written through. The path is
    checked against the mount roots before the redirect, so a client is never sent on to
    upload a body that would then be refused."""
    uri = await run_in_threadpool(service.roots.check, uri)
    # Re-checked against the UFS: a create decides on the truth, not on a cached entry.
    fresh = service.freshness(uri, 0)
    if not query.boolean("overwrite") and (
        await run_in_threadpool(status_or_none, service, uri, fresh) is not None
    ):
        raise UfsAlreadyExists(f"{path} already exists and overwrite is false")
    if not query.boolean("data"):
        return _redirect(request, query, {"data": "true"})
    await _body_to(service.write, service, request, uri)
    location = f"webhdfs://{request.url.netloc}{quote(path)}"
    return Response(b"", 201, {"Location": location})


async def append_file(service: WorkerService, request: Request, query: Query, uri: str) -> Response:
    """``APPEND``: the redirect to the data URL once the file is known to be one, then the
    body appended through (:meth:`WorkerService.append`)."""
    if not query.boolean("data"):
        # Re-checked against the UFS, as for CREATE: the append itself looks again anyway.
        status = await run_in_threadpool(service.status, uri, service.freshness(uri, 0))
        if status.is_dir:
            raise IsADirectory(f"Path is not a file: {request.url.path}")
        return _redirect(request, query, {"data": "true"})
    await _body_to(service.append, service, request, uri)
    return Response(b"", 200)


async def _body_to(
    write: Callable[[str, Iterable[bytes]], object],
    service: WorkerService,
    request: Request,
    uri: str,
) -> None:
    """The request's body, spooled (up to ``dora.worker.http.max.write.size``), then passed to
    ``write`` in a thread."""
    spool = await spool_body(request, service.config.get(keys.MAX_WRITE_SIZE))
    try:
        await run_in_threadpool(write, uri, file_chunks(spool))
    finally:
        spool.close()


def status_or_none(service: WorkerService, uri: str, fresh: Freshness) -> UfsStatus | None:
    """The status of ``uri`` as fresh as ``fresh`` asks, or None if nothing is there."""
    try:
        return service.status(uri, fresh)
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


def _redirect(
    request: Request, query: Query, extra: dict[str, str], netloc: str | None = None
) -> Response:
    """307 to the data step's URL (at ``netloc`` if given), or the location as JSON for
    noredirect."""
    location = data_location(request, extra, netloc)
    if query.boolean("noredirect"):
        return json_answer({"Location": location})
    return Response(b"", 307, {"Location": location})


async def _until_disconnect(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """``chunks`` pulled in the thread pool; closed when the response ends for any reason —
    also when the client hangs up mid-stream and the response task is cancelled."""
    try:
        while (chunk := await run_in_threadpool(next, chunks, None)) is not None:
            # In slices: the server's flow control then holds back at most one slice beyond
            # what the socket took, not a whole page the client may never read.
            for start in range(0, len(chunk), SEND_SLICE):
                yield chunk[start : start + SEND_SLICE]
                # Lets the loop see a hang-up between slices, which cancels this stream.
                await checkpoint()
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
