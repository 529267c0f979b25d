"""Bodies: of writes, spooled whole to disk as they arrive (``worker.spool``) before the UFS
sees a byte, so a client that stops mid-upload leaves nothing behind and holds at most
:data:`SPOOL_BATCH` of memory, and refused past the configured size; of small requests (a
form), read into memory but refused past :data:`SMALL_BODY_LIMIT` before anything in them is
checked; of reads, pulled from the page iterator in batches: :func:`read_body`, the one
streamer of every surface's reads."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO

import anyio
from anyio.lowlevel import checkpoint
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from worker import keys
from worker.api.params import header_number
from worker.common.errors import PayloadTooLarge
from worker.reader import ReadResult
from worker.service import WorkerService
from worker.spool import BodySpool

SPOOL_BATCH = 256 << 10
"""The most of a body held in memory before it is written to its spool file (in a thread, so
a slow disk does not stall the event loop): with the server's own read buffer (64 KB, past
which it stops reading the socket), what an upload stalled mid-body costs in memory."""
SMALL_BODY_LIMIT = 64 << 10
"""The most a body read whole into memory may hold: an OAuth2 token request is a few hundred
bytes, and its route reads it before it knows who is asking."""
COPY_CHUNK = 1 << 20
BATCH_BYTES = 4 << 20
RAMP_SLICE = 64 << 10
"""About how much of a read body one thread-pool hop pulls (several pages): a hop per page
was the largest cost of a warm read after the socket itself."""


async def spool_body(request: Request, spool: BodySpool, limit: int) -> IO[bytes]:
    """The request body in a file of ``spool``, written as it arrives and read back from its
    start, refused (PayloadTooLarge) past ``limit``. The caller closes it; on any error
    (the client stalls or goes away) it is closed here, and nothing of it remains."""
    _refuse_declared(request, limit)
    file = await run_in_threadpool(spool.open)
    try:
        pending, received = bytearray(), 0
        async for chunk in request.stream():
            received += len(chunk)
            if received > limit:
                raise PayloadTooLarge(f"body exceeds the limit of {limit} bytes")
            pending += chunk
            if len(pending) >= SPOOL_BATCH:
                await run_in_threadpool(file.write, pending)
                pending.clear()
        await run_in_threadpool(_finish, file, pending)
    except BaseException:
        file.close()
        raise
    return file


async def spool_upload(request: Request, service: WorkerService) -> IO[bytes]:
    """A write's body (:func:`spool_body`) in the service's spool, refused past
    ``dora.worker.max.write.size``: what every surface's write route reads its body with."""
    return await spool_body(request, service.spool, service.config.get(keys.MAX_WRITE_SIZE))


def _finish(file: IO[bytes], rest: bytearray) -> None:
    file.write(rest)
    file.flush()
    file.seek(0)


async def small_body(request: Request, limit: int = SMALL_BODY_LIMIT) -> bytes:
    """The request body read into memory, refused (PayloadTooLarge) as soon as it is declared
    or found to be larger than ``limit``."""
    _refuse_declared(request, limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise PayloadTooLarge(f"body exceeds the limit of {limit} bytes")
    return bytes(body)


def _refuse_declared(request: Request, limit: int) -> None:
    declared = declared_length(request)
    if declared is not None and declared > limit:
        raise PayloadTooLarge(f"body of {declared} bytes exceeds the limit of {limit} bytes")


def declared_length(request: Request) -> int | None:
    """The request's ``Content-Length``, None without one; InvalidRequest naming the header
    when it is not a bounded integer."""
    text = request.headers.get("content-length")
    return None if text is None else header_number("Content-Length", text, text)


def file_chunks(spool: IO[bytes]) -> Iterator[bytes]:
    """A spooled file's bytes from its current position, in chunks."""
    while chunk := spool.read(COPY_CHUNK):
        yield chunk


@dataclass
class ChunkBatch:
    """Chunks pulled in one hop; ``done`` once the iterator is exhausted, ``error`` an error
    it raised after at least one chunk (raised once the chunks before it are sent)."""

    chunks: list[bytes] = field(default_factory=list)
    done: bool = False
    error: Exception | None = None


def pull(chunks: Iterator[bytes], budget: int = BATCH_BYTES) -> ChunkBatch:
    """The next chunks of ``chunks``, about ``budget`` bytes; blocking (run it in a thread).
    Raises what the iterator raises before its first chunk."""
    batch, size = ChunkBatch(), 0
    try:
        for chunk in chunks:
            batch.chunks.append(chunk)
            size += len(chunk)
            if size >= budget:
                return batch
    except Exception as exc:
        if not batch.chunks:
            raise
        batch.error = exc
    batch.done = True
    return batch


async def read_body(
    start: Callable[[], ReadResult],
    answer: Callable[[ReadResult], tuple[int, dict[str, str]]],
    *,
    ramp: bool = False,
) -> Response:
    """The answer to a read: ``start()`` (``WorkerService.read_span``) and its first batch
    in one thread-pool hop, so that its errors are answered with their status; then
    ``answer(result)``'s status and headers (Content-Length is added) over a
    :class:`PagedBody`, ramped if ``ramp``."""
    pace = Pace.ramped() if ramp else Pace()

    def opened() -> tuple[ReadResult, ChunkBatch]:
        result = start()
        return result, pull(result.chunks, pace.budget)

    result, first = await run_in_threadpool(opened)
    status, headers = answer(result)
    headers["Content-Length"] = str(result.length)
    return PagedBody(first, result.chunks, status, headers, pace)


@dataclass(frozen=True)
class Pace:
    """How a :class:`PagedBody` sends: ``budget`` bytes pulled a thread-pool hop, chunks sent
    in ``slice`` slices (None: whole). A ramped pace (:meth:`ramped`) starts at one chunk a
    hop in RAMP_SLICE slices, so a client that reads what it needs and hangs up (WebHDFS
    ``OPEN``: a footer, a row group) is sent little beyond it; both double with every batch
    the client takes, so a client that reads on is soon sent as a whole read is, a batch of
    BATCH_BYTES a hop in whole chunks (a hop and a send per 64 KiB cost a 256 MB read 1.7x the
    worker's CPU of ``/v1/read``: ``python -m bench.experiments.open_bench``)."""

    budget: int = BATCH_BYTES
    slice: int | None = None

    @classmethod
    def ramped(cls) -> Pace:
        return cls(budget=1, slice=RAMP_SLICE)

    def after(self, batch: ChunkBatch) -> Pace:
        """The pace for the batch after ``batch``."""
        if self.slice is None:
            return self
        sent = sum(len(chunk) for chunk in batch.chunks)
        budget = min(BATCH_BYTES, max(self.budget, sent) * 2)
        grown = self.slice * 2
        whole = budget >= BATCH_BYTES and all(len(c) <= grown for c in batch.chunks)
        return Pace(budget, None if whole else grown)


class PagedBody(Response):
    """A read's answer: ``first`` (pulled in the hop that resolved the read) and the rest of
    ``chunks`` pulled a :func:`pull` batch per thread-pool hop, not a hop per chunk as
    StreamingResponse does, the next batch while the last is sent; a read that fits one batch
    needs no further hop. ``pace`` sets the batches' size and the slices chunks go out in: a
    slice is what the server's flow control holds back beyond what the socket took. An error of the
    iterator cuts the body short of its Content-Length (the connection closes), so a client
    sees an error, never mixed bytes; pulling stops when the client goes away, and the
    iterator is then closed (which cancels its read-ahead)."""

    media_type = "application/octet-stream"

    def __init__(
        self,
        first: ChunkBatch,
        chunks: Iterator[bytes],
        status_code: int,
        headers: dict[str, str],
        pace: Pace | None = None,
    ) -> None:
        self.status_code = status_code
        self.background = None
        self.init_headers(headers)
        self._first = first
        self._chunks = chunks
        self._pace = pace or Pace()
        self._error: Exception | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers})  # fmt: skip
        if self._first.done and self._first.error is None:
            await self._send(send, self._first, last=True, step=self._pace.slice)
            return
        async with anyio.create_task_group() as group:
            group.start_soon(self._stream, send, group.cancel_scope)
            await _until_disconnect(receive)
            group.cancel_scope.cancel()
        if self._error is not None:
            raise self._error  # out here, not wrapped in the task group's ExceptionGroup

    async def _stream(self, send: Send, scope: anyio.CancelScope) -> None:
        batch = self._first
        pending: asyncio.Future[ChunkBatch] | None = None
        try:
            while not batch.done:
                sending, self._pace = self._pace, self._pace.after(batch)
                # The next batch is read while this one goes out: disk and socket overlap.
                pull_next = run_in_threadpool(pull, self._chunks, self._pace.budget)
                pending = asyncio.ensure_future(pull_next)
                await self._send(send, batch, last=False, step=sending.slice)
                batch = await pending
            await self._send(send, batch, last=batch.error is None, step=self._pace.slice)
            self._error = batch.error
        except Exception as exc:  # noqa: BLE001 — raised by __call__, after the task group
            self._error = exc
        finally:
            if pending is not None and not pending.done():
                # The client went away: the pull in flight ends by itself, unheard, and the
                # iterator is closed after it (a generator cannot be closed while it runs).
                pending.add_done_callback(self._close_after)
            else:
                self._close()
        scope.cancel()

    def _close_after(self, pulled: asyncio.Future[ChunkBatch]) -> None:
        _forget(pulled)
        self._close()

    def _close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()

    async def _send(self, send: Send, batch: ChunkBatch, last: bool, step: int | None) -> None:
        for i, chunk in enumerate(batch.chunks):
            more = not last or i < len(batch.chunks) - 1
            if step is None or len(chunk) <= step:
                await send({"type": "http.response.body", "body": chunk, "more_body": more})
                continue
            for at in range(0, len(chunk), step):
                piece = chunk[at : at + step]
                await send({"type": "http.response.body", "body": piece,
                            "more_body": more or at + step < len(chunk)})  # fmt: skip
                # Lets the loop see a hang-up between slices, which cancels this stream.
                await checkpoint()
        if last and not batch.chunks:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def _forget(future: asyncio.Future[ChunkBatch]) -> None:
    if not future.cancelled():
        future.exception()  # retrieved, so asyncio does not log it as never retrieved


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
