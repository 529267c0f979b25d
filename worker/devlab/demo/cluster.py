"""``dora demo --workers N``: N worker processes and a local etcd acting as one cache.

A file cached by every worker (sync interval -1: none re-checks on its own) is rewritten through
the first; a client that wrote it reads it through each of the others and sees the new bytes at
once, because the change went out on the invalidation feed and the client carries its revision.
Everything started here is stopped by PID before returning.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from config import load_config
from worker.client.http import Call, WorkerClient
from worker.client.options import ClientOptions
from worker.cluster.etcd import Etcd
from worker.cluster.status import cluster_status, format_table
from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.s3 import free_port
from worker.keys import build_registry

START_TIMEOUT_S = 60


def _start_worker(work: Path, data: Path, etcd: LocalEtcd) -> subprocess.Popen[bytes]:
    state = work / "state.json"
    work.mkdir(parents=True)
    args = [
        str(Path(sys.executable).with_name("dora")), "worker", "start",
        f"-Ddora.work.dir={work}", f"-Ddora.worker.http.port={free_port()}",
        f"-Ddora.worker.ufs.roots=file://{data}",
        f"-Ddora.cluster.etcd.endpoints={etcd.endpoint}",
        "-Ddora.user.file.metadata.sync.interval=-1", "--state-file", str(state),
    ]  # fmt: skip
    with (work / "worker.log").open("ab") as log:
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


def _address(work: Path, process: subprocess.Popen[bytes]) -> str:
    state = work / "state.json"
    deadline = time.monotonic() + START_TIMEOUT_S
    while not state.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"a demo worker did not start; see {work / 'worker.log'}")
        time.sleep(0.05)
    return f"127.0.0.1:{json.loads(state.read_text())['port']}"


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_cluster_demo(work_dir: Path, workers: int, say: Callable[[str], None]) -> bool:
    """Run the demo; True if every worker served the rewritten bytes."""
    work_dir.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(dir=work_dir, prefix="cluster-") as tmp,
        contextlib.ExitStack() as cleanup,
    ):
        root = Path(tmp)
        data = root / "data"
        data.mkdir()
        etcd = LocalEtcd(root / "etcd").start()
        cleanup.callback(etcd.stop)
        processes = []
        for index in range(workers):
            process = _start_worker(root / f"worker{index}", data, etcd)
            cleanup.callback(_stop, process)
            processes.append(process)
        names = [_address(root / f"worker{i}", p) for i, p in enumerate(processes)]
        say(
            f"cluster: {workers} workers joined through etcd at {etcd.endpoint}: {', '.join(names)}"
        )
        config = load_config(build_registry(), environ={}, defines=[])
        client = WorkerClient(ClientOptions.resolve(config, workers=names, fallback_to_ufs=False))
        uri = f"file://{data}/table.csv"
        (data / "table.csv").write_bytes(b"version 1\n")

        def read(worker: str) -> bytes:
            call = Call("GET", "/v1/read", uri, f"read {uri}", {"path": uri})
            return client.send_to(worker, call).content

        for name in names:
            read(name)  # every worker now caches version 1 and never re-checks on its own
        write = Call("PUT", "/v1/write", uri, "write", {"path": uri}, False, lambda: b"version 2\n")
        client.send_to(names[0], write)
        say(f"  wrote version 2 through {names[0]} (feed revision {client.revision})")
        ok = True
        for name in names[1:]:
            seen = read(name).decode().strip()
            ok = ok and seen == "version 2"
            say(f"  read through {name}: {seen!r}")
        status = cluster_status(Etcd([etcd.endpoint], 2.0), "DefaultAlluxioCluster")
        say(format_table(status))
        return ok
