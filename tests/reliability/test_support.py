"""The reliability harness's own HTTP clients: a thread's request is never cut by what another
thread does with ``Worker.http`` (two local HTTP servers, no worker process)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpcore
import httpx
import pytest

from tests.reliability.support import Worker

WAIT_S = 30.0
"""Longest a step waits for the other thread's: only reached if httpcore no longer runs the
steps this test orders (then the test fails saying which)."""
KEPT_ALIVE = 20
"""httpx's default ``max_keepalive_connections`` for a client."""


class ForcedOrder:
    """Forces, with events, the order of steps that cuts a request on a pool shared by threads
    (encode/httpcore#1110): thread A is handed its idle kept-alive connection; a pass of the
    pool run by another thread B picks that connection as surplus; A sends on it; only then
    does B's pass close what it picked. Hooks two steps of httpcore's sync pool; the server
    holds A's answer until B's pass is over. Thread-safe."""

    def __init__(self) -> None:
        self.events = {
            name: threading.Event() for name in ("assigned", "decided", "sent", "closed")
        }
        self.a_thread: threading.Thread | None = None
        self.b_releasing = threading.Event()
        self._assign = httpcore._sync.connection_pool.PoolRequest.wait_for_connection
        self._close = httpcore.ConnectionPool._close_connections

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # Functions, not bound methods: httpcore's instances are bound as their first argument.
        def assigned(request: Any, timeout: float | None = None) -> Any:
            return self._assigned(request, timeout)

        def closing(pool: Any, connections: list[Any]) -> None:
            self._closing(pool, connections)

        pool = httpcore._sync.connection_pool
        monkeypatch.setattr(pool.PoolRequest, "wait_for_connection", assigned)
        monkeypatch.setattr(pool.ConnectionPool, "_close_connections", closing)

    def done(self, step: str) -> None:
        self.events[step].set()

    def wait(self, step: str) -> None:
        assert self.events[step].wait(WAIT_S), f"step {step!r} never came"

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        """What the server does before answering ``request``."""
        if request.path == "/a-second":
            self.done("sent")
            self.wait("closed")

    def _assigned(self, request: Any, timeout: float | None) -> Any:
        connection = self._assign(request, timeout)
        if threading.current_thread() is self.a_thread:
            self.done("assigned")
            self.wait("decided")
        return connection

    def _closing(self, pool: Any, connections: list[Any]) -> None:
        releasing = self.b_releasing.is_set() and threading.current_thread() is not self.a_thread
        if releasing:
            self.done("decided")
            if connections:
                self.wait("sent")
        self._close(pool, connections)
        if releasing:
            self.done("closed")


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that closes an answer it has not read resets its connection: expected here.
        pass


@contextmanager
def server(answer: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A keep-alive HTTP/1.1 server on loopback answering ``ok`` to every GET, after
    ``answer(request)`` returns; its URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            answer(self)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    httpd = QuietServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_a_pool_pass_of_another_thread_never_closes_a_request_s_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order = ForcedOrder()
    order.install(monkeypatch)
    worker = Worker(tmp_path)
    worker.clients.timeout = WAIT_S
    outcome: list[object] = []

    def thread_a(url: str) -> None:
        worker.http.get(url + "/a-first").raise_for_status()
        order.a_thread = threading.current_thread()
        try:
            outcome.append(worker.http.get(url + "/a-second").status_code)
        except httpx.TransportError as exc:
            outcome.append(exc)

    with server(order.answer) as a_url, server(order.answer) as b_url, ExitStack() as held:
        # B holds all but one of the kept-alive places with answers it has not read, so the
        # pool of a shared client then counts A's idle connection as the last one kept; B's
        # request to the second server opens one connection too many.
        for _ in range(KEPT_ALIVE - 1):
            held.enter_context(worker.http.stream("GET", b_url))
        a = threading.Thread(target=thread_a, args=(a_url,))
        a.start()
        order.wait("assigned")
        with worker.http.stream("GET", b_url + "/b-one-more") as extra:
            order.b_releasing.set()
            extra.read()  # the answer read whole is released to the pool
        a.join()
    worker.close()
    assert outcome == [200]
