"""Real worker processes (``dora worker start``) fronting one directory: keys spread as the
ring says, reads go on with correct bytes when workers die (failover, then fallback), and a read
the worker cuts because the file changed mid-stream is a version change, not a dead worker."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.worker.client.conftest import client_config, write_outside
from worker.client import ClientStats, DoraFileSystem, VersionMismatch

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


def start_worker(base: Path, index: int, data_dir: Path, *defines: str) -> WorkerProcess:
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
            *(f"-D{define}" for define in defines),
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


class _ChangeOnFirstBytes(httpx.SyncByteStream):
    def __init__(self, stream: httpx.SyncByteStream, change: Callable[[], None]) -> None:
        self.stream = stream
        self.change = change

    def __iter__(self) -> Iterator[bytes]:
        for index, chunk in enumerate(self.stream):
            if index == 0:
                self.change()
            yield chunk

    def close(self) -> None:
        self.stream.close()


class ChangeAfterFirstBytes(httpx.BaseTransport):
    """Real HTTP; runs ``change`` once, when the first bytes of the first read's body arrive
    (the worker has sent its headers and is still streaming)."""

    def __init__(self, change: Callable[[], None]) -> None:
        self.inner = httpx.HTTPTransport()
        self.change = change
        self.reads = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path == "/v1/read":
            self.reads += 1
            if self.reads == 1:
                assert isinstance(response.stream, httpx.SyncByteStream)
                response.stream = _ChangeOnFirstBytes(response.stream, self.change)
        return response

    def close(self) -> None:
        self.inner.close()


def test_a_read_cut_because_the_file_changed_is_a_version_mismatch_over_http(
    tmp_path: Path, data_dir: Path
) -> None:
    worker = start_worker(tmp_path, 0, data_dir, "dora.worker.page.store.page.size=64KB")
    try:
        worker.wait_listening()
        # Far more than the socket buffers and the worker's read-ahead hold: the worker is still
        # fetching pages when the file changes, and cuts the body.
        path = data_dir / "big.bin"
        path.write_bytes(os.urandom(32 << 20))
        uri = f"file://{path}"

        def change() -> None:
            write_outside(path, os.urandom(32 << 20))
            # Another caller syncs the worker before the client asks again.
            answer = httpx.get(
                f"http://{worker.name}/v1/status",
                params={"path": uri, "sync_interval": "0"},
                timeout=30,
            )
            answer.raise_for_status()

        fs = DoraFileSystem(
            transport=ChangeAfterFirstBytes(change),
            config=client_config("dora.user.client.read.chunk.size=64MB", workers=worker.name),
            skip_instance_cache=True,
        )
        with pytest.raises(VersionMismatch):
            fs.cat_file(uri)
        assert fs.fallback_stats() == ClientStats()
        assert fs.cat_file(uri) == path.read_bytes()
    finally:
        worker.stop()
