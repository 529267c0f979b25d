"""The one harness for real worker processes (``dora worker start``) in integration tests: start
one with ``-D`` settings, wait for the state file it writes once it serves, call it over HTTP,
read its log and its metrics, stop it by PID (SIGTERM, graceful) or kill it (SIGKILL, a crash).

The subjects' own kinds build on it: several processes on one port
(:class:`tests.integration.worker.procs_support.MultiWorker`), a member of an etcd cluster
(:class:`tests.integration.cluster.cluster_support.ClusterWorker`). A worker served from a thread
of the test process, so that a test can reach its service, is
:func:`tests.integration.inprocess.serving`."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

DORA = str(Path(sys.executable).with_name("dora"))


def wait_for(
    done: Callable[[], object],
    check: Callable[[], None] = lambda: None,
    what: str = "condition not met in time",
    seconds: float = 90,
) -> None:
    """Poll ``done`` until it is true, calling ``check`` (which asserts) between polls."""
    deadline = time.monotonic() + seconds
    while not done():
        check()
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


class WorkerProcess:
    """One ``dora worker start`` process over ``work`` (its work dir, log and state file).

    ``port`` 0 lets the worker take a free port (its state file says which); a fixed port keeps
    its address across a stop and a :meth:`start` (a cluster member that comes back as itself).
    With ``start`` False the process starts on :meth:`start`. Not thread-safe: one test drives it.
    """

    def __init__(
        self, work: Path, *defines: str, port: int = 0, start: bool = True, wait_s: float = 60
    ) -> None:
        self.work = work
        self.state = work / "state.json"
        self.log_path = work / "worker.log"
        self.wait_s = wait_s
        self.args = [DORA, "worker", "start", f"-Ddora.worker.http.port={port}",
                     f"-Ddora.work.dir={work}", *(f"-D{d}" for d in defines),
                     "--state-file", str(self.state)]  # fmt: skip
        self.port = port
        self.scheme = "http"
        self.address = f"127.0.0.1:{port}"
        self.http = httpx.Client(base_url=f"http://{self.address}", timeout=30)
        self.process: subprocess.Popen[bytes]
        if start:
            self.start()

    def start(self) -> WorkerProcess:
        """Start the process and wait until it serves (its state file names its PID)."""
        self.work.mkdir(parents=True, exist_ok=True)
        self.state.unlink(missing_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(self.state.exists, self._alive, "no state file: the worker did not start",
                     self.wait_s)  # fmt: skip
        except BaseException:
            self.kill()  # a worker that failed to come up is still stopped by PID
            raise
        info = json.loads(self.state.read_text())
        assert info["pid"] == self.process.pid
        self.port, self.scheme = int(info["port"]), str(info["scheme"])
        self.address = f"{info['host']}:{self.port}"
        self.http.close()
        self.http = httpx.Client(base_url=f"http://{self.address}", timeout=30)
        return self

    def _alive(self) -> None:
        assert self.process.poll() is None, self.log()

    def url(self, host: str = "127.0.0.1") -> str:
        """The worker's base URL at ``host`` (https when it serves TLS)."""
        return f"{self.scheme}://{host}:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 90) -> int:
        """SIGTERM by PID (graceful: in-flight requests finish, state is saved); the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL by PID (a crash: nothing is saved, a cluster lease lapses on its own)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def metric(self, name: str, labels: str = "") -> float:
        """A sample of the worker's /metrics (0 when absent)."""
        text = self.http.get("/metrics").text
        found = re.search(rf"^{re.escape(name)}{re.escape(labels)} (\S+)$", text, re.MULTILINE)
        return float(found.group(1)) if found else 0.0

    def status(self, uri: str, revision: int = 0) -> httpx.Response:
        headers = {"X-Dora-Revision": str(revision)} if revision else {}
        return self.http.get("/v1/status", params={"path": uri}, headers=headers)


def dora_fs(worker: WorkerProcess, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``dora fs ARGS --worker`` this worker, as a user types it."""
    return subprocess.run(
        [DORA, "fs", *args, "--worker", worker.address], capture_output=True, check=False
    )
