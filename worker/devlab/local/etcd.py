"""A local etcd server (Debian's ``etcd`` binary) on free loopback ports, for the demo, the
benchmark and the tests, over TLS with client certificates when asked. Started by
:meth:`LocalEtcd.start`, stopped by PID."""

from __future__ import annotations

import shutil
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from worker.devlab.local.s3 import free_port
from worker.devlab.local.server import Launcher, LocalServer

# Idle watches hear from etcd this often, so a silent stream means a dead etcd (the default,
# ten minutes, is meant for long-lived clients that do not care).
PROGRESS_INTERVAL = "2s"


def etcd_binary() -> str:
    """The ``etcd`` binary on PATH (Debian: ``apt-get install etcd-server``)."""
    found = shutil.which("etcd")
    if found is None:
        raise RuntimeError("the etcd binary is missing: apt-get install etcd-server")
    return found


@dataclass(frozen=True)
class EtcdTls:
    """PEM files of an etcd that serves clients over TLS and requires their certificates: its
    certificate (for its address, and for client use too: etcd's grpc-gateway calls etcd
    itself as a client) and key, the CA that signs the client certificates it takes, and a
    client certificate and key its readiness is checked with. Immutable."""

    cert: Path
    key: Path
    ca: Path
    client_cert: Path
    client_key: Path

    def args(self) -> list[str]:
        return [
            f"--cert-file={self.cert}",
            f"--key-file={self.key}",
            f"--trusted-ca-file={self.ca}",
            "--client-cert-auth",
        ]

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.client_cert), str(self.client_key))
        return context


class LocalEtcd(LocalServer):
    """One single-member etcd on ``host`` (127.0.0.1 by default), over TLS with ``tls``.
    Restartable on the same ports and data (to test outages); usable as a context manager.
    Not thread-safe."""

    name = "etcd"
    log_name = "etcd.log"
    poll_seconds = 0.05

    def __init__(
        self,
        data_dir: Path,
        host: str = "127.0.0.1",
        launcher: Launcher = list,
        tls: EtcdTls | None = None,
    ) -> None:
        super().__init__(data_dir, host, launcher)
        self.client_port = free_port()
        self.peer_port = free_port()
        self.tls = tls

    @property
    def endpoint(self) -> str:
        scheme = "http" if self.tls is None else "https"
        return f"{scheme}://{self.host}:{self.client_port}"

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
            *(() if self.tls is None else self.tls.args()),
        ]
        # A restart appends to the log of the runs before it.
        self._launch(args, timeout, append=True)
        return self

    def _ready(self) -> bool:
        context = None if self.tls is None else self.tls.client_context()
        try:
            with urllib.request.urlopen(
                self.endpoint + "/health", timeout=1, context=context
            ) as answer:
                return b'"true"' in answer.read()
        except (urllib.error.URLError, OSError):
            return False
