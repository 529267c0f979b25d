"""A synchronous httpx transport over an asynchronous one, so the (synchronous) client can talk
to an ASGI app in process: ``DoraFileSystem(transport=httpx.ASGITransport(app=app))``.

Requests run on one event loop in a daemon thread, built once per process; bodies are read in
full on each side (the in-process app is a test or embedding, not a data path).
"""

from __future__ import annotations

import asyncio
import threading

import httpx

from worker.client.forksafe import ProcessLocal


class _Loop:
    """An event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="dora-asgi-bridge", daemon=True
        )
        self.thread.start()


class SyncBridge(httpx.BaseTransport):
    """Sends each request through ``transport`` on a private event loop and waits for it.

    Thread-safe: any number of threads may wait on the one loop at once (their requests run
    concurrently on it). Fork-safe: a child starts its own loop thread.
    """

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self.transport = transport
        self._loop = ProcessLocal(_Loop)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        # A sync body stream cannot be iterated from the loop: make it bytes first.
        request.read()
        future = asyncio.run_coroutine_threadsafe(self._send(request), self._loop.get().loop)
        return future.result()

    async def _send(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self.transport.handle_async_request(request)
            try:
                body = await response.aread()
            finally:
                await response.aclose()
        except httpx.TransportError:
            raise
        except Exception as exc:
            # Over a socket, an app failing mid-answer cuts the connection; say the same here.
            raise httpx.RemoteProtocolError(
                f"app failed mid-answer: {exc!r}", request=request
            ) from exc
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) != len(body):
            raise httpx.RemoteProtocolError(
                f"answer cut short: {len(body)} of {declared} bytes", request=request
            )
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx.ByteStream(body),
            extensions=response.extensions,
        )
