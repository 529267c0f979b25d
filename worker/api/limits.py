"""Limits on request bodies that the app enforces, where a refusal can be answered in the shape
of the surface that owns the path (the head deadlines are the protocol's: ``worker.httpproto``):

- at most ``dora.worker.http.max.concurrent.uploads`` requests with a body at once; one more is
  answered 503 ``WorkerBusy`` with ``Retry-After`` before a byte of its body is read (each
  upload may hold up to ``worker.api.body.SPOOL_IN_MEMORY`` of memory while it is spooled);
- while a route reads a body, ``dora.worker.http.body.idle.timeout`` without a byte from the
  client ends it: the read raises RequestTimeout, answered 408 with ``Connection: close``.

Both show in metrics: ``dora_http_uploads_in_flight``, ``dora_http_uploads_refused_total`` and
``dora_http_idle_timeouts_total{phase}`` (``body``; the protocol adds ``head`` and ``linger``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.api.keys import BODY_IDLE_TIMEOUT, MAX_UPLOADS
from worker.common.errors import RequestTimeout, WorkerBusy

RETRY_AFTER_S = 1
"""What a refused upload is told to wait: uploads in flight end within seconds or time out."""

Refuse = Callable[[Scope, Exception], ASGIApp]
"""The answer to a request refused with an exception, in the shape of the surface of its path."""


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
        idle_seconds: float,
        refuse: Refuse,
        timed_out: Callable[[], None],
    ) -> None:
        self.app = app
        self._uploads = uploads
        self._idle = idle_seconds
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
            await self.app(scope, self._deadlined(receive), send)
        finally:
            self._uploads.leave()

    def _deadlined(self, receive: Receive) -> Receive:
        """``receive`` that raises RequestTimeout when the client sends nothing for the idle
        deadline while the body is still coming; once it is complete, ``receive`` as it is
        (an answer then waits for the client to go away with no deadline)."""
        complete = False

        async def deadlined() -> Message:
            nonlocal complete
            if complete:
                return await receive()
            try:
                async with asyncio.timeout(self._idle):
                    message = await receive()
            except TimeoutError:
                self._timed_out()
                raise RequestTimeout(
                    f"no byte of the request body for {self._idle:g} s "
                    f"({BODY_IDLE_TIMEOUT.name}); closing the connection"
                ) from None
            complete = message["type"] != "http.request" or not message.get("more_body")
            return message

        return deadlined


def has_body(scope: Scope) -> bool:
    """Whether a request declares a body: a Content-Length above 0, or chunked encoding."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
        if name == b"transfer-encoding":
            return True
    return False
