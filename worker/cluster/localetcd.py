"""A local etcd server (Debian's ``etcd`` binary) on free loopback ports, for the demo, the
benchmark and the tests. Started by :meth:`LocalEtcd.start`, stopped by PID."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from pathlib import Path

from worker.locals3 import free_port
from worker.localserver import Launcher, LocalServer

# Idle watches hear from etcd this often, so a silent stream means a dead etcd (the default,
# ten minutes, is meant for long-lived clients that do not care).
PROGRESS_INTERVAL = "2s"


def etcd_binary() -> str:
    """The ``etcd`` binary on PATH (Debian: ``apt-get install etcd-server``)."""
    found = shutil.which("etcd")
    if found is None:
        raise RuntimeError("the etcd binary is missing: apt-get install etcd-server")
    return found


class LocalEtcd(LocalServer):
    """One single-member etcd on ``host`` (127.0.0.1 by default). Restartable on the same
    ports and data (to test outages); usable as a context manager. Not thread-safe."""

    name = "etcd"
    log_name = "etcd.log"
    poll_seconds = 0.05

    def __init__(self, data_dir: Path, host: str = "127.0.0.1", launcher: Launcher = list) -> None:
        super().__init__(data_dir, host, launcher)
        self.client_port = free_port()
        self.peer_port = free_port()

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.client_port}"

    def start(self, timeout: float = 30.0) -> LocalEtcd:
        peer = f"http://{self.host}:{self.peer_port}"
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
        # A restart appends to the log of the runs before it.
        self._launch(args, timeout, append=True)
        return self

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.endpoint + "/health", timeout=1) as answer:
                return b'"true"' in answer.read()
        except (urllib.error.URLError, OSError):
            return False
