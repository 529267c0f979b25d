"""Path rules on a real ``dora worker start`` process over SeaweedFS. Admission (issue 34 item
3): a pass-through rule serves the right bytes and caches none, a second-read rule caches a
range only on its second read, and ``/metrics`` counts what each read was admitted as. TTL
(item 5): a file under a ``ttl`` rule is freed that long after it was loaded, counted."""

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import s3fs

from tests.integration.conftest import BUCKET
from tests.integration.harness import WorkerProcess
from worker.devlab.local.s3 import LocalS3

pytestmark = pytest.mark.integration

PAGE = 64 * 1024


@pytest.fixture
def prefix() -> str:
    return f"{BUCKET}/admission-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def worker(tmp_path: Path, seaweedfs: LocalS3, prefix: str) -> Iterator[WorkerProcess]:
    rules = tmp_path / "rules"
    rules.write_text(
        f"s3://{prefix}/scratch/**  admission=pass\n"
        f"s3://{prefix}/scan/**     admission=second-read window=10min\n"
        f"s3://{prefix}/brief/**    ttl=1s\n"
    )
    process = WorkerProcess(
        tmp_path,
        f"dora.worker.ufs.roots=s3://{BUCKET}",
        "dora.worker.page.store.page.size=64KB",
        f"dora.worker.path.rules.file={rules}",
        "dora.worker.ttl.check.interval=200ms",
        *seaweedfs.storage_defines(),
    )
    yield process
    process.stop()


def _put(s3_raw: s3fs.S3FileSystem, path: str, size: int) -> bytes:
    content = os.urandom(size)
    s3_raw.pipe(path, content)
    return content


def _read(worker: WorkerProcess, uri: str, offset: int = 0, length: int | None = None) -> bytes:
    params = {"path": uri, "offset": str(offset)}
    if length is not None:
        params["length"] = str(length)
    answer = worker.http.get("/v1/read", params=params)
    answer.raise_for_status()
    return answer.content


def _cached(worker: WorkerProcess, uri: str) -> int:
    answer = worker.http.get("/v1/status", params={"path": uri})
    answer.raise_for_status()
    cached: int = answer.json()["cached_bytes"]
    return cached


def _admissions(worker: WorkerProcess) -> dict[str, float]:
    counts = {}
    for line in worker.http.get("/metrics").text.splitlines():
        if line.startswith("dora_admission_reads_total{"):
            decision = line.split('decision="', 1)[1].split('"', 1)[0]
            counts[decision] = float(line.rsplit(" ", 1)[1])
    return counts


def _ttl_frees(worker: WorkerProcess) -> float:
    for line in worker.http.get("/metrics").text.splitlines():
        if line.startswith("dora_ttl_frees_total "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("no dora_ttl_frees_total in /metrics")


def test_a_pass_through_rule_serves_the_bytes_and_caches_none(
    worker: WorkerProcess, s3_raw: s3fs.S3FileSystem, prefix: str
) -> None:
    content = _put(s3_raw, f"{prefix}/scratch/f", 3 * PAGE + 10)
    uri = f"s3://{prefix}/scratch/f"
    assert _read(worker, uri) == content
    assert _read(worker, uri, PAGE - 5, PAGE) == content[PAGE - 5 : 2 * PAGE - 5]
    assert _cached(worker, uri) == 0
    assert _admissions(worker) == {"admitted": 0, "passed_through": 2, "deferred": 0}


def test_a_second_read_rule_caches_only_from_the_second_read(
    worker: WorkerProcess, s3_raw: s3fs.S3FileSystem, prefix: str
) -> None:
    content = _put(s3_raw, f"{prefix}/scan/f", 4 * PAGE)
    uri = f"s3://{prefix}/scan/f"
    assert _read(worker, uri, 0, 2 * PAGE) == content[: 2 * PAGE]
    assert _cached(worker, uri) == 0  # the first read is served through
    assert _admissions(worker)["deferred"] == 1
    assert _read(worker, uri, 0, 2 * PAGE) == content[: 2 * PAGE]
    assert _cached(worker, uri) == 2 * PAGE  # the second caches what it read, no more
    assert _read(worker, uri, 2 * PAGE, PAGE) == content[2 * PAGE : 3 * PAGE]
    assert _cached(worker, uri) == 2 * PAGE  # a page not read before is deferred again
    assert _admissions(worker) == {"admitted": 1, "passed_through": 0, "deferred": 2}
    # A path no rule names is cached at once.
    other = _put(s3_raw, f"{prefix}/hot", PAGE)
    assert _read(worker, f"s3://{prefix}/hot") == other
    assert _cached(worker, f"s3://{prefix}/hot") == PAGE
    assert _admissions(worker)["admitted"] == 2


def test_a_ttl_rule_frees_what_was_loaded_that_long_ago(
    worker: WorkerProcess, s3_raw: s3fs.S3FileSystem, prefix: str
) -> None:
    brief = _put(s3_raw, f"{prefix}/brief/f", 2 * PAGE)
    kept = _put(s3_raw, f"{prefix}/kept", PAGE)
    loaded = time.monotonic()
    assert _read(worker, f"s3://{prefix}/brief/f") == brief
    assert _read(worker, f"s3://{prefix}/kept") == kept
    deadline = loaded + 30
    while _ttl_frees(worker) < 1:
        assert time.monotonic() < deadline, "the file under the ttl rule was not freed"
        time.sleep(0.1)
    assert time.monotonic() - loaded >= 1.0  # not before its TTL
    assert _cached(worker, f"s3://{prefix}/brief/f") == 0
    assert _cached(worker, f"s3://{prefix}/kept") == PAGE
    assert s3_raw.cat(f"{prefix}/brief/f") == brief  # freed from the cache only
    assert _read(worker, f"s3://{prefix}/brief/f") == brief  # and loaded again on a read
    assert _cached(worker, f"s3://{prefix}/brief/f") == 2 * PAGE
