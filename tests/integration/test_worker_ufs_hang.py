"""A real worker process over a SeaweedFS that freezes (SIGSTOP): cached data is still
served, and what needs the UFS gets 503 with Retry-After at the deadline, not a hang."""

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import frozen
from tests.integration.test_worker_process import WorkerProcess
from worker.locals3 import LocalS3

pytestmark = pytest.mark.integration

DEADLINE_S = 3


@pytest.fixture
def worker(tmp_path: Path, private_s3: LocalS3) -> Iterator[WorkerProcess]:
    work = tmp_path / "work"
    work.mkdir()
    process = WorkerProcess(
        work,
        "dora.worker.ufs.roots=s3://private",
        f"dora.ufs.call.deadline={DEADLINE_S}s",
        *private_s3.storage_defines(),
    )
    yield process
    process.stop()


def read(worker: WorkerProcess, uri: str) -> httpx.Response:
    """One read on its own connection (the calls below run in parallel)."""
    return httpx.get(f"http://{worker.address}/v1/read", params={"path": uri}, timeout=120)


def test_cached_reads_are_served_while_the_ufs_is_frozen(
    private_s3: LocalS3, worker: WorkerProcess
) -> None:
    raw = private_s3.client()
    cached, known, cold = os.urandom(3 << 20), os.urandom(1 << 20), os.urandom(1 << 20)
    raw.pipe_file("private/cached.bin", cached)
    raw.pipe_file("private/known.bin", known)
    raw.pipe_file("private/cold.bin", cold)
    assert read(worker, "s3://private/cached.bin").content == cached
    # Its status is cached, its pages are not: the read needs the UFS for data only.
    assert worker.http.get("/v1/status", params={"path": "s3://private/known.bin"}).is_success
    with frozen(private_s3), ThreadPoolExecutor(4) as pool:
        hung = [pool.submit(read, worker, f"s3://private/{n}.bin") for n in ("cold", "known")]
        # Served while reads that need the UFS are hung in the same worker.
        served = read(worker, "s3://private/cached.bin")
        answers = [answer.result() for answer in hung]
    assert served.content == cached
    for answer in answers:
        assert (answer.status_code, answer.json()["error"]) == (503, "UfsUnavailable")
        assert answer.headers["Retry-After"] == str(DEADLINE_S)
    assert read(worker, "s3://private/cold.bin").content == cold
    assert read(worker, "s3://private/known.bin").content == known
