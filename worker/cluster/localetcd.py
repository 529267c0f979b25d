"""A local etcd server (Debian's ``etcd`` binary) on free loopback ports, for the demo, the
benchmark and the tests. Started by :meth:`LocalEtcd.start`, stopped by PID."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from worker.locals3 import free_port

# Idle watches hear from etcd this often, so a silent stream means a dead etcd (the default,
# ten minutes, is meant for long-lived clients that do not care).
PROGRESS_INTERVAL = "2s"


def etcd_binary() -> str:
    """The ``etcd`` binary on PATH (Debian: ``apt-get install etcd-server``)."""
    found = shutil.which("etcd")
    if found is None:
        raise RuntimeError("the etcd binary is missing: apt-get install etcd-server")
    return found


class LocalEtcd:
    """One single-member etcd on 127.0.0.1. Restartable on the same ports and data (to test
    outages); usable as a context manager. Not thread-safe."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.client_port = free_port()
        self.peer_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    def start(self, timeout: float = 30.0) -> LocalEtcd:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        peer = f"http://127.0.0.1:{self.peer_port}"
        args = [
            etcd_binary(),
            "--name=dora",
            f"--data-dir={self.data_dir / 'data'}",
            f"--listen-client-urls={self.endpoint}",
            f"--advertise-client-urls={self.endpoint}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=dora={peer}",
            f"--experimental-watch-progress-notify-interval={PROGRESS_INTERVAL}",
            "--log-level=warn",
        ]
        log = (self.data_dir / "etcd.log").open("ab")
        self.process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"etcd exited early; see {self.data_dir / 'etcd.log'}")
            try:
                with urllib.request.urlopen(self.endpoint + "/health", timeout=1) as answer:
                    if b'"true"' in answer.read():
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"etcd did not become ready in {timeout}s")

    def stop(self) -> None:
        """Stop etcd by PID (SIGTERM, then SIGKILL) and reap it."""
        if self.process is None or self.process.poll() is not None:
            return
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.wait()

    def kill(self) -> None:
        """SIGKILL etcd (a crash) and reap it."""
        if self.process is None or self.process.poll() is not None:
            return
        self._signal(signal.SIGKILL)
        self.process.wait()

    def _signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, sig)

    def __enter__(self) -> LocalEtcd:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
