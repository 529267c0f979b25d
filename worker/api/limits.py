"""Limits on request bodies that the app enforces, where a refusal can be answered in the shape
of the surface that owns the path (the head deadlines are the protocol's: ``worker.httpproto``):

- at most ``dora.worker.http.max.concurrent.uploads`` requests with a body at once; one more is
  answered 503 ``WorkerBusy`` with ``Retry-After`` before a byte of its body is read (each
  upload is spooled to disk as it arrives, ``worker.api.body.spool_body``, and holds at most
  ``worker.api.body.SPOOL_BATCH`` of memory);
- while a route reads a body, ``dora.worker.http.body.idle.timeout`` without a byte from the
  client ends it, and so does a body slower than ``dora.worker.http.body.min.rate`` (Apache
  mod_reqtimeout's ``MinRate``: the time the worker waits for a body is at most
  ``dora.worker.http.body.min.rate.grace`` plus a second per ``min.rate`` bytes received, so a
  client dripping a byte every few seconds, which the idle deadline never cuts, is cut once
  the grace is spent): the read raises RequestTimeout, answered 408 with ``Connection: close``,
  and the route writes nothing (its body was not whole).

Both show in metrics: ``dora_http_uploads_in_flight``, ``dora_http_uploads_refused_total`` and
``dora_http_idle_timeouts_total{phase}`` (``body`` and ``body_rate``; the protocol adds ``head``
and ``linger``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.api.keys import BODY_IDLE_TIMEOUT, BODY_MIN_RATE, MAX_UPLOADS
from worker.common.errors import RequestTimeout, WorkerBusy

RETRY_AFTER_S = 1
"""What a refused upload is told to wait: uploads in flight end within seconds or time out."""

Refuse = Callable[[Scope, Exception], ASGIApp]
"""The answer to a request refused with an exception, in the shape of the surface of its path."""


@dataclass(frozen=True)
class BodyPace:
    """How slow a body may come: ``idle`` seconds without a byte at most, and, with
    ``min_rate`` (bytes a second, 0 for no such rule), at most ``grace`` seconds of waiting
    plus a second per ``min_rate`` bytes received."""

    idle: float
    min_rate: int = 0
    grace: float = 0.0


class UploadGauge:
    """Counts uploads in flight against a cap. Used on the event loop only."""

    def __init__(self, cap: int, changed: Callable[[int], None]) -> None:
        self.cap = cap
        self.in_flight = 0
        self._changed = changed

    def enter(self) -> bool:
        """Take a place; False when all ``cap`` are taken."""
        if self.in_flight >= self.cap:
            return False
        self.in_flight += 1
        self._changed(self.in_flight)
        return True

    def leave(self) -> None:
        self.in_flight -= 1
        self._changed(self.in_flight)


class BodyLimits:
    """Pure ASGI middleware enforcing the upload cap and the body idle deadline. Requests
    without a body pass untouched. Stateful only through its :class:`UploadGauge`, which
    lives on the event loop, as the middleware does."""

    def __init__(
        self,
        app: ASGIApp,
        uploads: UploadGauge,
        pace: BodyPace,
        refuse: Refuse,
        timed_out: Callable[[str], None],
    ) -> None:
        self.app = app
        self._uploads = uploads
        self._pace = pace
        self._refuse = refuse
        self._timed_out = timed_out

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not has_body(scope):
            await self.app(scope, receive, send)
            return
        if not self._uploads.enter():
            busy = WorkerBusy(
                f"{self._uploads.cap} uploads are in flight ({MAX_UPLOADS.name}); try again later",
                retry_after=RETRY_AFTER_S,
            )
            # Its body is left unread: the protocol reads and drops it for a while (linger).
            await self._refuse(scope, busy)(scope, receive, send)
            return
        try:
            await self.app(scope, _Paced(receive, self._pace, self._timed_out), send)
        finally:
            self._uploads.leave()


class _Paced:
    """``receive`` that raises RequestTimeout when the client sends nothing for the idle
    deadline, or has used up the time its bytes allow (:class:`BodyPace`), while the body is
    still coming; once it is complete, ``receive`` as it is (an answer then waits for the
    client to go away with no deadline). Only the time spent waiting for the client counts:
    a route busy between two reads does not spend the client's allowance. One request's, on
    the event loop."""

    def __init__(self, receive: Receive, pace: BodyPace, timed_out: Callable[[str], None]):
        self._receive = receive
        self._pace = pace
        self._timed_out = timed_out
        self._complete = False
        self._received = 0
        self._waited = 0.0

    async def __call__(self) -> Message:
        if self._complete:
            return await self._receive()
        pace = self._pace
        allowed = self._allowed()
        wait = pace.idle if allowed is None else min(pace.idle, max(allowed - self._waited, 0.0))
        started = time.monotonic()
        try:
            async with asyncio.timeout(wait):
                message = await self._receive()
        except TimeoutError:
            raise self._cut(wait < pace.idle) from None
        finally:
            self._waited += time.monotonic() - started
        if message["type"] == "http.request":
            self._received += len(message.get("body", b""))
            self._complete = not message.get("more_body")
        else:
            self._complete = True
        return message

    def _allowed(self) -> float | None:
        """Seconds of waiting the bytes received so far allow; None without a rate rule."""
        if self._pace.min_rate <= 0:
            return None
        return self._pace.grace + self._received / self._pace.min_rate

    def _cut(self, by_rate: bool) -> RequestTimeout:
        pace = self._pace
        if by_rate:
            self._timed_out("body_rate")
            return RequestTimeout(
                f"the request body came slower than {pace.min_rate} bytes/s "
                f"({BODY_MIN_RATE.name}): {self._received} bytes in {self._waited:.1f} s; "
                "closing the connection"
            )
        self._timed_out("body")
        return RequestTimeout(
            f"no byte of the request body for {pace.idle:g} s "
            f"({BODY_IDLE_TIMEOUT.name}); closing the connection"
        )


def has_body(scope: Scope) -> bool:
    """Whether a request declares a body: a Content-Length above 0, or chunked encoding."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
        if name == b"transfer-encoding":
            return True
    return False
