"""The many-host lab for integration tests (the ``lab`` fixture in conftest.py: one per test
process that runs a lab test), skipped with the lab's one-line reason where namespaces cannot
be made, and what the lab's tests share."""

import hashlib
import json
import time
from collections.abc import Callable, Iterator

import pytest

from worker.devlab.lab.lab import BUCKET, DORA, Lab
from worker.devlab.lab.netns import LabUnavailable, unavailable_reason
from worker.devlab.lab.tls import Issuer


def lab_fixture(
    tmp_path_factory: pytest.TempPathFactory, tls: Issuer | None = None
) -> Iterator[Lab]:
    """A started lab (over TLS with certificates from ``tls``), stopped (and its namespaces
    removed) when the fixture ends."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    lab = Lab(tmp_path_factory.mktemp("lab"), tls=tls)
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


def members(lab: Lab, host: str) -> list[dict[str, object]]:
    """The workers ``dora cluster ls --json`` run on ``host`` lists."""
    defines = [f"-D{d}" for d in lab.client_defines()]
    done = lab.run(host, [DORA, "cluster", "ls", "--json", *defines])
    assert done.returncode == 0, done.stderr
    listed: list[dict[str, object]] = json.loads(done.stdout)["workers"]
    return listed


def cluster_ls(lab: Lab, host: str) -> dict[str, bool]:
    """``dora cluster ls --json`` run on ``host``: worker address -> online."""
    return {str(w["address"]): bool(w["online"]) for w in members(lab, host)}


def online(lab: Lab, host: str) -> set[str]:
    return {address for address, up in cluster_ls(lab, host).items() if up}


def read_op(uri: str, worker: str | None = None, **params: str) -> dict[str, object]:
    """A probe op: through the ring, or one GET to ``worker`` (never re-checking the UFS)."""
    if worker is None:
        return {"op": "read", "uri": uri, "params": params}
    query = {"path": uri, "sync_interval": "-1", **params}
    return {"op": "get", "worker": worker, "path": "/v1/read", "params": query}


def owners_seen_from(lab: Lab, host: str, uris: list[str]) -> dict[str, str]:
    """Each URI's owner on the ring a client on ``host`` builds (from etcd: every worker)."""
    [answer] = lab.probe(host, {"op": "owners", "uris": uris})
    assert answer["ring"] == sorted(lab.addresses)
    owners: dict[str, str] = answer["owners"]  # type: ignore[assignment]
    return owners


def read_across_hosts(lab: Lab, host: str, files: dict[str, str]) -> None:
    """Read from ``host``, routed by the ring and through fsspec, every file of ``files`` that
    a worker on another host owns: each is served by its owner with the bytes S3 holds, and
    each worker's served bytes grow by exactly what it served."""
    owners = owners_seen_from(lab, host, list(files))
    elsewhere = [uri for uri, owner in owners.items() if owner != lab.worker(host).address]
    assert elsewhere
    before = {worker.address: worker.served() for worker in lab.workers}
    ops = [op for uri in elsewhere for op in (read_op(uri), {"op": "cat", "uri": uri})]
    answers = lab.probe(host, *ops)
    expected_bytes = dict.fromkeys(before, 0)
    for uri, routed, through_fsspec in zip(elsewhere, answers[::2], answers[1::2], strict=True):
        assert routed["worker"] == owners[uri]
        assert routed["sha256"] == through_fsspec["sha256"] == files[uri]
        expected_bytes[owners[uri]] += 2 * int(routed["size"])  # type: ignore[call-overload]
    for worker in lab.workers:
        assert worker.served() - before[worker.address] == expected_bytes[worker.address]
