"""Answers to work that may outlast a client's read timeout (CompleteMultipartUpload writes
the whole object through), as S3 gives them: ``200`` and the XML declaration at once, a space
every :data:`INTERVAL_S` while the work runs, then the result's element, or an ``<Error>``
element if the work failed (S3's clients read an error from a 200 answer of these operations).
Errors found before the work starts are answered with their own status, as usual."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response, StreamingResponse

from worker.api.s3 import xmlbody
from worker.api.s3.errors import S3Error, request_id, translated

log = logging.getLogger(__name__)
T = TypeVar("T")
INTERVAL_S = 10.0
"""How often a space goes out while the work runs: well inside any S3 client's read timeout
(botocore's is 60 s)."""


def answered_while_working(
    work: Callable[[], T], render: Callable[[T], str], resource: str
) -> Response:
    """The answer to ``work()`` (run in a thread) rendered by ``render`` as the root element;
    the answer starts at once and keeps the connection busy until the work ends."""

    async def body() -> AsyncIterator[bytes]:
        yield xmlbody.HEAD.encode()
        running = asyncio.ensure_future(run_in_threadpool(work))
        while not (await asyncio.wait({running}, timeout=INTERVAL_S))[0]:
            yield b" "
        try:
            result = running.result()
        except Exception as exc:  # noqa: BLE001 — the status is sent: the error goes in the body
            error = _error(exc)
            yield xmlbody.error_element(error.code, error.message, resource, request_id()).encode()
            return
        yield render(result).encode()

    return StreamingResponse(body(), 200, media_type=xmlbody.MEDIA_TYPE)


def _error(exc: Exception) -> S3Error:
    try:
        return translated(exc)
    except Exception:  # a bug: logged with its traceback, answered as S3 does
        log.exception("unexpected error completing an S3 request", exc_info=exc)
        return S3Error("InternalError", 500, f"internal error: {type(exc).__name__}")
