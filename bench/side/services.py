"""The servers every contender runs against: one SeaweedFS, one delaying and counting TCP proxy
in front of it (in its own process, so its event loop does not share a GIL with the clients
being timed), and one real ``dora worker start`` process whose UFS is that proxy.

A :class:`Scene` starts all three and stops them by PID; :class:`SceneInfo` is the plain,
picklable description that client processes need to connect.
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.devlab.local.netproxy import ProxyStats, TcpProxy
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3

BUCKET = "bench"
DORA = str(Path(sys.executable).with_name("dora"))


@dataclass(frozen=True)
class SceneInfo:
    """What a client needs: the proxied S3 endpoint, the worker, the local copy of the data and
    where per-process caches go. Picklable."""

    s3_endpoint: str
    worker_address: str
    bucket: str
    local_root: str
    cache_root: str

    def s3_options(self) -> dict[str, Any]:
        """s3fs options for the proxied endpoint, every fsspec instance cache off."""
        return {
            "endpoint_url": self.s3_endpoint,
            "key": ACCESS_KEY,
            "secret": SECRET_KEY,
            "skip_instance_cache": True,
        }


def _serve_proxy(target_port: int, conn: multiprocessing.connection.Connection) -> None:
    """The proxy process: forward to ``target_port`` and answer commands until ``stop``."""
    proxy = TcpProxy("127.0.0.1", target_port).start()
    conn.send(proxy.port)
    try:
        while True:
            command, argument = conn.recv()
            if command == "latency":
                proxy.latency = float(argument)
                conn.send(None)
            elif command == "reset":
                proxy.reset_counts()
                conn.send(None)
            elif command == "stats":
                conn.send(proxy.stats())
            else:
                break
    finally:
        proxy.stop()
        conn.send(None)


class ProxyProcess:
    """A :class:`worker.devlab.local.netproxy.TcpProxy` in a child process, driven through a pipe.
    Not thread-safe."""

    def __init__(self, target_port: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self.process = context.Process(target=_serve_proxy, args=(target_port, child), daemon=True)
        self.process.start()
        self.port: int = self._conn.recv()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_latency(self, seconds: float) -> None:
        self._call("latency", seconds)

    def reset_counts(self) -> None:
        self._call("reset")

    def stats(self) -> ProxyStats:
        stats: ProxyStats = self._call("stats")
        return stats

    def _call(self, command: str, argument: object = None) -> Any:
        self._conn.send((command, argument))
        return self._conn.recv()

    def stop(self) -> None:
        if self.process.is_alive():
            self._conn.send(("stop", None))
            self._conn.recv()
            self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


class WorkerProcess:
    """One ``dora worker start`` process on a free port, stopped by PID (SIGTERM, then
    SIGKILL). Raises RuntimeError if it does not come up."""

    def __init__(self, work: Path, defines: list[str], timeout: float = 120.0) -> None:
        work.mkdir(parents=True, exist_ok=True)
        state = work / "state.json"
        self.log_path = work / "worker.log"
        args = [
            DORA,
            "worker",
            "start",
            "-Ddora.worker.http.port=0",
            f"-Ddora.work.dir={work}",
            *(f"-D{d}" for d in defines),
            "--state-file",
            str(state),
        ]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not state.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the worker did not start; see {self.log_path}")
            time.sleep(0.05)
        self.address = f"127.0.0.1:{json.loads(state.read_text())['port']}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Scene:
    """SeaweedFS, the proxy and the worker, with a local copy of every object uploaded.

    Objects are uploaded straight to SeaweedFS (not through the proxy, so setting up is neither
    delayed nor counted). Use as a context manager; not thread-safe.
    """

    def __init__(self, worker_defines: list[str], root: Path | None = None) -> None:
        self.root = root or Path(tempfile.mkdtemp(prefix="dora-side-bench-"))
        self.worker_defines = worker_defines
        self.local = self.root / "local"
        self.caches = self.root / "caches"
        self.s3: LocalS3 | None = None
        self.proxy: ProxyProcess | None = None
        self.worker: WorkerProcess | None = None
        self._direct: Any = None

    def start(self) -> Scene:
        self.local.mkdir(parents=True, exist_ok=True)
        self.caches.mkdir(parents=True, exist_ok=True)
        try:
            self.s3 = LocalS3(self.root / "weed", buckets=(BUCKET,)).start()
            self.proxy = ProxyProcess(self.s3.ports["s3.port"])
            ufs = [
                f"dora.ufs.s3.endpoint={self.proxy.url}",
                f"dora.ufs.s3.access.key.id={ACCESS_KEY}",
                f"dora.ufs.s3.secret.access.key={SECRET_KEY}",
                f"dora.worker.ufs.roots=s3://{BUCKET}",
            ]
            self.worker = WorkerProcess(self.root / "worker", ufs + self.worker_defines)
            self._direct = self.s3.client()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def info(self) -> SceneInfo:
        assert self.proxy is not None and self.worker is not None
        return SceneInfo(
            self.proxy.url, self.worker.address, BUCKET, str(self.local), str(self.caches)
        )

    def upload_file(self, key: str, local: Path) -> None:
        """Put ``local`` as ``key`` and keep it as the local copy ``<local>/<key>``."""
        copy = self.local / key
        copy.parent.mkdir(parents=True, exist_ok=True)
        if local != copy:
            shutil.copyfile(local, copy)
        self._direct.put_file(str(copy), f"{BUCKET}/{key}")

    def upload_many(self, items: dict[str, bytes]) -> None:
        """Small objects, written locally and put in parallel."""
        for key, data in items.items():
            copy = self.local / key
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(data)
        self._direct.put(
            [str(self.local / key) for key in items], [f"{BUCKET}/{key}" for key in items]
        )

    def set_latency_ms(self, ms: int) -> None:
        assert self.proxy is not None
        self.proxy.set_latency(ms / 1000)

    def stop(self) -> None:
        """Stop the worker, the proxy and SeaweedFS by PID; remove the scratch directory."""
        for stop in (self.worker, self.proxy, self.s3):
            if stop is not None:
                stop.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Scene:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` so far (from /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
