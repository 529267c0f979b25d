"""Telling a busy worker from a vanished one while waiting for its answer.

A worker that took a request but has not begun to answer may be busy (a cold read waits on the
UFS) or gone (its host dropped off, its process stopped: the kernel of a stopped process still
takes connections and requests). Waiting out the read timeout (a minute) to tell them apart
would stall a long-lived client, whose kept connection leads straight to the vanished host, for
that long. So once no answer has begun for :data:`FIRST_PROBE_S`, and then every ``probe_s``
(the connect timeout), the waiter asks the worker's ``/healthz`` on a fresh connection: any
answer within ``probe_s`` means busy, keep waiting; none means :class:`Unresponsive`, and the
client fails over at once (never asking that worker again: :mod:`worker.client.http`). The
first probe goes out early, not after a whole ``probe_s``, so that a vanished worker is known
in about one connect timeout (the probe's own connect); it costs one ``/healthz`` per request
whose answer takes longer to begin than that, which only a cold read waiting on the UFS does.
An ``https://`` worker is probed over TLS with the client's own context (its CA, and its
certificate where the worker requires one): a stopped worker's kernel takes the connection but
nothing completes the handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import ssl
from collections.abc import Awaitable
from typing import Any, TypeVar

import httpx

T = TypeVar("T")

# How long an answer may take to begin before the worker's liveness is probed the first time.
FIRST_PROBE_S = 0.25


class Unresponsive(httpx.ReadTimeout):
    """The worker took the request, has not begun to answer, and answered no liveness probe
    either: it is gone or stopped, not busy."""

    def __init__(self, netloc: str, probe_s: float) -> None:
        super().__init__(
            f"{netloc} took the request but answers nothing, not even /healthz within {probe_s}s"
        )


def alive(netloc: str, probe_s: float, context: ssl.SSLContext | None = None) -> bool:
    """Whether the worker at ``host:port`` answers ``/healthz`` (anything) within ``probe_s``
    (each step: the connect, the TLS handshake with ``context``, the answer)."""
    probe = (
        http.client.HTTPConnection(netloc, timeout=probe_s)
        if context is None
        else http.client.HTTPSConnection(netloc, timeout=probe_s, context=context)
    )
    try:
        probe.request("GET", "/healthz")
        probe.getresponse().read()
    except (OSError, http.client.HTTPException):
        return False
    finally:
        probe.close()
    return True


async def alive_async(netloc: str, probe_s: float, context: ssl.SSLContext | None = None) -> bool:
    """:func:`alive` on the event loop (the whole probe within ``probe_s``)."""
    host, _, port = netloc.rpartition(":")
    writer = None
    try:
        async with asyncio.timeout(probe_s):
            reader, writer = await asyncio.open_connection(host.strip("[]"), int(port), ssl=context)
            writer.write(
                f"GET /healthz HTTP/1.1\r\nHost: {netloc}\r\nConnection: close\r\n\r\n".encode()
            )
            return (await reader.readline()).startswith(b"HTTP/")
    except (OSError, TimeoutError, ValueError):
        return False
    finally:
        if writer is not None:
            writer.close()


async def answer_or_unresponsive(
    pending: Awaitable[T], netloc: str, probe_s: float, context: ssl.SSLContext | None = None
) -> T:
    """``pending``'s result (an answer's headers), probing the worker after
    :data:`FIRST_PROBE_S` and then every ``probe_s`` while it is not there (over TLS with
    ``context``; the answer is awaited during each probe too); cancels ``pending`` and raises
    :class:`Unresponsive` when a probe goes unanswered."""
    task = asyncio.ensure_future(pending)
    wait = min(FIRST_PROBE_S, probe_s)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=wait)
            if done:
                return task.result()
            probe = asyncio.ensure_future(alive_async(netloc, probe_s, context))
            either: set[asyncio.Task[Any]] = {task, probe}
            done, _ = await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if task in done:
                probe.cancel()
                return task.result()
            if not probe.result():
                raise Unresponsive(netloc, probe_s)
            wait = probe_s
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                await task
