"""Three real worker processes (``dora worker start``) fronting one directory: keys spread as
the ring says, and reads go on with correct bytes when workers die (failover, then fallback)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.worker.client.conftest import client_config
from worker.client import DoraFileSystem

pytestmark = pytest.mark.integration


@dataclass
class WorkerProcess:
    process: subprocess.Popen[bytes]
    state_file: Path
    name: str = ""

    def wait_listening(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.state_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker did not start; see {self.state_file}.log")
            time.sleep(0.05)
        state = json.loads(self.state_file.read_text())
        assert state["pid"] == self.process.pid
        self.name = f"{state['host']}:{state['port']}"

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, sig)
            self.process.wait(timeout=30)


def start_worker(base: Path, index: int, data_dir: Path) -> WorkerProcess:
    work = base / f"worker-{index}"
    work.mkdir()
    state = work / "state.json"
    log = (work / "state.json.log").open("wb")
    dora = str(Path(sys.executable).with_name("dora"))
    process = subprocess.Popen(
        [
            dora,
            "worker",
            "start",
            "-Ddora.worker.http.port=0",
            f"-Ddora.worker.ufs.roots=file://{data_dir}",
            f"-Ddora.work.dir={work}",
            "--state-file",
            str(state),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={k: v for k, v in os.environ.items() if not k.startswith("DORA_")},
    )
    log.close()
    return WorkerProcess(process, state)


@pytest.fixture
def cluster(tmp_path: Path, data_dir: Path) -> Iterator[list[WorkerProcess]]:
    workers = [start_worker(tmp_path, i, data_dir) for i in range(3)]
    try:
        for worker in workers:
            worker.wait_listening()
        yield workers
    finally:
        for worker in workers:
            worker.stop()


def client(workers: list[WorkerProcess], *defines: str) -> DoraFileSystem:
    names = ",".join(w.name for w in workers)
    return DoraFileSystem(config=client_config(*defines, workers=names), skip_instance_cache=True)


def files(data_dir: Path, count: int) -> dict[str, bytes]:
    contents = {}
    for i in range(count):
        data = os.urandom(20_000 + i)
        (data_dir / f"part-{i:03d}.bin").write_bytes(data)
        contents[f"file://{data_dir}/part-{i:03d}.bin"] = data
    return contents


def cached_bytes(worker: WorkerProcess, uri: str) -> int:
    answer = httpx.get(f"http://{worker.name}/v1/status", params={"path": uri}, timeout=10)
    answer.raise_for_status()
    return int(answer.json()["cached_bytes"])


def test_keys_spread_across_workers_as_the_ring_says(
    cluster: list[WorkerProcess], data_dir: Path
) -> None:
    fs = client(cluster)
    contents = files(data_dir, 45)
    owners = Counter()
    for uri, data in contents.items():
        assert fs.cat_file(uri) == data
        owners[fs.worker_for(uri)] += 1
    assert set(owners) == {w.name for w in cluster}
    assert min(owners.values()) >= 5
    for uri in list(contents)[:15]:
        holders = [w.name for w in cluster if cached_bytes(w, uri) > 0]
        assert holders == [fs.worker_for(uri)]
    assert fs.fallback_stats().failovers == 0


def test_reads_go_on_when_workers_die(cluster: list[WorkerProcess], data_dir: Path) -> None:
    fs = client(cluster, "dora.user.client.read.chunk.size=8KB")
    contents = files(data_dir, 30)
    errors: list[BaseException] = []
    reads = Counter()
    stop = threading.Event()

    def read_forever() -> None:
        while not stop.is_set():
            for uri, data in contents.items():
                try:
                    assert fs.cat_file(uri) == data, f"wrong bytes for {uri}"
                    reads["ok"] += 1
                except BaseException as exc:  # noqa: BLE001 — reported by the test below
                    errors.append(exc)
                    return

    reader = threading.Thread(target=read_forever)
    reader.start()
    time.sleep(0.5)
    victim = cluster[1]
    victim.stop(signal.SIGKILL)  # a crash, mid-run
    time.sleep(1.0)
    stop.set()
    reader.join(timeout=60)
    assert not errors, errors
    stats = fs.fallback_stats()
    assert stats.failovers > 0
    assert stats.unreachable.get(victim.name, 0) >= 1
    assert stats.ufs_fallbacks == 0
    owned_by_victim = [u for u in contents if fs.worker_for(u) == victim.name]
    assert owned_by_victim
    for uri in owned_by_victim:
        assert fs.cat_file(uri) == contents[uri]

    for worker in cluster:
        worker.stop(signal.SIGKILL)
    for uri, data in list(contents.items())[:5]:
        assert fs.cat_file(uri) == data  # no worker left: straight from the UFS
    assert fs.fallback_stats().ufs_fallbacks >= 5


def test_a_forked_child_reads_through_the_same_filesystem(
    cluster: list[WorkerProcess], data_dir: Path
) -> None:
    fs = client(cluster)
    contents = files(data_dir, 6)
    for uri, data in contents.items():
        assert fs.cat_file(uri) == data  # the parent's pool now holds connections
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        ok = False
        try:
            ok = all(fs.cat_file(uri) == data for uri, data in contents.items())
        finally:
            os.write(write_end, b"ok" if ok else b"bad")
            os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 10)
    os.waitpid(child, 0)
    assert answer == b"ok"
    for uri, data in contents.items():
        assert fs.cat_file(uri) == data  # the parent's connections still work
