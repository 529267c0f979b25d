"""Pins on a real ``dora worker start`` process: ``dora fs pin`` keeps a file through a scan that
evicts everything else, and through a restart; a rule's ``pin`` does the same; the bound
refuses a pin past it, naming the key."""

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.harness import WorkerProcess, dora_fs

MB = 1 << 20
# 8 pages of 1MB, half of which may be pinned (the default bound).
STORE = ("dora.worker.page.store.page.size=1MB", "dora.worker.page.store.sizes=8MB")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    (path / "scan").mkdir(parents=True)
    (path / "hot.bin").write_bytes(os.urandom(2 * MB))
    (path / "big.bin").write_bytes(os.urandom(3 * MB))
    for n in range(20):
        (path / "scan" / f"{n}.bin").write_bytes(os.urandom(MB))
    return path


def start(work: Path, data: Path, *defines: str) -> WorkerProcess:
    return WorkerProcess(work, f"dora.worker.ufs.roots=file://{data}", *STORE, *defines)


@pytest.fixture
def worker(tmp_path: Path, data: Path) -> Iterator[WorkerProcess]:
    process = start(tmp_path, data)
    yield process
    if process.process.poll() is None:
        process.stop()


def cached(worker: WorkerProcess, uri: str) -> int:
    return int(worker.http.get("/v1/status", params={"path": uri}).json()["cached_bytes"])


def scan(worker: WorkerProcess, data: Path) -> None:
    """Read 20MB of other files through an 8MB cache."""
    for n in range(20):
        assert worker.http.get(
            "/v1/read", params={"path": f"file://{data}/scan/{n}.bin"}
        ).is_success


def pinned_bytes(worker: WorkerProcess) -> float:
    for line in worker.http.get("/metrics").text.splitlines():
        if line.startswith("dora_pinned_bytes "):
            return float(line.split()[1])
    raise AssertionError("no dora_pinned_bytes in /metrics")


def test_a_pinned_file_survives_a_scan_and_a_restart(
    tmp_path: Path, worker: WorkerProcess, data: Path
) -> None:
    hot = f"file://{data}/hot.bin"
    assert dora_fs(worker, "pin", hot).returncode == 0
    assert (
        worker.http.get("/v1/read", params={"path": hot}).content == (data / "hot.bin").read_bytes()
    )
    scan(worker, data)
    assert cached(worker, hot) == 2 * MB
    assert cached(worker, f"file://{data}/scan/0.bin") == 0  # the scan evicted its own pages
    listing = dora_fs(worker, "ls", f"file://{data}").stdout.decode()
    flagged = [line.split()[-1] for line in listing.splitlines() if "pinned" in line.split()]
    assert flagged == [hot]
    worker.stop()
    again = start(tmp_path, data)
    try:
        deadline = time.monotonic() + 30  # pinned again once the page store is restored
        while pinned_bytes(again) < 2 * MB and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pinned_bytes(again) == 2 * MB
        scan(again, data)
        assert cached(again, hot) == 2 * MB
        assert dora_fs(again, "unpin", hot).returncode == 0
        scan(again, data)
        assert cached(again, hot) == 0
    finally:
        again.stop()


def test_a_pin_past_the_bound_is_refused_naming_the_key(worker: WorkerProcess, data: Path) -> None:
    assert dora_fs(worker, "pin", f"file://{data}/hot.bin").returncode == 0
    refused = dora_fs(worker, "pin", f"file://{data}/big.bin")
    assert refused.returncode == 1
    assert b"dora.worker.page.store.pin.max" in refused.stderr


def test_a_rule_pins_the_files_it_matches(tmp_path: Path, data: Path) -> None:
    rules = tmp_path / "rules"
    rules.write_text(f"file://{data}/hot.bin pin\n")
    worker = start(tmp_path, data, f"dora.worker.path.rules.file={rules}")
    try:
        hot = f"file://{data}/hot.bin"
        assert worker.http.get("/v1/status", params={"path": hot}).json()["pinned"] is True
        worker.http.get("/v1/read", params={"path": hot})
        scan(worker, data)
        assert cached(worker, hot) == 2 * MB
    finally:
        worker.stop()


def wait_pinned(worker: WorkerProcess, expected: float) -> None:
    deadline = time.monotonic() + 30
    while pinned_bytes(worker) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pinned_bytes(worker) == expected


def test_a_rules_pins_hold_the_pages_restored_after_a_restart(tmp_path: Path, data: Path) -> None:
    rules = tmp_path / "rules"
    rules.write_text(f"file://{data}/hot.bin pin\n")
    hot = f"file://{data}/hot.bin"
    worker = start(tmp_path, data, f"dora.worker.path.rules.file={rules}")
    try:
        worker.http.get("/v1/read", params={"path": hot})
    finally:
        worker.stop()
    again = start(tmp_path, data, f"dora.worker.path.rules.file={rules}")
    try:
        wait_pinned(again, 2 * MB)  # pinned once restored, before any page of it is stored
        scan(again, data)
        assert cached(again, hot) == 2 * MB
    finally:
        again.stop()


def test_a_reload_pins_and_unpins_what_is_cached_under_the_rule(tmp_path: Path, data: Path) -> None:
    rules = tmp_path / "rules"
    rules.write_text(f"file://{data}/** max-age=1h\n")
    hot = f"file://{data}/hot.bin"
    worker = start(tmp_path, data, f"dora.worker.path.rules.file={rules}")
    try:
        worker.http.get("/v1/read", params={"path": hot})
        rules.write_text(f"file://{data}/hot.bin pin\n")
        worker.process.send_signal(signal.SIGHUP)
        wait_pinned(worker, 2 * MB)
        scan(worker, data)
        assert cached(worker, hot) == 2 * MB
        rules.write_text(f"file://{data}/** max-age=1h\n")
        worker.process.send_signal(signal.SIGHUP)
        wait_pinned(worker, 0)
        scan(worker, data)
        assert cached(worker, hot) == 0
    finally:
        worker.stop()
