"""Eviction on a real worker: a 48 MB page store of 1 MB pages over a local directory, a 32 MB
hot set read twice, a 256 MB scan of other files, then a new 32 MB hot set read three times.
How much of each hot set stays cached is read from ``/v1/status``'s ``cached_bytes``.
``bench/experiments/evict_bench.py`` runs the same scenario for every policy."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from pagestore.evict import DEFAULT_EVICTOR
from tests.integration.harness import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MB = 1 << 20
FILE_MB = 8


@dataclass(frozen=True)
class WorkerShift:
    """Shares (0 to 1) of the old hot set cached after the scan, and of the new one after its
    third read."""

    hot_after_scan: float
    new_hot_after_three_reads: float


def write_files(root: Path, prefix: str, total_mb: int) -> list[str]:
    """Files of random bytes adding up to ``total_mb`` under ``root``; their URIs."""
    uris = []
    for n in range(total_mb // FILE_MB):
        path = root / f"{prefix}{n}.bin"
        path.write_bytes(os.urandom(FILE_MB * MB))
        uris.append(f"file://{path}")
    return uris


def run_shift(work: Path, data: Path, policy: str) -> WorkerShift:
    """The scenario on a worker with eviction policy ``policy``; ``data`` holds the files
    (written on first use, shared by runs)."""
    if not (data / "old0.bin").exists():
        data.mkdir(parents=True, exist_ok=True)
        for prefix, size in (("old", 32), ("scan", 256), ("new", 32)):
            write_files(data, prefix, size)
    names = sorted(p.name for p in data.iterdir())
    old, scan, new = (
        [f"file://{data}/{n}" for n in names if n.startswith(k)] for k in ("old", "scan", "new")
    )
    work.mkdir(parents=True)
    worker = WorkerProcess(
        work,
        f"dora.worker.ufs.roots=file://{data}",
        "dora.worker.page.store.sizes=48MB",
        "dora.worker.page.store.page.size=1MB",
        f"dora.worker.page.store.evictor={policy}",
    )
    try:

        def read(uris: list[str]) -> None:
            for uri in uris:
                response = worker.http.get("/v1/read", params={"path": uri})
                assert response.status_code == 200 and len(response.content) == FILE_MB * MB

        def cached(uris: list[str]) -> float:
            held = sum(
                worker.http.get("/v1/status", params={"path": uri}).json()["cached_bytes"]
                for uri in uris
            )
            return held / (len(uris) * FILE_MB * MB)

        for _ in range(2):
            read(old)
        read(scan)
        kept = cached(old)
        for _ in range(3):
            read(new)
        return WorkerShift(kept, cached(new))
    finally:
        assert worker.stop() == 0


def test_the_default_policy_keeps_the_hot_set_through_a_scan_and_follows_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    default = run_shift(tmp_path / "default", data, DEFAULT_EVICTOR)
    lru = run_shift(tmp_path / "lru", data, "lru")
    with capsys.disabled():
        print(f"\n{DEFAULT_EVICTOR}: {default}\nlru: {lru}")
    assert default.hot_after_scan >= 0.9
    assert default.new_hot_after_three_reads >= 0.9
