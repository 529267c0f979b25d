"""WebHDFS ``OPEN`` and ``CREATE``: the two-step calls, as a NameNode and DataNode make them.

A first call without ``data=true`` is answered ``307`` to the same URL with ``data=true`` (and,
for ``OPEN``, ``version=`` of the status it just resolved; ``noredirect=true`` gets the
location as JSON instead). The Hadoop client then reads from that location at every offset it
seeks to, so one opened stream reads one version of the file, and its open does not start a
stream at offset 0 that the client would abandon to seek to the footer.

The data call streams from ``offset`` to the end (the client sends no ``length`` and hangs up
when it has what it needs): the service fills only pages the client consumes plus a read-ahead
that starts at one page, and the body iterator is closed as soon as the client disconnects, which
cancels the fills not yet started. ``CREATE`` spools the body (up to
``dora.worker.http.max.write.size``) and writes it through the service.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import IO

from anyio.lowlevel import checkpoint
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ufs.errors import UfsAlreadyExists, UfsNotFound
from ufs.status import UfsStatus
from worker.api.errors import PayloadTooLarge
from worker.api.webhdfs_query import Query
from worker.pathconf import PathSettings
from worker.service import WorkerService

SPOOL_IN_MEMORY = 16 << 20
COPY_CHUNK = 1 << 20
SEND_SLICE = 64 << 10


class DataOps:
    """OPEN and CREATE over a service. Thread-safe: it holds only the service and a limit."""

    def __init__(self, service: WorkerService, max_write_size: int) -> None:
        self.service = service
        self.max_write_size = max_write_size

    async def open(
        self, request: Request, query: Query, uri: str, settings: PathSettings
    ) -> Response:
        version = query.text("version")
        offset = query.long("offset", 0)
        length = None if query.text("length") is None else query.long("length", 0)
        if not query.boolean("data"):
            status = await run_in_threadpool(
                self.service.status, uri, settings.sync_interval, version
            )
            if status.is_dir:
                raise IsADirectoryError(f"Path is not a file: {request.url.path}")
            return _redirect(request, query, {"data": "true", "version": status.version})

        def resolve() -> tuple[int, Iterator[bytes]]:
            status = self.service.status(uri, settings.sync_interval, version)
            chunks = self.service.stream(status, offset, length, cache=settings.cache)
            end = status.size if length is None else min(status.size, offset + length)
            # The first chunk is read before the answer starts, so its errors get their code.
            first = next(chunks, b"")
            return end - offset, _prepend(first, chunks)

        size, chunks = await run_in_threadpool(resolve)
        return StreamingResponse(
            _until_disconnect(chunks),
            200,
            {"Content-Length": str(size)},
            media_type="application/octet-stream",
        )

    async def create(self, request: Request, query: Query, uri: str, path: str) -> Response:
        # Re-checked against the UFS: a create decides on the truth, not on a cached entry.
        fresh = 0
        if not query.boolean("overwrite") and (
            await run_in_threadpool(status_or_none, self.service, uri, fresh) is not None
        ):
            raise UfsAlreadyExists(f"{path} already exists and overwrite is false")
        if not query.boolean("data"):
            return _redirect(request, query, {"data": "true"})
        spool = await self._spool(request)
        try:
            await run_in_threadpool(self.service.write, uri, _file_chunks(spool))
        finally:
            spool.close()
        location = f"webhdfs://{request.url.netloc}{path}"
        return Response(b"", 201, {"Location": location})

    async def _spool(self, request: Request) -> IO[bytes]:
        """The body in a spooled temporary file (memory, then disk), refused past the limit."""
        limit = self.max_write_size
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


def status_or_none(service: WorkerService, uri: str, interval: int | None) -> UfsStatus | None:
    """The status of ``uri`` under sync interval ``interval``, or None if nothing is there."""
    try:
        return service.status(uri, interval)
    except UfsNotFound:
        return None


def _redirect(request: Request, query: Query, extra: dict[str, str]) -> Response:
    """307 to this URL with ``extra`` parameters, or the location as JSON for noredirect."""
    params = {k: v for k, v in request.query_params.items() if k.lower() not in extra}
    location = str(request.url.replace_query_params(**params, **extra))
    if query.boolean("noredirect"):
        return Response(json.dumps({"Location": location}).encode(), 200)
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
        _close(chunks)


def _prepend(first: bytes, chunks: Iterator[bytes]) -> Iterator[bytes]:
    try:
        if first:
            yield first
        yield from chunks
    finally:
        _close(chunks)


def _close(chunks: Iterator[bytes]) -> None:
    close = getattr(chunks, "close", None)
    if close is not None:
        close()


def _file_chunks(spool: IO[bytes]) -> Iterator[bytes]:
    while chunk := spool.read(COPY_CHUNK):
        yield chunk
