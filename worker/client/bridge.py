"""Injected httpx transports, made usable by both drivers: a synchronous transport over an
asynchronous one (so the synchronous client can talk to an ASGI app in process:
``DoraFileSystem(transport=httpx.ASGITransport(app=app))``), and an asynchronous one over a
synchronous one (so the asynchronous client can use a transport written for the synchronous one).

An ASGI app is answered as a server would answer it (:class:`AppTransport`): an app that fails
before its answer started fails the call as a dropped connection; after, the answer keeps its
status and headers and its body is cut short (reading it raises ``httpx.RemoteProtocolError``),
as over a socket the connection would be cut. Bodies are read in full on each side (an
in-process app is a test or an embedding, not a data path).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, MutableMapping
from typing import Any

import httpx

from worker.common.forksafe import ProcessLocal

Message = MutableMapping[str, Any]


class _Loop:
    """An event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="dora-asgi-bridge", daemon=True
        )
        self.thread.start()


class _FailedMidAnswer(Exception):
    """An ASGI app failed after it started its answer: what it had sent by then."""

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        super().__init__(f"app failed after answering {status}")
        self.status = status
        self.headers = headers
        self.body = body


class _ServerLike:
    """An ASGI app wrapper that records what the app sent, so a failure after the answer started
    can be told apart from one before it (httpx's ASGITransport loses the headers)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        started: list[Message] = []
        body: list[bytes] = []

        async def recording(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.append(message)
            elif message["type"] == "http.response.body":
                body.append(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, recording)
        except Exception as exc:
            if not started:
                raise
            start = started[0]
            raise _FailedMidAnswer(
                start["status"], list(start.get("headers", [])), b"".join(body)
            ) from exc


class _CutStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body that ends in a cut connection after ``body``."""

    def __init__(self, body: bytes, request: httpx.Request, reason: str) -> None:
        self._body = body
        self._request = request
        self._reason = reason

    def __iter__(self) -> Iterator[bytes]:
        if self._body:
            yield self._body
        raise httpx.RemoteProtocolError(self._reason, request=self._request)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self:
            yield chunk


class AppTransport(httpx.AsyncBaseTransport):
    """An ``httpx.ASGITransport`` answering as a server would (see the module docstring).

    Thread-safe and usable from any event loop: it keeps no state between requests.
    """

    def __init__(self, transport: httpx.ASGITransport) -> None:
        self.transport = httpx.ASGITransport(
            app=_ServerLike(transport.app),
            raise_app_exceptions=transport.raise_app_exceptions,
            root_path=transport.root_path,
            client=transport.client,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self.transport.handle_async_request(request)
            try:
                body = await response.aread()
            finally:
                await response.aclose()
        except httpx.TransportError:
            raise
        except _FailedMidAnswer as failed:
            reason = f"app failed mid-answer: {failed.__cause__!r}"
            return _cut(failed.status, failed.headers, failed.body, request, reason)
        except Exception as exc:
            # Over a socket, an app failing before it answers drops the connection; say the same.
            raise httpx.RemoteProtocolError(
                f"app failed before answering: {exc!r}", request=request
            ) from exc
        return _complete(response.status_code, response.headers.raw, body, request, response)


class SyncBridge(httpx.BaseTransport):
    """Sends each request through an asynchronous ``transport`` on a private event loop and
    waits for it.

    Thread-safe: any number of threads may wait on the one loop at once (their requests run
    concurrently on it). Fork-safe: a child starts its own loop thread.
    """

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self.transport = async_transport(transport)
        self._loop = ProcessLocal(_Loop)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        # A sync body stream cannot be iterated from the loop: make it bytes first.
        request.read()
        future = asyncio.run_coroutine_threadsafe(self._send(request), self._loop.get().loop)
        return future.result()

    async def _send(self, request: httpx.Request) -> httpx.Response:
        response = await self.transport.handle_async_request(request)
        try:
            body = await response.aread()
        except httpx.TransportError as exc:
            # A cut answer stays cut on this side.
            return _cut(response.status_code, response.headers.raw, b"", request, str(exc))
        finally:
            await response.aclose()
        return _complete(response.status_code, response.headers.raw, body, request, response)


class AsyncBridge(httpx.AsyncBaseTransport):
    """Sends each request through a synchronous ``transport`` in a worker thread.

    Thread-safe if ``transport`` is (httpx's are).
    """

    def __init__(self, transport: httpx.BaseTransport) -> None:
        self.transport = transport

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        # The async body is read here, on the loop, so the thread sees plain bytes.
        await request.aread()
        return await asyncio.to_thread(self._send, request)

    def _send(self, request: httpx.Request) -> httpx.Response:
        response = self.transport.handle_request(request)
        try:
            body = response.read()
        except httpx.TransportError as exc:
            # A cut answer stays cut on this side.
            return _cut(response.status_code, response.headers.raw, b"", request, str(exc))
        finally:
            response.close()
        return _complete(response.status_code, response.headers.raw, body, request, response)


def sync_transport(
    transport: httpx.BaseTransport | httpx.AsyncBaseTransport,
) -> httpx.BaseTransport:
    """``transport`` as the synchronous driver can use it."""
    if isinstance(transport, httpx.BaseTransport):
        return transport
    return SyncBridge(transport)


def async_transport(
    transport: httpx.BaseTransport | httpx.AsyncBaseTransport,
) -> httpx.AsyncBaseTransport:
    """``transport`` as the asynchronous driver can use it."""
    if isinstance(transport, httpx.ASGITransport):
        return AppTransport(transport)
    if isinstance(transport, httpx.AsyncBaseTransport):
        return transport
    return AsyncBridge(transport)


def _complete(
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    request: httpx.Request,
    response: httpx.Response,
) -> httpx.Response:
    """An answer carrying ``body``, or a cut one when ``body`` is shorter than declared."""
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) != len(body):
        reason = f"answer cut short: {len(body)} of {declared} bytes"
        return _cut(status, headers, body, request, reason)
    return httpx.Response(
        status, headers=headers, stream=httpx.ByteStream(body), extensions=response.extensions
    )


def _cut(
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    request: httpx.Request,
    reason: str,
) -> httpx.Response:
    """An answer whose body stops after ``body``: reading it raises RemoteProtocolError."""
    return httpx.Response(status, headers=headers, stream=_CutStream(body, request, reason))
