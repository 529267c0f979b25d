"""The TCP proxy in front of a real HTTP server (``http.server`` on a loopback port): bytes pass
unchanged, connections/requests/bytes are counted, latency is added per turn, pause holds and
cut resets connections."""

from __future__ import annotations

import hashlib
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.worker.meta.support import wait_until
from worker.devlab.local.netproxy import HttpRequestParser, TcpProxy
from worker.devlab.local.s3 import free_port

RELEASE = threading.Event()


def pattern(size: int) -> bytes:
    return (bytes(range(251)) * (size // 251 + 1))[:size]


class Handler(BaseHTTPRequestHandler):
    """``GET /bytes/N``: N pattern bytes; ``PUT /echo``: the body's sha256; ``GET /slow``: half
    a body, then nothing until RELEASE is set."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path == "/slow":
            self._head(1000)
            self.wfile.write(b"x" * 500)
            self.wfile.flush()
            RELEASE.wait(30)
            return
        self._answer(pattern(int(self.path.rsplit("/", 1)[1])))

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(hashlib.sha256(body).hexdigest().encode())

    def _head(self, length: int) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.end_headers()

    def _answer(self, body: bytes) -> None:
        self._head(len(body))
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    RELEASE.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,))
    thread.start()
    yield httpd
    RELEASE.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture
def proxy(server: ThreadingHTTPServer) -> Iterator[TcpProxy]:
    with TcpProxy("127.0.0.1", server.server_address[1]) as running:
        yield running


def test_bytes_pass_unchanged_both_ways_and_are_counted(proxy: TcpProxy) -> None:
    body = pattern(3 << 20)
    with httpx.Client(base_url=proxy.url) as client:
        got = client.get("/bytes/5000000", headers={"Range": "bytes=0-9"})
        put = client.put("/echo", content=body)
    assert got.content == pattern(5_000_000)
    assert put.text == hashlib.sha256(body).hexdigest()
    # The proxy sees the client's close a moment after httpx returns.
    wait_until(lambda: proxy.stats().open_connections == 0)
    stats = proxy.stats()
    assert (stats.connections, stats.requests) == (1, 2)
    assert stats.bytes_up > len(body) and stats.bytes_down > 5_000_000
    first, second = proxy.requests()
    assert (first.method, first.target, first.range) == ("GET", "/bytes/5000000", "bytes=0-9")
    assert (second.method, second.range) == ("PUT", None)
    proxy.reset_counts()
    assert proxy.stats().requests == 0 and proxy.requests() == []


FAKE = b"GET /fake HTTP/1.1\r\n\r\n"  # inside bodies: not requests
STREAM = (
    b"GET /a HTTP/1.1\r\nHost: x\r\nRange: bytes=0-3\r\n\r\n"
    b"POST /b HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
    b"PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"%x;ext=1\r\n%s\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n"
    b"HEAD /d HTTP/1.1\r\n\r\n"
) % (len(FAKE), FAKE, len(FAKE), FAKE)


@pytest.mark.parametrize("piece", [1, 7, len(STREAM)])
def test_the_parser_finds_request_heads_however_the_stream_is_split(piece: int) -> None:
    parser = HttpRequestParser()
    found = []
    for start in range(0, len(STREAM), piece):
        found += parser.feed(STREAM[start : start + piece])
    assert [(r.method, r.target) for r in found] == [
        ("GET", "/a"),
        ("POST", "/b"),
        ("PUT", "/c"),
        ("HEAD", "/d"),
    ]
    assert found[0].range == "bytes=0-3"


def test_the_parser_stops_at_a_stream_that_is_not_http() -> None:
    parser = HttpRequestParser()
    assert parser.feed(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n") == []
    assert parser.feed(b"GET / HTTP/1.1\r\n\r\n") == []


def test_latency_is_added_to_the_handshake_and_to_each_turn(proxy: TcpProxy) -> None:
    proxy.latency = 0.2
    with httpx.Client(base_url=proxy.url) as client:
        started = time.monotonic()
        client.get("/bytes/10")
        first = time.monotonic() - started
        started = time.monotonic()
        client.get("/bytes/10")
        second = time.monotonic() - started
    # Lower bounds only: the delay is the proxy's purpose; how much slower a loaded machine
    # makes it is not.
    assert first >= 0.4 and second >= 0.2


def test_pause_holds_a_request_until_resume(proxy: TcpProxy) -> None:
    proxy.pause()
    answers: list[bytes] = []
    thread = threading.Thread(
        target=lambda: answers.append(httpx.get(proxy.url + "/bytes/100", timeout=30).content)
    )
    thread.start()
    deadline = time.monotonic() + 30
    while proxy.stats().connections == 0:  # accepted, then held before the server
        assert time.monotonic() < deadline
        time.sleep(0.01)
    thread.join(0.3)
    assert thread.is_alive() and answers == []
    proxy.resume()
    thread.join(30)
    assert answers == [pattern(100)]


def test_cut_resets_open_connections_and_new_ones_are_served(proxy: TcpProxy) -> None:
    with httpx.Client(base_url=proxy.url) as client, client.stream("GET", "/slow") as response:
        chunks = response.iter_raw()
        assert next(chunks)
        assert proxy.cut() == 1
        with pytest.raises(httpx.TransportError):
            list(chunks)
    assert proxy.stats().resets == 1
    assert httpx.get(proxy.url + "/bytes/3").content == pattern(3)


def test_a_refused_target_resets_the_client() -> None:
    with TcpProxy("127.0.0.1", free_port()) as proxy, pytest.raises(httpx.TransportError):
        httpx.get(proxy.url + "/bytes/3")


def test_stop_closes_the_port_and_the_thread_and_is_idempotent(proxy: TcpProxy) -> None:
    assert httpx.get(proxy.url + "/bytes/3").content == pattern(3)
    proxy.stop()
    proxy.stop()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", proxy.port)):
        pass
    assert not any(t.name == "netproxy" for t in threading.enumerate())
    with pytest.raises(RuntimeError, match="not running"):
        proxy.pause()


def test_to_url_takes_only_http_urls() -> None:
    proxy = TcpProxy.to_url("http://127.0.0.1:8333", latency=0.01)
    assert (proxy.target, proxy.latency) == (("127.0.0.1", 8333), 0.01)
    for bad in ("https://127.0.0.1:8333", "http://127.0.0.1", "127.0.0.1:8333"):
        with pytest.raises(ValueError, match="expected http://host:port"):
            TcpProxy.to_url(bad)
    with pytest.raises(ValueError, match="latency"):
        TcpProxy("127.0.0.1", 1, latency=-1)
