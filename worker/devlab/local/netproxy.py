"""A TCP proxy (on 127.0.0.1 unless told otherwise) that puts a slower, observable, breakable
network between a client and a server: the link between a worker and its object store in
reliability tests, benchmarks, ``dora demo --ufs-latency`` and the lab's pipeline bench.

It adds latency, counts connections, bytes and HTTP/1.x requests (method, target, headers, so
a test can count ranged GETs), and can **pause** (the server seems hung: connections are
accepted, nothing moves) or **cut** (every open connection is reset) without touching the
server.

Latency model. Object-store latency is mostly time to first byte: each request waits a round
trip plus the store's own think time before its answer starts, while a long answer then streams
at full speed. The proxy models a link whose round trip is ``latency`` seconds: every chunk, in
either direction, is held ``latency / 2`` after it arrives (a one-way propagation delay), and a
new connection waits one full ``latency`` before it reaches the server (the TCP handshake). So
a request on a kept-alive connection gets its first answer byte ``latency`` later than without
the proxy, a request on a new connection ``2 * latency`` later, and a streamed body is shifted
but not slowed (chunks in flight overlap their delays, as bytes on a long link do; at most
``window`` bytes are in flight per direction, like a TCP window).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections import deque
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")
CHUNK = 256 << 10
MAX_HEAD = 64 << 10


@dataclass(frozen=True)
class HttpRequest:
    """One HTTP/1.x request head seen on its way to the server; header names in lower case."""

    method: str
    target: str
    headers: Mapping[str, str]

    @property
    def range(self) -> str | None:
        """The ``Range`` header, if any."""
        return self.headers.get("range")


@dataclass(frozen=True)
class ProxyStats:
    """Counts since the proxy started (or since :meth:`TcpProxy.reset_counts`).

    ``bytes_up`` went client → server, ``bytes_down`` server → client; ``requests`` counts HTTP
    request heads (0 for other protocols); ``resets`` counts connections reset by ``cut()``."""

    connections: int
    open_connections: int
    requests: int
    bytes_up: int
    bytes_down: int
    resets: int


class HttpRequestParser:
    """Finds HTTP/1.x request heads in a client → server byte stream fed in arbitrary pieces,
    skipping bodies framed by ``Content-Length`` or chunked encoding. A stream that is not HTTP
    stops being parsed (it is still forwarded). Not thread-safe: one per connection."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._state = "head"
        self._skip = 0  # body bytes still to pass over

    def feed(self, data: bytes) -> list[HttpRequest]:
        """The requests whose heads complete within ``data``."""
        if self._state == "opaque":
            return []
        self._buffer += data
        found: list[HttpRequest] = []
        while self._step(found):
            pass
        return found

    def _step(self, found: list[HttpRequest]) -> bool:
        """Consume one element (head, body span, chunk-size line); False when more bytes are
        needed."""
        if self._skip:
            taken = min(self._skip, len(self._buffer))
            del self._buffer[:taken]
            self._skip -= taken
            return bool(taken) and not self._skip
        if self._state == "head":
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > MAX_HEAD:
                    self._opaque()
                return False
            head = bytes(self._buffer[:end])
            del self._buffer[: end + 4]
            request = _parse_head(head)
            if request is None:
                self._opaque()
                return False
            found.append(request)
            self._frame_body(request.headers)
            return True
        line_end = self._buffer.find(b"\r\n")
        if line_end < 0:
            return False
        line = bytes(self._buffer[:line_end])
        del self._buffer[: line_end + 2]
        if self._state == "chunk-size":
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                self._opaque()
                return False
            if size == 0:
                self._state = "trailer"
            else:
                self._skip = size + 2  # the chunk and its CRLF
        elif not line:  # "trailer": an empty line ends the message
            self._state = "head"
        return True

    def _frame_body(self, headers: Mapping[str, str]) -> None:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._state = "chunk-size"
            return
        length = headers.get("content-length", "0").strip()
        if not length.isdigit():
            self._opaque()
            return
        self._skip = int(length)

    def _opaque(self) -> None:
        self._state = "opaque"
        self._buffer.clear()
        self._skip = 0


def _parse_head(head: bytes) -> HttpRequest | None:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[0].isalpha():
        return None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            return None
        headers[name.strip().lower()] = value.strip()
    return HttpRequest(parts[0], parts[1], headers)


class _Link:
    """Both sockets of one proxied connection, so ``cut()`` can reset them."""

    def __init__(self, client: asyncio.StreamWriter) -> None:
        self.writers = [client]

    def reset(self) -> None:
        for writer in self.writers:
            sock = writer.get_extra_info("socket")
            if sock is not None:
                # Linger 0: closing sends RST, as a crashed peer or a middlebox would.
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()


class TcpProxy:
    """Forwards TCP connections from ``<host>:<port>`` (``127.0.0.1`` unless ``host`` names
    another address of this machine) to ``target``, with the latency model of this module,
    counts, pause and cut.

    ``start()`` runs an asyncio loop on a daemon thread; ``stop()`` (or leaving a ``with``
    block) closes the listener, resets open connections and joins the thread. Thread-safe:
    every public method may be called from any thread. ``latency`` may be changed at any time;
    it applies to bytes that arrive afterwards.
    """

    def __init__(
        self,
        target_host: str,
        target_port: int,
        latency: float = 0.0,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        window: int = 4 << 20,
        keep_requests: int = 100_000,
    ) -> None:
        if latency < 0:
            raise ValueError(f"latency={latency!r}: expected seconds >= 0")
        self.target = (target_host, target_port)
        self.latency = latency
        self.port = port
        self.host = host
        self._window_chunks = max(1, window // CHUNK)
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(ProxyStats.__dataclass_fields__, 0)
        self._requests: deque[HttpRequest] = deque(maxlen=keep_requests)
        self._links: set[_Link] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._flowing: asyncio.Event | None = None

    @classmethod
    def to_url(cls, url: str, latency: float = 0.0) -> TcpProxy:
        """A proxy (not started) in front of the server of an ``http://host:port`` URL."""
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise ValueError(f"{url!r}: expected http://host:port")
        return cls(parts.hostname, parts.port, latency)

    @property
    def url(self) -> str:
        """``http://<host>:<port>``: the address to give clients instead of the server's."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> TcpProxy:
        """Listen and forward; returns self. Raises OSError if the port cannot be bound."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="netproxy", daemon=True)
        self._thread.start()
        try:
            self._run(self._listen())
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Close the listener, reset every open connection, stop the loop. Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None
        if loop.is_running():
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    def pause(self) -> None:
        """Stop moving bytes both ways and hold new connections before they reach the server:
        to clients, a hung server. Bytes keep arriving until a window is full."""
        self._run(self._set_flowing(False))

    def resume(self) -> None:
        """Move bytes again; what was held is delivered."""
        self._run(self._set_flowing(True))

    def cut(self) -> int:
        """Reset every open connection (both ends get RST); the number reset. New connections
        are served as usual."""
        return self._run(self._cut())

    def stats(self) -> ProxyStats:
        with self._lock:
            return ProxyStats(**self._counts)

    def requests(self) -> list[HttpRequest]:
        """The HTTP requests seen, oldest first (the last ``keep_requests`` of them)."""
        with self._lock:
            return list(self._requests)

    def reset_counts(self) -> None:
        """Zero the counts and forget the requests seen (open connections stay counted open)."""
        with self._lock:
            opened = self._counts["open_connections"]
            self._counts = dict.fromkeys(self._counts, 0)
            self._counts["open_connections"] = opened
            self._requests.clear()

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- on the loop thread --------------------------------------------------------------------

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        loop = self._loop
        if loop is None:
            coroutine.close()
            raise RuntimeError("the proxy is not running")
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    async def _listen(self) -> None:
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._cut(count=False)
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _set_flowing(self, flowing: bool) -> None:
        assert self._flowing is not None
        if flowing:
            self._flowing.set()
        else:
            self._flowing.clear()

    async def _cut(self, count: bool = True) -> int:
        links = list(self._links)
        for link in links:
            link.reset()
        if count:
            self._add("resets", len(links))
        return len(links)

    def _add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection: wait out the handshake, connect to the target, pipe both
        ways until both directions have ended."""
        link = _Link(writer)
        self._links.add(link)
        self._add("connections")
        self._add("open_connections")
        try:
            await self._wait_flowing()
            await asyncio.sleep(self.latency)
            try:
                up_reader, up_writer = await asyncio.open_connection(*self.target)
            except OSError:
                link.reset()  # the server refused: so does the proxy
                return
            link.writers.append(up_writer)
            parser = HttpRequestParser()
            await asyncio.gather(
                self._pipe(reader, up_writer, "bytes_up", parser, link),
                self._pipe(up_reader, writer, "bytes_down", None, link),
            )
        except asyncio.CancelledError:
            # stop(): end quietly (asyncio logs a connection task that ends cancelled).
            link.reset()
        finally:
            self._links.discard(link)
            self._add("open_connections", -1)
            for one in link.writers:
                one.close()  # flushes what is buffered; a no-op after a reset

    async def _wait_flowing(self) -> None:
        assert self._flowing is not None
        await self._flowing.wait()

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        counter: str,
        parser: HttpRequestParser | None,
        link: _Link,
    ) -> None:
        """Copy one direction, each chunk held until half the latency has passed since it
        arrived; at most ``window`` bytes in flight. EOF is passed on as a half close, a reset
        as a reset of both ends."""
        loop = asyncio.get_running_loop()
        flight: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue(self._window_chunks)

        async def receive() -> None:
            try:
                while data := await reader.read(CHUNK):
                    self._account(counter, data, parser)
                    await flight.put((loop.time() + self.latency / 2, data))
            except OSError:
                link.reset()
            await flight.put(None)

        async def send() -> None:
            while (item := await flight.get()) is not None:
                due, data = item
                if due > loop.time():
                    await asyncio.sleep(due - loop.time())
                await self._wait_flowing()
                writer.write(data)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()

        receiving = asyncio.ensure_future(receive())
        try:
            await send()
        except OSError:
            link.reset()  # the receiving end is gone: so is the connection
        finally:
            receiving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await receiving

    def _account(self, counter: str, data: bytes, parser: HttpRequestParser | None) -> None:
        requests = parser.feed(data) if parser is not None else []
        with self._lock:
            self._counts[counter] += len(data)
            self._counts["requests"] += len(requests)
            self._requests.extend(requests)
