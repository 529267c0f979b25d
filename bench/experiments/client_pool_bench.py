"""64 threads sharing one ``httpx.Client``, then each with a client of its own (the reliability
harness's ``ThreadClients``), calling a server that only answers ``ok``: how many requests are
cut or hang, and how many connections httpcore's pool closed while a request was on them.

    .venv/bin/python -m bench.experiments.client_pool_bench --seconds 120

The server is uvicorn in a child process on loopback, so no worker code is involved: whatever
is cut here is the client's doing. Each thread sends a GET, a GET and a 150 KB PUT in turn.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpcore
import httpx
from starlette.types import Receive, Scope, Send

from tests.reliability.support import ThreadClients

ROOT = Path(__file__).resolve().parents[2]
THREADS = 64
BODY = b"x" * 150_000


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """An ASGI app answering ``ok`` to every request, after reading its body."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"2")]})  # fmt: skip
    await send({"type": "http.response.body", "body": b"ok"})


def serve() -> tuple[subprocess.Popen[bytes], str]:
    """The app under uvicorn in a child process, on a loopback socket made here; its URL."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(2048)
        command = [sys.executable, "-m", "uvicorn", "bench.experiments.client_pool_bench:app",
                   "--fd", "0", "--log-level", "warning"]  # fmt: skip
        child = subprocess.Popen(command, cwd=ROOT, stdin=sock.fileno())
        return child, f"http://127.0.0.1:{sock.getsockname()[1]}/"


class ActiveCloses:
    """Records each ``close()`` of a pooled connection that a request is using, while entered.
    Thread-safe (list appends)."""

    def __init__(self) -> None:
        self.seen: list[float] = []
        self._close = httpcore.HTTPConnection.close

    def __enter__(self) -> ActiveCloses:
        close, seen = self._close, self.seen

        def counted(connection: httpcore.HTTPConnection) -> None:
            state = getattr(getattr(connection, "_connection", None), "_state", None)
            if state is not None and state.name == "ACTIVE":
                seen.append(time.monotonic())
            close(connection)

        httpcore.HTTPConnection.close = counted  # type: ignore[method-assign, assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        httpcore.HTTPConnection.close = self._close  # type: ignore[method-assign]


def run(url: str, seconds: float, client: Callable[[], httpx.Client]) -> Counter[str]:
    """``THREADS`` threads calling ``url`` for ``seconds``, each through ``client()``."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    stop = threading.Event()

    def loop() -> None:
        http, n = client(), 0
        while not stop.is_set():
            n += 1
            put = n % 3 == 0
            try:
                http.put(url, content=BODY) if put else http.get(url)
                what = "answered"
            except httpx.TransportError as exc:
                what = f"{'PUT' if put else 'GET'} cut ({type(exc).__name__})"
            with lock:
                counts[what] += 1

    threads = [threading.Thread(target=loop) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="per kind of client")
    parser.add_argument("--timeout", type=float, default=10.0, help="the clients' timeout")
    args = parser.parse_args()
    server, url = serve()
    shared, own = httpx.Client(timeout=args.timeout), ThreadClients(args.timeout)
    kinds: list[tuple[str, Callable[[], httpx.Client]]] = [
        ("one shared client", lambda: shared),
        ("a client per thread", own.get),
    ]
    try:
        for name, client in kinds:
            with ActiveCloses() as closes:
                counts = run(url, args.seconds, client)
            answered = counts.pop("answered", 0)
            print(f"{name}: {answered + sum(counts.values())} requests in {args.seconds:g} s, "
                  f"cut: {dict(counts) or 0}; connections closed under a request: "
                  f"{len(closes.seen)}")  # fmt: skip
    finally:
        shared.close()
        own.close()
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
