"""The HTTP/1.1 protocol the worker runs under uvicorn: uvicorn's httptools protocol with the
deadlines it lacks against slow clients.

uvicorn (0.54) arms a timer only after an answer (``timeout_keep_alive``), and disarms it at the
next byte: a connection that never sends a byte, or sends half a request head and stops, is held
forever, and httptools buffers a head of any size. Its ``limit_concurrency`` answers 503 only
once a head is complete, so half-sent heads never meet it; h11's ``max_incomplete_event_size``
bounds a head's size but not its time. Here:

- a request head must be complete within ``head_timeout`` of the connection opening or, on a
  kept-alive connection, of the head's first byte; past it the connection is answered 408 (if it
  sent anything) and closed;
- a head of more than :data:`MAX_HEAD_BYTES` is answered 431 and the connection closed;
- when an answer goes out before its request's body was read whole (a refusal), the rest of
  the body is read and dropped, and must arrive within :data:`LINGER_SECONDS` or the
  connection is closed; once it has, the connection is kept alive as after any request.
  uvicorn drops its keep-alive timer at every byte and re-arms none after such a body, so a
  client trickling bytes held the connection forever; closing at once instead could reset it
  (unread bytes) before the client has read the answer, or cut a request it sent next.

The deadline on a body that the app is reading is the app's (``worker.api.limits``), where a
stall is answered in the shape of the surface. Each deadline that ends a connection is counted
through ``SlowClientPolicy.expired``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from worker.http_target import Utf8TargetProtocol
from worker.tls.clientcert import tls_extension

MAX_HEAD_BYTES = 64 << 10
"""The largest request head taken (request line and headers): the worker's own clients send
under 2 KB, Hadoop's a little more; h11's default bound is 16 KB."""
LINGER_SECONDS = 10.0


@dataclass(frozen=True)
class SlowClientPolicy:
    """``head_timeout`` in seconds; ``expired(phase)`` is called with ``"head"`` or ``"linger"``
    each time a deadline closes a connection (on the event loop: it must not block)."""

    head_timeout: float
    expired: Callable[[str], None]


def protocol_class(policy: SlowClientPolicy) -> type[asyncio.Protocol]:
    """The protocol class to give uvicorn (``uvicorn.Config(http=...)``) for ``policy``."""
    # Over the protocol that takes Hadoop's raw UTF-8 request lines (worker.http_target): the
    # guard counts and times what arrives, then that protocol quotes it for the parser.
    return type("SlowClientGuard", (SlowClientGuard, Utf8TargetProtocol), {"policy": policy})


class SlowClientGuard(HttpToolsProtocol):
    """One connection. Used on the event loop only, as uvicorn's protocols are."""

    policy: ClassVar[SlowClientPolicy]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # Read once: the handshake is over when the connection is handed to the protocol.
        self._tls = tls_extension(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._phase = ""
        self._head_bytes = 0
        self._arm("head", self.policy.head_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering() and self._deadline is None:
            self._arm("linger", LINGER_SECONDS)
        super().data_received(data)
        if self._phase == "head":
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._refuse(431, f"request head larger than {MAX_HEAD_BYTES} bytes")

    def on_message_begin(self) -> None:
        if self._phase != "head":
            self._arm("head", self.policy.head_timeout)
        super().on_message_begin()
        if self._tls is not None:
            self.scope["extensions"] = {"tls": self._tls}

    def on_headers_complete(self) -> None:
        if self._phase == "head":
            self._disarm()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        lingering = self._lingering()
        super().on_message_complete()
        if lingering and not self.transport.is_closing():
            # The rest of a body nobody read has arrived: the connection is idle, as uvicorn
            # would have it after an answer (it re-arms no timer here itself).
            self._disarm()
            self.cycle.more_body = False
            self._unset_keepalive_if_required()
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

    def shutdown(self) -> None:
        # uvicorn closes an idle connection at shutdown, then waits until it is lost. Over TLS
        # a close sends close_notify and waits for the client's (up to the event loop's 30 s
        # SSL shutdown timeout), which an idle pooled client never sends before it next uses
        # the connection: one such client held a SIGTERM for 30 s, the length of Kubernetes'
        # grace period. An idle or already closing TLS connection is aborted instead: no
        # answer is cut, and the client's pool finds the connection gone and opens another.
        cycle: Any = self.cycle
        idle = cycle is None or cycle.response_complete
        if self._tls is not None and (idle or self.transport.is_closing()):
            self._disarm()
            self.transport.abort()
        else:
            super().shutdown()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._lingering() and not self.transport.is_closing():
            self._arm("linger", LINGER_SECONDS)

    def _lingering(self) -> bool:
        """Whether the answer went out and the request's body is still arriving."""
        cycle: Any = self.cycle
        return cycle is not None and cycle.response_complete and cycle.more_body

    def _arm(self, phase: str, seconds: float) -> None:
        self._disarm()
        self._phase = phase
        self._head_bytes = 0
        self._deadline = self.loop.call_later(seconds, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._phase = None, ""

    def _expire(self) -> None:
        phase, self._deadline = self._phase, None
        if self.transport.is_closing():
            return
        self.policy.expired(phase)
        if phase == "head" and self._head_bytes:
            self._refuse(408, "request head not complete in time")
        else:
            self.transport.close()

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` in plain text (no route is known yet) and close."""
        self._disarm()
        body = message.encode()
        self.transport.write(
            b"".join(
                [
                    STATUS_LINE[status],
                    b"content-type: text/plain; charset=utf-8\r\n",
                    b"content-length: %d\r\n" % len(body),
                    b"connection: close\r\n\r\n",
                    body,
                ]
            )
        )
        self.transport.close()
