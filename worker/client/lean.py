"""A lean HTTP/1.1 exchange for the synchronous driver's requests without a body (status,
listings, reads, locations: nearly every call a reader makes).

The worker answers a warm status in about 0.3 ms over the standard library's ``http.client``;
through ``httpx.Client`` (request building, the connection pool, the h11 parser) the same call
takes twice that. This sends such requests with ``http.client`` over one keep-alive connection
per thread and worker, and hands back what the driver would have: an ``httpx.Response`` read in
full, or the httpx exception the client's error policy (:mod:`worker.client.http`) tells apart:

- no connection could be made: ``httpx.ConnectTimeout`` / ``httpx.ConnectError`` (the worker
  never saw the call);
- the connection broke or timed out after the request was sent: ``httpx.ReadTimeout`` /
  ``httpx.ReadError`` / ``httpx.RemoteProtocolError`` (it may have seen it);
- the body broke off after the headers: :class:`~worker.client.flow.BodyCut`.

A kept connection that the worker closed while it was idle (its keep-alive timeout) is seen
before reuse by polling its socket, and replaced, as httpcore does; one idle longer than
:data:`IDLE_S` is replaced anyway (a host that vanished closes nothing).

While no answer has begun, the worker's liveness is checked soon and then every connect
timeout (:mod:`worker.client.liveness`): a worker that answers no probe is
:class:`~worker.client.liveness.Unresponsive`, and the client fails over at once.
"""

from __future__ import annotations

import http.client
import select
import ssl
import threading
import time
from collections.abc import Mapping
from urllib.parse import urlencode

import httpx

from worker.client.flow import BodyCut, ClientExchange
from worker.client.liveness import FIRST_PROBE_S, Unresponsive, alive

_SCHEMES = ("http://", "https://")
# Kept connections idle longer than this are replaced before use (httpcore's keep-alive expiry).
IDLE_S = 5.0


class LeanHttp:
    """Body-less requests to ``http://`` and ``https://`` workers over ``http.client`` (see the
    module docstring). ``headers`` go with every request (the token); ``connect_timeout`` bounds
    the connect, ``timeout`` every later wait on the socket; ``context`` verifies https://
    workers (and presents the client's certificate).

    Thread-safe: each thread has its own connections (:meth:`close` closes them all). Not
    fork-safe by itself: the driver keeps one per process
    (:class:`~worker.common.forksafe.ProcessLocal`).
    """

    def __init__(
        self,
        headers: Mapping[str, str],
        connect_timeout: float,
        timeout: float,
        context: ssl.SSLContext | None = None,
    ) -> None:
        self._headers = dict(headers)
        self._context = context
        self._connect_timeout = connect_timeout
        self._timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: set[http.client.HTTPConnection] = set()

    @staticmethod
    def takes(request: ClientExchange) -> bool:
        """Whether this exchange can carry ``request``: no body, HTTP or HTTPS."""
        return request.body is None and request.url.startswith(_SCHEMES)

    def exchange(self, request: ClientExchange) -> httpx.Response:
        """Send ``request`` and read the whole answer (raises as the module docstring says)."""
        scheme, _, rest = request.url.partition("://")
        netloc, slash, path = rest.partition("/")
        target = slash + path or "/"
        if request.params:
            target += "?" + urlencode(request.params)
        connection = self._connection(scheme, netloc)
        try:
            connection.request(request.method, target, headers={**self._headers, **request.headers})
            self._await_answer(connection, scheme, netloc)
            answer = connection.getresponse()
        except Unresponsive:
            self._drop(netloc)
            raise
        except TimeoutError as exc:
            self._drop(netloc)
            raise httpx.ReadTimeout(f"no answer from {netloc} in {self._timeout}s") from exc
        except http.client.HTTPException as exc:
            self._drop(netloc)
            raise httpx.RemoteProtocolError(f"{netloc}: {exc!r}") from exc
        except OSError as exc:
            self._drop(netloc)
            raise httpx.ReadError(f"{netloc}: {exc!r}") from exc
        headers = answer.getheaders()
        try:
            body = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            self._drop(netloc)
            cut = httpx.ReadError(f"{netloc}: the body broke off: {exc!r}")
            raise BodyCut(httpx.Response(answer.status, headers=headers), cut) from exc
        if answer.will_close:
            self._drop(netloc)
        else:
            self._local.used[netloc] = time.monotonic()
        return httpx.Response(answer.status, headers=headers, content=body)

    def _await_answer(
        self, connection: http.client.HTTPConnection, scheme: str, netloc: str
    ) -> None:
        """Return once the answer has begun (or the socket closed or failed: reading tells
        which); raise TimeoutError past the read timeout, :class:`Unresponsive` as soon as a
        liveness probe goes unanswered (see the module docstring); an https:// worker is
        probed over TLS with this exchange's context."""
        assert connection.sock is not None
        poller = select.poll()
        poller.register(connection.sock, select.POLLIN)
        deadline = time.monotonic() + self._timeout
        between = min(FIRST_PROBE_S, self._connect_timeout)
        while True:
            remaining = deadline - time.monotonic()
            wait = min(remaining, between)
            if poller.poll(max(0.0, 1000 * wait)):
                return
            if wait >= remaining:
                raise TimeoutError
            if not alive(netloc, self._connect_timeout, self._tls_of(scheme)):
                raise Unresponsive(netloc, self._connect_timeout)
            between = self._connect_timeout

    def _tls_of(self, scheme: str) -> ssl.SSLContext | None:
        """The context an ``https`` worker is reached with (None for ``http``)."""
        if scheme != "https":
            return None
        return self._context or ssl.create_default_context()

    def _connection(self, scheme: str, netloc: str) -> http.client.HTTPConnection:
        # Keyed by host:port alone: one worker has one scheme (its listener's).
        connections: dict[str, http.client.HTTPConnection] = self._local.__dict__.setdefault(
            "connections", {}
        )
        used: dict[str, float] = self._local.__dict__.setdefault("used", {})
        connection = connections.get(netloc)
        if connection is not None:
            idle = time.monotonic() - used.get(netloc, 0.0)
            if connection.sock is not None and idle < IDLE_S and not _closed_by_peer(connection):
                return connection
            self._drop(netloc)
        connection = (
            http.client.HTTPSConnection(
                netloc, timeout=self._connect_timeout, context=self._context
            )
            if scheme == "https"
            else http.client.HTTPConnection(netloc, timeout=self._connect_timeout)
        )
        try:
            connection.connect()
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(
                f"no connection to {netloc} in {self._connect_timeout}s"
            ) from exc
        except OSError as exc:
            raise httpx.ConnectError(f"{netloc}: {exc!r}") from exc
        assert connection.sock is not None
        connection.sock.settimeout(self._timeout)
        connections[netloc] = connection
        with self._lock:
            self._open.add(connection)
        return connection

    def _drop(self, netloc: str) -> None:
        connection = self._local.__dict__.get("connections", {}).pop(netloc, None)
        if connection is not None:
            connection.close()
            with self._lock:
                self._open.discard(connection)

    def close(self) -> None:
        """Close every connection of every thread (a thread's next request opens a new one)."""
        with self._lock:
            connections, self._open = self._open, set()
        for connection in connections:
            connection.close()


def _closed_by_peer(connection: http.client.HTTPConnection) -> bool:
    """An idle kept connection with something to read has been closed by the worker (or holds
    bytes nobody asked for): either way it cannot carry another request."""
    poller = select.poll()
    poller.register(connection.sock, select.POLLIN)
    return bool(poller.poll(0))
