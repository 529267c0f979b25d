"""Real parts for the reliability scenarios: ``dora worker start`` processes that can be killed,
frozen and restarted on the same work dir, and content that says which version it is."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

DORA = str(Path(sys.executable).with_name("dora"))
RecordFigure = Callable[[str, float, str], None]  # the ``figure`` fixture of tests/conftest.py
START_SECONDS = 60.0


def content(seed: object, size: int) -> bytes:
    """``size`` random bytes fixed by ``seed``: two versions never share a long run."""
    return random.Random(str(seed)).randbytes(size)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Poll ``condition`` until it holds; AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class ThreadClients:
    """An ``httpx.Client`` for each calling thread, made on its first call with ``timeout``
    (seconds); :meth:`close` closes them all. Thread-safe; ``timeout`` set after some clients
    were made applies to them too.

    Threads never share a client, because httpcore's sync connection pool (1.0.9) can close a
    connection under another thread's request: a pass of the pool picks the surplus idle
    connections under its lock (past ``max_keepalive_connections``, 20 by default) but closes
    them after releasing it, and an idle connection it picks may have just been handed to a
    thread that has not sent on it yet. That thread then sends, and its request is cut
    (``ReadError``) or, when the close lands while it waits for the answer, hears nothing
    until its read timeout: another thread's close does not wake a ``poll()``
    (encode/httpcore#1110, no release fixes it). ``python -m bench.experiments.client_pool_bench``:
    64
    threads over one shared client, against a server that only answers ``ok``, lost 23 of
    198,758 requests, each on a connection closed under it; with a client each, none. A pool
    used by one thread has no other thread's pass to race."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._made: list[httpx.Client] = []

    @property
    def timeout(self) -> float:
        return self._timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        with self._lock:
            self._timeout = seconds
            for client in self._made:
                client.timeout = httpx.Timeout(seconds)

    def get(self) -> httpx.Client:
        """The calling thread's client."""
        client: httpx.Client | None = getattr(self._local, "client", None)
        if client is None:
            with self._lock:
                client = httpx.Client(timeout=self._timeout)
                self._made.append(client)
            self._local.client = client
        return client

    def close(self) -> None:
        with self._lock:
            made, self._made = self._made, []
        for client in made:
            client.close()


class Worker:
    """One ``dora worker start`` process over the work dir ``work``, on a free port.

    ``start()`` may be called again after the process died (a restart on the same metastore
    and page dirs). Signals go to the PID only. Not thread-safe, except ``http`` and the REST
    calls over it: each thread gets a client of its own (:class:`ThreadClients`)."""

    def __init__(self, work: Path, *defines: str, conf: Path | None = None) -> None:
        self.work = work
        self.defines = defines
        self.conf = conf
        self.process: subprocess.Popen[bytes] | None = None
        self.clients = ThreadClients(timeout=60)
        self.url = ""
        self.starts = 0

    @property
    def http(self) -> httpx.Client:
        """The calling thread's HTTP client."""
        return self.clients.get()

    @property
    def pid(self) -> int:
        assert self.process is not None, "the worker was never started"
        return self.process.pid

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def address(self) -> str:
        return self.url.removeprefix("http://")

    def start(self) -> Worker:
        self.work.mkdir(parents=True, exist_ok=True)
        state = self.work / "state.json"
        state.unlink(missing_ok=True)
        defines = ["dora.worker.http.port=0", f"dora.work.dir={self.work}", *self.defines]
        args = [DORA, "worker", "start", *(f"-D{d}" for d in defines), "--state-file", str(state)]
        if self.conf is not None:
            args += ["--conf", str(self.conf)]
        with (self.work / "worker.log").open("ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.starts += 1
        deadline = time.monotonic() + START_SECONDS
        while not state.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"the worker did not start:\n{self.log_tail()}")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{json.loads(state.read_text())['port']}"
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        os.kill(self.pid, sig)

    def kill(self) -> None:
        """SIGKILL by PID and reap (a stopped process dies too)."""
        if self.alive():
            self.signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait()

    def stop(self) -> int | None:
        """SIGTERM (after SIGCONT, in case it is frozen); SIGKILL if it does not exit in time.
        The exit code, None if it was never started."""
        if self.process is None:
            return None
        if self.alive():
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.wait()

    def close(self) -> None:
        self.stop()
        self.clients.close()

    def rss_bytes(self) -> int:
        """Resident set size of the worker process, from /proc."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no VmRSS for pid {self.pid}")

    def log_tail(self, lines: int = 40) -> str:
        path = self.work / "worker.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    # -- REST ----------------------------------------------------------------------------------

    def get(self, endpoint: str, **params: str | int) -> httpx.Response:
        return self.http.get(self.url + endpoint, params=params)

    def read(self, path: str, **params: str | int) -> httpx.Response:
        return self.get("/v1/read", path=path, **params)

    def stats(self) -> dict[str, int]:
        answer: dict[str, int] = self.get("/v1/stats").raise_for_status().json()
        return answer

    def metric(self, name: str) -> float:
        """The sum of a Prometheus metric's samples (every label) from ``/metrics``."""
        total = 0.0
        for line in self.get("/metrics").raise_for_status().text.splitlines():
            if line.startswith(name) and line[len(name) : len(name) + 1] in (" ", "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted at ``path`` (root only: skips otherwise), unmounted at
    the end."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    path.mkdir(parents=True, exist_ok=True)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)]
    refused = subprocess.run(mount, capture_output=True, text=True, check=False)
    if refused.returncode != 0:
        pytest.skip(f"mounting a tmpfs was refused: {refused.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
