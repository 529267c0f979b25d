"""The sync driver's HTTP: a kept-alive connection is only ever used by the thread that opened
it, so no pool pass of another thread can close it under a request (encode/httpcore#1110)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from worker.client.drivers import SyncDriver
from worker.client.flow import Exchange, Flow


@contextmanager
def recording_server() -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """A keep-alive HTTP/1.1 server on loopback answering ``ok``; its URL, and for each request
    the ``X-Thread`` it named and the client port it came from (its connection)."""
    seen: list[tuple[str, int]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            seen.append((self.headers["X-Thread"], self.client_address[1]))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def get(url: str, name: str) -> Flow[httpx.Response]:
    response: httpx.Response = yield Exchange("GET", url, headers={"X-Thread": name})
    return response


def test_a_kept_alive_connection_is_never_handed_to_another_thread() -> None:
    driver = SyncDriver(httpx.Client, 1, time.sleep)
    with recording_server() as (url, seen):
        for name in ("a", "b", "a"):
            # One after the other: a shared pool would hand the idle connection on.
            thread = threading.Thread(target=lambda n=name: driver.run(get(url, n)))
            thread.start()
            thread.join()
        driver.run(get(url, "main"))
        driver.run(get(url, "main"))
    ports = {name: {port for who, port in seen if who == name} for name in ("a", "b", "main")}
    assert len(seen) == 5
    assert len(ports["main"]) == 1  # kept alive within a thread
    assert not ports["b"] & (ports["a"] | ports["main"])
    assert not ports["a"] & ports["main"]
