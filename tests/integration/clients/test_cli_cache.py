"""``dora cache advise`` end to end: the real ``dora`` console script against a real worker
process over a local directory (pages of 1 MiB)."""

import json
import os
import socket
import subprocess
from collections.abc import Iterator

import pytest

from tests.integration.harness import DORA, WorkerProcess

pytestmark = pytest.mark.integration

MB = 1 << 20


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    data = tmp_path_factory.mktemp("data")
    (data / "f.bin").write_bytes(os.urandom(3 * MB))
    process = WorkerProcess(tmp_path_factory.mktemp("work"), f"dora.worker.ufs.roots=file://{data}")
    for _ in range(2):  # 3 pages stored, then 3 served, each 2 other pages after its last read
        assert process.http.get("/v1/read", params={"path": f"file://{data}/f.bin"}).is_success
    yield process
    process.stop()


def dora(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DORA, *args], capture_output=True, text=True, check=False, timeout=60)


def test_prints_the_capacity_a_target_needs(worker: WorkerProcess) -> None:
    done = dora("cache", "advise", "--target-hit", "0.5", "--worker", worker.address)
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{worker.address}: 6 page reads in the curve (aged), 6 sampled")
    assert "LRU's curve" in lines[0]
    assert lines[1] == "  capacity now 1.0 GiB: hit ratio 0.500"
    assert lines[2] == f"  target hit ratio 0.5: needs 3.0 MiB ({3 * MB} B)"


def test_a_target_out_of_reach_says_what_is_reachable(worker: WorkerProcess) -> None:
    done = dora("cache", "advise", f"-Ddora.user.workers={worker.address}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2] == (
        "  target hit ratio 0.9: out of reach, at most 0.500 (the other reads are first reads)"
    )


def test_json_carries_the_curve(worker: WorkerProcess) -> None:
    done = dora("cache", "advise", "--json", "--worker", worker.address)
    answer = json.loads(done.stdout)
    assert answer["worker"] == worker.address
    assert answer["points"] == [
        {"capacity_bytes": 0, "hit_ratio": 0.0},
        {"capacity_bytes": 2 * MB, "hit_ratio": 0.0},
        {"capacity_bytes": 3 * MB, "hit_ratio": 0.5},
    ]


def test_an_unreachable_worker_is_one_line_and_status_1() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{free.getsockname()[1]}"
    done = dora("cache", "advise", "--worker", address)
    assert done.returncode == 1
    assert done.stderr.startswith("dora cache advise: ") and done.stderr.count("\n") == 1


def test_a_target_outside_0_to_1_is_a_usage_error() -> None:
    done = dora("cache", "advise", "--target-hit", "1.5")
    assert done.returncode == 2
    assert "not in (0, 1]" in done.stderr
