"""Worker processes joined through one real etcd, for the cluster integration tests."""

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.s3 import free_port

DORA = str(Path(sys.executable).with_name("dora"))
LEASE_TTL_S = 3


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


class ClusterWorker:
    """One ``dora worker start`` process on a fixed port (so a restart is the same member),
    sync interval -1 (only the feed, never a timer, makes it re-check), a short lease."""

    def __init__(self, work: Path, data: Path, etcd: LocalEtcd, *defines: str) -> None:
        self.work = work
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.args = [
            DORA, "worker", "start", f"-Ddora.work.dir={work}",
            f"-Ddora.worker.http.port={self.port}", f"-Ddora.worker.ufs.roots=file://{data}",
            f"-Ddora.cluster.etcd.endpoints={etcd.endpoint}",
            f"-Ddora.cluster.lease.ttl={LEASE_TTL_S}s", "-Ddora.cluster.etcd.timeout=1s",
            "-Ddora.user.file.metadata.sync.interval=-1",
            "-Ddora.worker.metastore.flush.interval=50ms",
            *(f"-D{d}" for d in defines), "--state-file", str(work / "state.json"),
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=f"http://{self.address}", timeout=30)

    def start(self) -> "ClusterWorker":
        state = self.work / "state.json"
        state.unlink(missing_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        with (self.work / "worker.log").open("ab") as log:
            self.process = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not state.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise AssertionError((self.work / "worker.log").read_text())
            time.sleep(0.05)
        assert json.loads(state.read_text())["pid"] == self.process.pid
        return self

    def stop(self) -> None:
        """SIGTERM (graceful: leaves the ring, persists its position) and reap."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)

    def kill(self) -> None:
        """SIGKILL (a crash: the lease lapses on its own) and reap."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def metric(self, name: str, labels: str = "") -> float:
        """A sample of the worker's /metrics (0 when absent)."""
        text = self.http.get("/metrics").text
        pattern = rf"^{re.escape(name)}{re.escape(labels)} (\S+)$"
        found = re.search(pattern, text, re.MULTILINE)
        return float(found.group(1)) if found else 0.0

    def status(self, uri: str, revision: int = 0) -> httpx.Response:
        headers = {"X-Dora-Revision": str(revision)} if revision else {}
        return self.http.get("/v1/status", params={"path": uri}, headers=headers)

    def log(self) -> str:
        return (self.work / "worker.log").read_text()
