"""The many-host lab for integration tests (the ``lab`` fixture in conftest.py: one per test
process that runs a lab test), skipped with the lab's one-line reason where namespaces cannot
be made, and what the lab's tests share."""

import hashlib
import json
import time
from collections.abc import Callable, Iterator

import pytest

from worker.lab.lab import BUCKET, DORA, Lab
from worker.lab.netns import LabUnavailable, unavailable_reason


def lab_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A started lab, stopped (and its namespaces removed) when the fixture ends."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    lab = Lab(tmp_path_factory.mktemp("lab"))
    try:
        lab.start()
    except LabUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield lab
    finally:
        lab.stop()


def wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.2)


def put_files(lab: Lab, prefix: str, count: int) -> dict[str, str]:
    """``count`` files written straight to S3 (not through a worker): URI -> SHA-256."""
    assert lab.s3 is not None
    fs = lab.s3.client()
    made = {}
    for index in range(count):
        data = f"{prefix} file {index}\n".encode() * (50 + index)
        fs.pipe(f"{BUCKET}/{prefix}/f{index:02d}", data)
        made[f"s3://{BUCKET}/{prefix}/f{index:02d}"] = hashlib.sha256(data).hexdigest()
    return made


def ufs_digest(lab: Lab, uri: str) -> str:
    """The SHA-256 of ``uri``'s bytes as S3 holds them now."""
    assert lab.s3 is not None
    data: bytes = lab.s3.client().cat(uri.removeprefix("s3://"))
    return hashlib.sha256(data).hexdigest()


def cluster_ls(lab: Lab, host: str) -> dict[str, bool]:
    """``dora cluster ls --json`` run on ``host``: worker address -> online."""
    defines = [f"-D{d}" for d in lab.client_defines()]
    done = lab.run(host, [DORA, "cluster", "ls", "--json", *defines])
    assert done.returncode == 0, done.stderr
    return {w["address"]: w["online"] for w in json.loads(done.stdout)["workers"]}


def online(lab: Lab, host: str) -> set[str]:
    return {address for address, up in cluster_ls(lab, host).items() if up}


def read_op(uri: str, worker: str | None = None, **params: str) -> dict[str, object]:
    """A probe op: through the ring, or one GET to ``worker`` (never re-checking the UFS)."""
    if worker is None:
        return {"op": "read", "uri": uri, "params": params}
    query = {"path": uri, "sync_interval": "-1", **params}
    return {"op": "get", "worker": worker, "path": "/v1/read", "params": query}
