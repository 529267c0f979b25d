"""The lean exchange (``http.client``) against a real loopback server whose every byte the test
scripts: answers, kept and replaced connections, and each way a worker can fail, raised as the
httpx exceptions the client's error policy tells apart; then that policy over it, end to end."""

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from tests.worker.client.conftest import client_config
from worker.client import errors
from worker.client import lean as lean_module
from worker.client.flow import BodyCut, ClientExchange
from worker.client.http import Call, WorkerClient
from worker.client.lean import LeanHttp
from worker.client.liveness import Unresponsive
from worker.client.options import ClientOptions


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]


class Connection:
    """One accepted connection, as the script sees it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._file = sock.makefile("rb")

    def request(self) -> Request | None:
        """The next request on this connection; None once the client closed it."""
        line = self._file.readline()
        if not line:
            return None
        method, target, _ = line.decode().split(" ", 2)
        headers: dict[str, str] = {}
        while (header := self._file.readline()) not in (b"\r\n", b""):
            name, _, value = header.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        return Request(method, target, headers)

    def answer(self, body: bytes, status: str = "200 OK", **headers: str) -> None:
        lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}"]
        lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)


Script = Callable[[Connection, "Server"], None]


@dataclass
class Server:
    """A loopback server: each accepted connection is handed to ``script`` in a thread of its
    own. ``requests`` holds every request the scripts read; ``done`` is set when the test ends
    (scripts that hold a connection open wait on it)."""

    script: Script
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    done: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._socks: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            self._socks.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        with sock:
            self.script(Connection(sock), self)

    def read(self, connection: Connection) -> Request | None:
        request = connection.request()
        if request is not None:
            self.requests.append(request)
        return request

    def close(self) -> None:
        self.done.set()
        # shutdown, not close, wakes the threads blocked in accept() and in reading a request.
        for sock in [self._listener, *self._socks]:
            with contextlib.suppress(OSError):  # already closed by its script
                sock.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for thread in self._threads:
            thread.join(timeout=5)


@pytest.fixture
def serve() -> Iterator[Callable[[Script], Server]]:
    servers: list[Server] = []

    def start(script: Script) -> Server:
        servers.append(Server(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def lean() -> Iterator[Callable[..., LeanHttp]]:
    made: list[LeanHttp] = []

    def make(timeout: float = 5.0, connect: float = 2.0) -> LeanHttp:
        made.append(LeanHttp({"Authorization": "Bearer t0ken"}, connect, timeout))
        return made[-1]

    yield make
    for http in made:
        http.close()


def status(server: Server, path: str = "s3://bucket/a b.parquet") -> ClientExchange:
    return ClientExchange(
        "GET", f"http://{server.address}/v1/status", {"path": path}, {"X-Extra": "1"}
    )


def json_answers(connection: Connection, server: Server) -> None:
    while (request := server.read(connection)) is not None:
        connection.answer(json.dumps({"target": request.target}).encode(), X_Dora_Version="v7")


def test_answers_are_httpx_responses_over_one_kept_connection(
    serve: Callable[[Script], Server],
    lean: Callable[..., LeanHttp],
) -> None:
    server = serve(json_answers)
    http = lean()
    answers = [http.exchange(status(server)) for _ in range(3)]
    assert [a.status_code for a in answers] == [200] * 3
    assert answers[0].json() == {"target": "/v1/status?path=s3%3A%2F%2Fbucket%2Fa+b.parquet"}
    assert answers[0].headers["x-dora-version"] == "v7"
    assert server.connections == 1
    sent = server.requests[0]
    assert (sent.method, sent.headers["authorization"], sent.headers["x-extra"]) == (
        "GET",
        "Bearer t0ken",
        "1",
    )


def test_error_answers_come_back_as_answers(
    serve: Callable[[Script], Server], lean: Callable[..., LeanHttp]
) -> None:
    def not_found(connection: Connection, server: Server) -> None:
        server.read(connection)
        connection.answer(b'{"error": "NotFound"}', "404 Not Found")

    answer = lean().exchange(status(serve(not_found)))
    assert (answer.status_code, answer.json(), answer.is_error) == (
        404,
        {"error": "NotFound"},
        True,
    )


def test_each_thread_keeps_its_own_connection(
    serve: Callable[[Script], Server], lean: Callable[..., LeanHttp]
) -> None:
    server = serve(json_answers)
    http = lean()
    http.exchange(status(server))
    other = threading.Thread(target=lambda: http.exchange(status(server)))
    other.start()
    other.join()
    http.exchange(status(server))
    assert (server.connections, len(server.requests)) == (2, 3)


def test_a_connection_the_worker_closed_while_idle_is_replaced(
    serve: Callable[[Script], Server],
    lean: Callable[..., LeanHttp],
) -> None:
    closed = threading.Event()

    def one_answer_then_close(connection: Connection, server: Server) -> None:
        # What a worker's keep-alive timeout does: answer, then close the idle connection.
        server.read(connection)
        connection.answer(b"{}")
        # The client may have dropped the connection first: closed either way.
        with contextlib.suppress(OSError):
            connection.sock.shutdown(socket.SHUT_RDWR)
        closed.set()

    server = serve(one_answer_then_close)
    http = lean()
    http.exchange(status(server))
    assert closed.wait(5)
    assert http.exchange(status(server)).status_code == 200
    assert server.connections == 2


def test_connection_close_is_honoured(
    serve: Callable[[Script], Server], lean: Callable[..., LeanHttp]
) -> None:
    def close_after_each(connection: Connection, server: Server) -> None:
        server.read(connection)
        connection.answer(b"{}", Connection="close")

    server = serve(close_after_each)
    http = lean()
    assert [http.exchange(status(server)).status_code for _ in range(2)] == [200, 200]
    assert server.connections == 2


def test_a_refused_connection_is_a_connect_error(lean: Callable[..., LeanHttp]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(httpx.ConnectError, match=f"127.0.0.1:{port}"):
            lean().exchange(ClientExchange("GET", f"http://127.0.0.1:{port}/v1/status"))


def test_a_worker_that_does_not_answer_is_a_read_timeout(
    serve: Callable[[Script], Server],
    lean: Callable[..., LeanHttp],
) -> None:
    def silent(connection: Connection, server: Server) -> None:
        server.read(connection)
        server.done.wait(10)

    server = serve(silent)
    with pytest.raises(httpx.ReadTimeout, match="in 0.2s"):
        lean(timeout=0.2).exchange(status(server))


def stopped(connection: Connection, server: Server) -> None:
    """A stopped worker process: its kernel takes every connection and request (so a probe
    connects), and nothing ever answers."""
    server.read(connection)
    server.done.wait(30)


def test_a_worker_that_answers_no_liveness_probe_is_unresponsive(
    serve: Callable[[Script], Server],
    lean: Callable[..., LeanHttp],
) -> None:
    server = serve(stopped)
    # Unresponsive is told from the probe, long before the read timeout (which would fail the
    # test: the server holds the connection for as long as the test's own limit).
    with pytest.raises(Unresponsive, match="not even /healthz"):
        lean(timeout=60, connect=0.2).exchange(status(server))
    assert [r.target.split("?")[0] for r in server.requests] == ["/v1/status", "/healthz"]


def test_a_busy_worker_that_answers_its_probe_is_waited_for(
    serve: Callable[[Script], Server],
    lean: Callable[..., LeanHttp],
) -> None:
    probed = threading.Event()

    def busy(connection: Connection, server: Server) -> None:
        request = server.read(connection)
        if request is not None and request.target == "/healthz":
            connection.answer(b'{"status": "ok"}')
            probed.set()
            return
        probed.wait(10)  # a cold read: answers only after the client checked it is alive
        connection.answer(b"{}")

    server = serve(busy)
    assert lean(timeout=60, connect=0.2).exchange(status(server)).status_code == 200
    assert [r.target for r in server.requests][-1] == "/healthz"


def test_a_kept_connection_idle_past_the_limit_is_replaced(
    serve: Callable[[Script], Server],
    lean: Callable[..., LeanHttp],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = serve(json_answers)
    http = lean()
    http.exchange(status(server))
    monkeypatch.setattr(lean_module, "IDLE_S", 0.0)
    http.exchange(status(server))
    assert server.connections == 2


def test_a_connection_dropped_before_the_answer_is_a_transport_error(
    serve: Callable[[Script], Server],
    lean: Callable[..., LeanHttp],
) -> None:
    def drop(connection: Connection, server: Server) -> None:
        server.read(connection)

    server = serve(drop)
    with pytest.raises(httpx.TransportError) as raised:
        lean().exchange(status(server))
    assert not isinstance(raised.value, httpx.ConnectError | httpx.TimeoutException)


def test_an_answer_that_is_not_http_is_a_protocol_error(
    serve: Callable[[Script], Server],
    lean: Callable[..., LeanHttp],
) -> None:
    def garbage(connection: Connection, server: Server) -> None:
        server.read(connection)
        connection.sock.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")

    with pytest.raises(httpx.RemoteProtocolError):
        lean().exchange(status(serve(garbage)))


def cut_after_headers(connection: Connection, server: Server) -> None:
    server.read(connection)
    connection.sock.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nX-Dora-Version: v1\r\n\r\nold bytes"
    )


def test_a_body_cut_after_the_headers_is_a_body_cut_carrying_them(
    serve: Callable[[Script], Server],
    lean: Callable[..., LeanHttp],
) -> None:
    with pytest.raises(BodyCut) as raised:
        lean().exchange(status(serve(cut_after_headers)))
    cut = raised.value
    assert (cut.response.status_code, cut.response.headers["x-dora-version"]) == (200, "v1")
    assert isinstance(cut.cause, httpx.ReadError)


def test_only_requests_without_a_body_take_the_lean_exchange() -> None:
    assert LeanHttp.takes(ClientExchange("GET", "http://h:1/v1/read"))
    assert LeanHttp.takes(ClientExchange("GET", "https://h:1/v1/read"))
    assert not LeanHttp.takes(ClientExchange("PUT", "http://h:1/v1/write", body=lambda: b"x"))


@pytest.fixture
def client_for() -> Iterator[Callable[[Server], WorkerClient]]:
    made: list[WorkerClient] = []

    def make(server: Server) -> WorkerClient:
        made.append(WorkerClient(ClientOptions.resolve(client_config(workers=server.address))))
        return made[-1]

    yield make
    for client in made:
        assert client.sync.lean is not None
        if (http := client.sync.lean.peek()) is not None:
            http.close()


def test_the_client_asks_a_cut_read_again_pinned_over_the_lean_exchange(
    serve: Callable[[Script], Server], client_for: Callable[[Server], WorkerClient]
) -> None:
    def cut_then_pinned(connection: Connection, server: Server) -> None:
        if len(server.requests) == 0:
            cut_after_headers(connection, server)
            return
        json_answers(connection, server)

    server = serve(cut_then_pinned)
    read = Call(
        "GET", "/v1/read", "s3://b/k", "read s3://b/k", {"path": "s3://b/k"}, pin_on_cut=True
    )
    answer = client_for(server).send(read)
    assert answer.response.json()["target"].endswith("&version=v1")
    assert server.connections == 2


def test_the_client_translates_error_answers_over_the_lean_exchange(
    serve: Callable[[Script], Server], client_for: Callable[[Server], WorkerClient]
) -> None:
    def not_found(connection: Connection, server: Server) -> None:
        server.read(connection)
        body = {"error": "NotFound", "message": "s3://b/k: no such file"}
        connection.answer(json.dumps(body).encode(), "404 Not Found")

    call = Call("GET", "/v1/status", "s3://b/k", "status s3://b/k", {"path": "s3://b/k"})
    with pytest.raises(errors.NotFound, match="no such file"):
        client_for(serve(not_found)).send(call)


def test_the_client_s_deadline_goes_over_the_lean_exchange_and_a_504_comes_back(
    serve: Callable[[Script], Server], client_for: Callable[[Server], WorkerClient]
) -> None:
    def deadline_exceeded(connection: Connection, server: Server) -> None:
        server.read(connection)
        body = {"error": "DeadlineExceeded", "message": "the request's deadline of 54s"}
        connection.answer(json.dumps(body).encode(), "504 Gateway Timeout")

    server = serve(deadline_exceeded)
    call = Call("GET", "/v1/status", "s3://b/k", "status s3://b/k", {"path": "s3://b/k"})
    with pytest.raises(TimeoutError, match="deadline of 54s"):
        client_for(server).send(call)
    # The default dora.user.client.timeout (60s) less a second for the answer's way back.
    assert [r.headers["x-dora-timeout-ms"] for r in server.requests] == ["59000"]


def test_an_unresponsive_owner_is_not_asked_again_and_the_next_worker_serves(
    serve: Callable[[Script], Server],
) -> None:
    gone, alive = serve(stopped), serve(json_answers)
    options = ClientOptions.resolve(
        client_config(
            "dora.user.client.connect.timeout=200ms", workers=f"{gone.address},{alive.address}"
        )
    )
    client = WorkerClient(options)
    try:
        key = next(
            k for k in (f"s3://b/k{i}" for i in range(100)) if client.ring.owner(k) == gone.address
        )
        call = Call("GET", "/v1/status", key, f"status {key}", {"path": key})
        assert client.send(call).worker == alive.address
        # One request and one probe: no blind second try on the stopped worker.
        assert [r.target for r in gone.requests][1:] == ["/healthz"]
        assert len(gone.requests) == 2
        stats = client.counters.snapshot()
        assert (stats.unresponsive, stats.failovers, stats.unreachable) == (1, 1, {gone.address: 1})
    finally:
        assert client.sync.lean is not None
        if (http := client.sync.lean.peek()) is not None:
            http.close()
