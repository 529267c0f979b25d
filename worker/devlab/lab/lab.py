"""The lab's servers: SeaweedFS on host ``s3``, etcd on host ``etcd`` and one worker on each
worker host (``w1``, ``w2``, ...), bound to and advertising its host's address as the chart's
DaemonSet does with the node IP, its work and page directories on its host only. Given a
certificate authority, workers and etcd speak TLS only (:mod:`worker.devlab.lab.tls`).

Everything is started and stopped by PID; :meth:`Lab.stop` (also on an error, Ctrl-C or SIGTERM
while :func:`guard` is active) stops the processes and removes the namespaces.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, TracebackType

import httpx

from config import load_config
from worker.client.http import WorkerClient
from worker.client.options import ClientOptions
from worker.devlab.lab.netns import Host, Network
from worker.devlab.lab.tls import Issuer, LabTls
from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.s3 import LocalS3
from worker.keys import build_registry

BUCKET = "lab"
WORKER_PORT = 28080
LEASE_TTL_S = 3
START_TIMEOUT_S = 90
# Short deadlines, so that a fault shows in seconds: a UFS call (retries included) and a
# connect, on the workers and the clients.
WORKER_DEFINES = (
    "dora.user.file.metadata.sync.interval=-1",
    f"dora.cluster.lease.ttl={LEASE_TTL_S}s",
    "dora.cluster.etcd.timeout=1s",
    "dora.ufs.call.deadline=4s",
    "dora.ufs.connect.timeout=1s",
    "dora.ufs.retry.max.attempts=2",
    "dora.worker.metastore.flush.interval=50ms",
)
DORA = str(Path(sys.executable).with_name("dora"))


def _octets(workers: int) -> list[tuple[str, int]]:
    return [("s3", 2), ("etcd", 3), *((f"w{i}", 10 + i) for i in range(1, workers + 1))]


class LabWorker:
    """One worker process on one lab host, on a fixed port (a restart is the same member).
    Not thread-safe."""

    def __init__(
        self, host: Host, logs: Path, defines: Sequence[str], tls: LabTls | None = None
    ) -> None:
        self.host = host
        self.logs = logs
        self.address = f"{host.address}:{WORKER_PORT}"
        self.url = f"{'http' if tls is None else 'https'}://{self.address}"
        self.work = host.private / "work"
        secured = [] if tls is None else tls.worker_defines(host)
        # The token in the environment, not on the command line (which any local user reads).
        self.env = None if tls is None else {**os.environ, **tls.worker_environ()}
        self.args = [
            DORA, "worker", "start", f"-Ddora.work.dir={self.work}",
            f"-Ddora.worker.http.bind.host={host.address}",
            f"-Ddora.worker.http.port={WORKER_PORT}",
            *(f"-D{d}" for d in [*defines, *secured]), "--state-file", str(logs / "state.json"),
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None
        settings = {} if tls is None else tls.http_settings()
        self.http = httpx.Client(base_url=self.url, timeout=30, **settings)

    def launch(self) -> None:
        """Start the process (see :meth:`wait_ready`)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        (self.logs / "state.json").unlink(missing_ok=True)
        subprocess.run(self.host.command(["mkdir", "-p", str(self.work)]), check=True)
        with (self.logs / "worker.log").open("ab") as log:
            self.process = subprocess.Popen(
                self.host.command(self.args), stdout=log, stderr=subprocess.STDOUT, env=self.env
            )

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Wait until the worker answers on its address (RuntimeError naming its log)."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"lab worker {self.address} did not start; see {self.log}")
            time.sleep(0.1)

    def _answers(self) -> bool:
        if not (self.logs / "state.json").exists():
            return False
        try:
            return self.http.get("/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    @property
    def log(self) -> Path:
        return self.logs / "worker.log"

    def stop(self) -> None:
        """SIGTERM (graceful: leaves the ring) and reap; SIGKILL past 30 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL (a crash) and reap."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def served(self) -> float:
        """Bytes this worker has served to readers (from its cache and from the UFS)."""
        return sum(
            self.metric("dora_bytes_served_total", f'{{source="{s}"}}') for s in ("cache", "ufs")
        )

    def metric(self, name: str, labels: str = "") -> float:
        """A sample of the worker's /metrics (0 when absent)."""
        for line in self.http.get("/metrics").text.splitlines():
            if line.startswith(f"{name}{labels} "):
                return float(line.split()[-1])
        return 0.0


class Lab:
    """The hosts and their servers. :meth:`start` brings them up (one line of LabUnavailable
    where namespaces cannot be made), :meth:`stop` takes everything down (idempotent); usable as
    a context manager. With ``tls`` (a certificate authority) workers and etcd speak TLS only,
    and clients carry a token (:mod:`worker.devlab.lab.tls`). Not thread-safe."""

    def __init__(
        self,
        root: Path,
        workers: int = 3,
        defines: Sequence[str] = (),
        tls: Issuer | None = None,
    ) -> None:
        self.root = root
        self.network = Network(root, _octets(workers))
        self.extra = tuple(defines)
        self.issuer = tls
        self.tls: LabTls | None = None
        self.s3: LocalS3 | None = None
        self.etcd: LocalEtcd | None = None
        self.workers: list[LabWorker] = []
        self._clients: list[WorkerClient] = []

    def start(self) -> Lab:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self.network.create()
        hosts = self.network.hosts
        self.s3 = LocalS3(
            self.root / "s3", (BUCKET,), hosts["s3"].address, hosts["s3"].command
        ).start()
        if self.issuer is not None:
            self.tls = LabTls(self.issuer)
        etcd_host = hosts["etcd"]
        etcd_tls = None if self.tls is None else self.tls.etcd(etcd_host)
        self.etcd = LocalEtcd(self.root / "etcd", etcd_host.address, etcd_host.command, etcd_tls)
        self.etcd.start()
        names = [name for name in hosts if name.startswith("w")]
        self.workers = [
            LabWorker(hosts[n], self.root / "logs" / n, self.worker_defines(), self.tls)
            for n in names
        ]
        for worker in self.workers:
            worker.launch()
        for worker in self.workers:
            worker.wait_ready()

    def worker_defines(self) -> list[str]:
        assert self.s3 is not None and self.etcd is not None
        return [
            f"dora.worker.ufs.roots=s3://{BUCKET}",
            f"dora.cluster.etcd.endpoints={self.etcd.endpoint}",
            *self.s3.storage_defines(),
            *WORKER_DEFINES,
            *self.extra,
        ]

    def client_defines(self) -> list[str]:
        """Settings of a client on a lab host: the ring from etcd, the lab's workers as the
        static fallback, short connect and etcd deadlines, no fallback to the UFS (a read
        the workers cannot serve is an error, not bytes from elsewhere). With TLS: the CA,
        the client certificate and the token."""
        assert self.s3 is not None and self.etcd is not None
        return [
            f"dora.cluster.etcd.endpoints={self.etcd.endpoint}",
            "dora.cluster.etcd.timeout=1s",
            f"dora.user.workers={','.join(worker.url for worker in self.workers)}",
            "dora.user.client.connect.timeout=1s",
            "dora.user.client.fallback.to.ufs=false",
            *self.s3.storage_defines(),
            *([] if self.tls is None else self.tls.client_defines()),
        ]

    def client(self, *defines: str) -> WorkerClient:
        """A client in this process with :meth:`client_defines` (and ``defines``). Its ring
        follows the lab's etcd until the lab stops, which ends that: a client left open would
        go on retrying the stopped etcd, and logging it, for the rest of the process."""
        settings = [*self.client_defines(), *defines]
        config = load_config(build_registry(), environ={}, defines=settings)
        client = WorkerClient(ClientOptions.resolve(config))
        self._clients.append(client)
        return client

    @property
    def addresses(self) -> list[str]:
        return [worker.address for worker in self.workers]

    def worker(self, host: str) -> LabWorker:
        """The worker on lab host ``host``."""
        return next(w for w in self.workers if w.host.name == host)

    def worker_at(self, address: str) -> LabWorker:
        """The worker at ``address`` (``host:port``, as the ring names it)."""
        return next(w for w in self.workers if w.address == address)

    def run(
        self, host: str, argv: Sequence[str], timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` on ``host`` to its end (its output captured)."""
        command = self.network.hosts[host].command(argv, cwd=Path.cwd())
        return subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout)

    def probe(
        self, host: str, *ops: dict[str, object], defines: Sequence[str] | None = None
    ) -> list[dict[str, object]]:
        """Run client operations (:mod:`worker.devlab.lab.probe`) in a fresh process on
        ``host``, with the client settings ``defines`` (:meth:`client_defines` when None)."""
        settings = self.client_defines() if defines is None else list(defines)
        request = json.dumps({"defines": settings, "ops": list(ops)})
        done = self.run(host, [sys.executable, "-m", "worker.devlab.lab.probe", request])
        if done.returncode != 0:
            raise RuntimeError(f"probe on {host} failed: {done.stderr[-2000:]}")
        answers: list[dict[str, object]] = json.loads(done.stdout.splitlines()[-1])
        return answers

    def stop(self) -> None:
        """Stop following etcd in this process's clients (:meth:`client`), stop every process
        (workers, etcd, SeaweedFS) by PID, then remove the namespaces."""
        try:
            for client in self._clients:
                client.rings.close()
            self._clients.clear()
            for worker in self.workers:
                worker.stop()
                worker.http.close()
            for server in (self.etcd, self.s3):
                if server is not None:
                    server.stop()
        finally:
            self.network.destroy()

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@contextmanager
def guard() -> Iterator[None]:
    """While active, SIGTERM and SIGHUP raise SystemExit in the main thread (as Ctrl-C raises
    KeyboardInterrupt), so a lab's ``finally`` runs and its namespaces go with it."""

    def leave(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    saved = {sig: signal.signal(sig, leave) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
