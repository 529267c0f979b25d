"""A real ``dora worker start`` process: state file, REST calls, ``dora fs`` against it,
graceful SIGTERM, and a restart that keeps metadata and pages."""

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.harness import WorkerProcess, dora_fs
from worker.devlab.local.s3 import LocalS3


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    (path / "a.bin").write_bytes(os.urandom(3 << 20))
    return path


@pytest.fixture
def worker(tmp_path: Path, data: Path) -> Iterator[WorkerProcess]:
    process = WorkerProcess(tmp_path, f"dora.worker.ufs.roots=file://{data}")
    yield process
    if process.process.poll() is None:
        process.stop()


def test_serves_and_stops_gracefully(worker: WorkerProcess, data: Path) -> None:
    uri = f"file://{data}/a.bin"
    assert worker.http.get("/healthz").status_code == 200
    assert (
        worker.http.get("/v1/read", params={"path": uri}).content == (data / "a.bin").read_bytes()
    )
    assert dora_fs(worker, "cat", uri).stdout == (data / "a.bin").read_bytes()
    listing = dora_fs(worker, "ls", f"file://{data}").stdout.decode()
    assert "100%" in listing and "a.bin" in listing
    missing = dora_fs(worker, "stat", f"file://{data}/nope")
    assert missing.returncode == 1
    assert b"NotFound" in missing.stderr
    assert worker.stop() == 0
    assert not worker.state.exists()


def test_restart_serves_metadata_and_pages_from_disk(
    tmp_path: Path, worker: WorkerProcess, data: Path
) -> None:
    uri = f"file://{data}/a.bin"
    content = worker.http.get("/v1/read", params={"path": uri}).content
    worker.stop()
    again = WorkerProcess(tmp_path, f"dora.worker.ufs.roots=file://{data}")
    try:
        deadline = time.monotonic() + 30
        while again.http.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert again.http.get("/v1/read", params={"path": uri}).content == content
        stats = again.http.get("/v1/stats").json()
        assert stats["bytes_from_cache"] == len(content)
        assert stats["bytes_from_ufs"] == 0
        assert stats["metadata_misses"] == 0
    finally:
        again.stop()


def test_dora_fs_against_seaweedfs(tmp_path: Path, seaweedfs: LocalS3, s3_root: str) -> None:
    """What the README shows: a worker over S3 and `dora fs cat s3://...`."""
    bucket = s3_root.removeprefix("s3://").split("/")[0]
    process = WorkerProcess(
        tmp_path, f"dora.worker.ufs.roots=s3://{bucket}", *seaweedfs.storage_defines()
    )
    try:
        local = tmp_path / "upload.txt"
        local.write_bytes(b"hello from s3\n")
        assert dora_fs(process, "put", str(local), f"{s3_root}/hello.txt").returncode == 0
        assert dora_fs(process, "cat", f"{s3_root}/hello.txt").stdout == b"hello from s3\n"
        loaded = dora_fs(process, "load", s3_root, "-R")
        assert loaded.returncode == 0, loaded.stderr
        assert b"100.0%" in loaded.stderr
        head = dora_fs(process, "head", "-c", "5", f"{s3_root}/hello.txt")
        assert head.stdout == b"hello"
    finally:
        process.stop()


def test_dora_fs_sends_the_client_token(tmp_path: Path, data: Path) -> None:
    process = WorkerProcess(
        tmp_path, f"dora.worker.ufs.roots=file://{data}", "dora.worker.security.token=s3cret"
    )
    try:
        uri = f"file://{data}/a.bin"
        refused = dora_fs(process, "stat", uri)
        assert refused.returncode == 1
        assert b"Unauthorized" in refused.stderr
        allowed = dora_fs(process, "stat", uri, "-Ddora.user.client.token=s3cret")
        assert allowed.returncode == 0, allowed.stderr
        assert json.loads(allowed.stdout)["size"] == 3 << 20
    finally:
        process.stop()


def test_a_long_lived_client_fails_over_from_a_stopped_worker_without_a_second_try(
    tmp_path: Path, data: Path
) -> None:
    """Issue 24: a client whose kept connection leads to a worker that stopped answering (a
    process stopped with SIGSTOP: its kernel still takes connections) fails over after one
    unanswered liveness probe, never waits out the read timeout nor asks that worker again."""
    from config import load_config
    from worker.client.filesystem import DoraFileSystem
    from worker.keys import build_registry

    roots = f"dora.worker.ufs.roots=file://{data}"
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    a = WorkerProcess(tmp_path / "a", roots)
    try:
        b = WorkerProcess(tmp_path / "b", roots)
    except BaseException:
        a.stop()
        raise
    config = load_config(
        build_registry(),
        environ={},
        defines=[
            f"dora.user.workers={a.address},{b.address}",
            "dora.user.client.connect.timeout=500ms",
            "dora.user.client.short.circuit.enabled=false",
        ],
    )
    fs = DoraFileSystem(config=config, skip_instance_cache=True, fallback_to_ufs=False)
    owned = [
        f"file://{data}/f{i}"
        for i in range(200)
        if fs.worker_for(f"file://{data}/f{i}") == a.address
    ]
    for uri in owned[:2]:
        Path(uri[len("file://") :]).write_bytes(uri.encode())
    try:
        assert fs.cat(owned[0]) == owned[0].encode()  # keeps a connection to A in this thread
        a.process.send_signal(signal.SIGSTOP)
        assert fs.cat(owned[1]) == owned[1].encode()
        stats = fs.fallback_stats()
        assert (stats.unresponsive, stats.unreachable) == (1, {a.address: 1})
        assert stats.failovers >= 1 and stats.ufs_fallbacks == 0
    finally:
        a.process.send_signal(signal.SIGCONT)
        a.stop()
        b.stop()
