"""A worker served over real HTTP from a thread of the test process, so that a test can reach
its service (counters, the UFS adapter) while real clients (Spark's JVM, raw sockets) talk to
it; and a count of the bytes the worker reads from its UFS."""

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from worker.api.app import create_app
from worker.server import bind, uvicorn_config
from worker.service import WorkerService


@contextmanager
def serving(service: WorkerService) -> Iterator[int]:
    """Serve ``service`` on a free loopback port (yielded) until the block ends."""
    sock = bind("127.0.0.1", 0)
    # As the worker process serves: its protocol (deadlines, raw UTF-8 request lines).
    server = uvicorn.Server(uvicorn_config(create_app(service), service.config, service))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive(), "the server thread died while starting"
            time.sleep(0.01)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


class UfsReads:
    """Counts the bytes each URI's reads fetched from the UFS, by wrapping the service's UFS
    adapter (the read path and the metadata tiers share that one object)."""

    def __init__(self, service: WorkerService) -> None:
        self.bytes: Counter[str] = Counter()
        self._lock = threading.Lock()
        read = service.ufs.read

        def counted(uri: str, *args: Any, **kwargs: Any) -> bytes:
            data = read(uri, *args, **kwargs)
            with self._lock:
                self.bytes[uri] += len(data)
            return data

        service.ufs.read = counted  # type: ignore[method-assign]

    def under(self, prefix: str) -> int:
        with self._lock:
            return sum(n for uri, n in self.bytes.items() if uri.startswith(prefix))

    def reset(self) -> None:
        with self._lock:
            self.bytes.clear()
