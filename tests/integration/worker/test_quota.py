"""Quotas on a real ``dora worker start`` process: a rule's quota keeps its prefix within its
bytes by evicting the prefix's own pages, never another's, and a ``caller:<identity>`` rule
does the same for the calls of a client certificate's identity under mutual TLS; both show
in ``/metrics`` and ``/v1/overview`` (the console's Quotas table)."""

from __future__ import annotations

import os
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.harness import DORA, WorkerProcess, dora_fs
from tests.integration.tls.tls_support import tls_defines
from tests.worker.tls.certs import CA

pytestmark = [pytest.mark.integration]

MB = 1 << 20
# 16 pages of 1MB: room for everything the tests read, so only a quota evicts.
STORE = ("dora.worker.page.store.page.size=1MB", "dora.worker.page.store.sizes=16MB")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    for folder in ("capped", "free"):
        (path / folder).mkdir(parents=True)
        for n in range(6):
            (path / folder / f"{n}.bin").write_bytes(os.urandom(MB))
    return path


def metric(text: str, name: str, quota: str) -> float:
    """The value of ``name{quota="<quota>"}`` in a Prometheus text answer."""
    for line in text.splitlines():
        if line.startswith(f'{name}{{quota="{quota}"}} '):
            return float(line.split()[-1])
    raise AssertionError(f"no {name} for {quota} in /metrics:\n{text}")


def cached(http: httpx.Client, uri: str) -> int:
    return int(http.get("/v1/status", params={"path": uri}).json()["cached_bytes"])


def test_a_prefix_over_its_quota_evicts_its_own_pages(tmp_path: Path, data: Path) -> None:
    capped = f"file://{data}/capped/**"
    rules = tmp_path / "rules"
    rules.write_text(f"{capped} quota=3MB\n")
    (tmp_path / "w").mkdir()
    worker = WorkerProcess(
        tmp_path / "w", f"dora.worker.ufs.roots=file://{data}", *STORE,
        f"dora.worker.path.rules.file={rules}",
    )  # fmt: skip
    try:
        http = worker.http
        for n in range(4):
            assert http.get("/v1/read", params={"path": f"file://{data}/free/{n}.bin"}).is_success
        for n in range(6):
            read = http.get("/v1/read", params={"path": f"file://{data}/capped/{n}.bin"})
            assert read.content == (data / "capped" / f"{n}.bin").read_bytes()
        held = [cached(http, f"file://{data}/capped/{n}.bin") for n in range(6)]
        assert sum(held) == 3 * MB
        assert held[3:] == [MB, MB, MB]  # the latest three: its own oldest went first
        assert all(cached(http, f"file://{data}/free/{n}.bin") == MB for n in range(4))
        text = http.get("/metrics").text
        assert metric(text, "dora_quota_used_bytes", capped) == 3 * MB
        assert metric(text, "dora_quota_limit_bytes", capped) == 3 * MB
        assert metric(text, "dora_quota_evictions_total", capped) == 3
        quotas = http.get("/v1/overview").json()["page_store"]["quotas"]
        assert quotas == [
            {"name": capped, "used_bytes": 3 * MB, "limit_bytes": 3 * MB, "evictions": 3}
        ]
        # A pinned file of the prefix counts, and is never the victim: the quota refuses pages
        # rather than give it up.
        pinned = f"file://{data}/capped/5.bin"
        assert dora_fs(worker, "pin", pinned).returncode == 0
        for n in range(6):
            http.get("/v1/read", params={"path": f"file://{data}/capped/{n}.bin"})
        assert cached(http, pinned) == MB
        assert sum(cached(http, f"file://{data}/capped/{n}.bin") for n in range(6)) == 3 * MB
        # What the policy did, as dora cache policy prints it.
        done = subprocess.run(
            [DORA, "cache", "policy", "--worker", worker.address],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"    {capped}: 3.0 MiB of 3.0 MiB, " in done.stdout, done.stdout
        assert "reads 16 admitted, 0 passed through, 0 deferred" in done.stdout, done.stdout
        worker.stop()
        # After a restart the restored pages count against the quota again.
        worker = WorkerProcess(
            tmp_path / "w", f"dora.worker.ufs.roots=file://{data}", *STORE,
            f"dora.worker.path.rules.file={rules}",
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not worker.http.get("/readyz").is_success and time.monotonic() < deadline:
            time.sleep(0.1)
        text = worker.http.get("/metrics").text
        assert metric(text, "dora_quota_used_bytes", capped) == 3 * MB
    finally:
        if worker.process.poll() is None:
            worker.stop()


@pytest.fixture
def mutual(tls_ca: CA, data: Path, tmp_path: Path) -> Iterator[tuple[WorkerProcess, CA]]:
    """A worker requiring client certificates of the CA it yields, with a 2MB quota for the
    identity ``etl-nightly``."""
    clients = CA(tmp_path / "clients", "clients CA")
    rules = tmp_path / "rules"
    rules.write_text("caller:etl-nightly quota=2MB\n")
    process = WorkerProcess(
        tmp_path / "w", f"dora.worker.ufs.roots=file://{data}", *STORE,
        *tls_defines(tls_ca.issue("server"), clients), f"dora.worker.path.rules.file={rules}",
    )  # fmt: skip
    yield process, clients
    process.stop()


def client(tls_ca: CA, clients: CA, worker: WorkerProcess, identity: str) -> httpx.Client:
    pair = clients.issue(identity, (identity,), client=True)
    context = ssl.create_default_context(cafile=str(tls_ca.file))
    context.load_cert_chain(str(pair.cert), str(pair.key))
    return httpx.Client(base_url=worker.url(), verify=context, timeout=30)


def test_a_callers_quota_under_mutual_tls_bounds_what_its_reads_store(
    tls_ca: CA, mutual: tuple[WorkerProcess, CA], data: Path
) -> None:
    worker, clients = mutual
    with (
        client(tls_ca, clients, worker, "etl-nightly") as etl,
        client(tls_ca, clients, worker, "analyst") as analyst,
    ):
        for n in range(4):
            read = analyst.get("/v1/read", params={"path": f"file://{data}/free/{n}.bin"})
            assert read.is_success, read.text
        for n in range(5):
            read = etl.get("/v1/read", params={"path": f"file://{data}/capped/{n}.bin"})
            assert read.content == (data / "capped" / f"{n}.bin").read_bytes(), read.text
        assert sum(cached(etl, f"file://{data}/capped/{n}.bin") for n in range(5)) == 2 * MB
        # The analyst's pages, charged to no quota, were not touched.
        assert all(cached(analyst, f"file://{data}/free/{n}.bin") == MB for n in range(4))
        text = etl.get("/metrics").text
        assert metric(text, "dora_quota_used_bytes", "caller:etl-nightly") == 2 * MB
        assert metric(text, "dora_quota_evictions_total", "caller:etl-nightly") == 3
        assert 'quota="caller:analyst"' not in text  # only declared quotas are labels
