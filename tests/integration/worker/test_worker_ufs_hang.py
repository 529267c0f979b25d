"""A real worker process over a SeaweedFS that freezes (SIGSTOP): cached data is still
served, and what needs the UFS gets 503 with Retry-After at the deadline, not a hang, or 504 at
the request's own deadline when it says how long it waits (``X-Dora-Timeout-Ms``)."""

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import frozen
from tests.integration.harness import WorkerProcess
from worker.client.filesystem import DoraFileSystem
from worker.common.errors import DeadlineExceeded
from worker.devlab.local.s3 import LocalS3

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


def test_a_request_that_says_how_long_it_waits_gets_504_by_then(
    private_s3: LocalS3, worker: WorkerProcess
) -> None:
    """``X-Dora-Timeout-Ms`` (shorter than ``dora.ufs.call.deadline``) bounds what a request
    asks of a frozen UFS: a status, a read of uncached data, a write answer 504 naming the
    request's deadline, with no Retry-After (the client has stopped waiting: nothing to retry
    for it). The dora client sends its own timeout, so its caller sees why."""
    raw = private_s3.client()
    known = os.urandom(1 << 20)
    raw.pipe_file("private/known.bin", known)
    raw.pipe_file("private/cold.bin", b"cold")
    assert worker.http.get("/v1/status", params={"path": "s3://private/known.bin"}).is_success
    wait = {"X-Dora-Timeout-Ms": "800"}
    client = DoraFileSystem(
        workers=worker.address, timeout=2, fallback_to_ufs=False, skip_instance_cache=True
    )
    with frozen(private_s3):
        answers = [
            worker.http.get("/v1/status", params={"path": "s3://private/cold.bin"}, headers=wait),
            worker.http.get("/v1/read", params={"path": "s3://private/known.bin"}, headers=wait),
            worker.http.put(
                "/v1/write", params={"path": "s3://private/new.bin"}, content=b"x", headers=wait
            ),
        ]
        with pytest.raises(DeadlineExceeded, match="request's deadline of 1.8s"):
            client.info("s3://private/cold.bin")
    for answer in answers:
        assert (answer.status_code, answer.json()["error"]) == (504, "DeadlineExceeded")
        assert "the request's deadline of 0.8s" in answer.json()["message"]
        assert "Retry-After" not in answer.headers
    assert read(worker, "s3://private/known.bin").content == known
    assert not raw.exists("private/new.bin")


def test_a_malformed_deadline_header_is_refused_naming_it(worker: WorkerProcess) -> None:
    for value in ("soon", "-5", "123456789"):
        answer = worker.http.get(
            "/v1/status",
            params={"path": "s3://private/x"},
            headers={"X-Dora-Timeout-Ms": value},
        )
        assert answer.status_code == 400, value
        assert "X-Dora-Timeout-Ms" in answer.json()["message"]
