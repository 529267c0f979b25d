"""The demo job end to end on a tiny dataset over its default UFS (a local SeaweedFS), as
``make demo`` runs it: every run's checksum equals the direct read's, outside writes straight to
S3 reach the worker through the filer's change feed, and nothing it started outlives it."""

import subprocess
import sys
from pathlib import Path

import pytest

from worker.spark import procs

pytestmark = pytest.mark.integration


def processes_mentioning(text: str) -> list[int]:
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and any(text in arg for arg in procs.cmdline(int(entry.name)))
        and procs.process_alive(int(entry.name))
    ]


@pytest.mark.timeout(900)  # twelve Spark runs, six of Polars, Spark's start, two shared cores
def test_demo_on_a_tiny_dataset_matches_the_direct_read(tmp_path: Path) -> None:
    work = tmp_path / "work"
    args = ["--files", "4", "--rows-per-file", "2000"]
    out = subprocess.run(
        [sys.executable, "-m", "worker.devlab.demo", *args, "--work-dir", str(work)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    header = next(
        i for i, line in enumerate(lines) if line.startswith("run ") and "checksum" in line
    )
    table = [line for line in lines[header + 2 :] if line.strip()][:18]
    # Two spaces separate columns; contender names have single spaces.
    cells = [[cell.strip() for cell in line.split("  ") if cell.strip()] for line in table]
    runs = {(row[0], row[1]): row for row in cells}
    contenders = ["native (webhdfs)", "native, pass-through", "python dora source",
                  "spark on a local copy", "polars (S3 endpoint)",
                  "polars, straight to S3"]  # fmt: skip
    assert sorted(runs) == sorted((r, c) for r in ("cold", "warm", "changed") for c in contenders)
    assert all(row[-1] == "yes" for row in cells)
    checksums = {key: row[-2] for key, row in runs.items()}
    before = {checksums[(run, c)] for run in ("cold", "warm") for c in contenders}
    after = {checksums[("changed", c)] for c in contenders}
    assert len(before) == len(after) == 1
    assert before != after
    # Through the cache the warm run reads nothing from the UFS; pass-through reads it all.
    assert runs[("warm", "native (webhdfs)")][5] == "0.0 MB"
    assert runs[("warm", "native, pass-through")][5] != "0.0 MB"
    # The warm native run reads the cached pages straight from their files.
    assert runs[("warm", "native (webhdfs)")][7] != "0.0 MB"
    assert runs[("warm", "native, pass-through")][7] == "0.0 MB"
    # Polars' own S3 reader (issue 33): through the worker's S3 endpoint the warm run reads
    # nothing from the store, straight to it every run reads the data.
    assert runs[("warm", "polars (S3 endpoint)")][5] == "0.0 MB"
    assert runs[("cold", "polars (S3 endpoint)")][5] != "0.0 MB"
    assert runs[("warm", "polars, straight to S3")][5] != "0.0 MB"
    # Outside writes: the worker, at -1, served each one's bytes, told by the filer's feed.
    assert "the filer's change feed consumed by: worker" in out.stdout
    outside = next(line for line in lines if line.strip().startswith("worker ") and "ms" in line)
    # Served after (p50, max), then the feed lag of these writes' own events: their count,
    # p50 and p99 (issue 36 item 8).
    assert "stale" not in outside and outside.count(" ms") == 4
    assert int(outside.split()[5]) >= 1
    assert "every answer matches the direct read of the UFS" in out.stdout
    # SeaweedFS, the worker and Spark's JVM are gone, and so is the per-run state.
    assert processes_mentioning(str(work)) == []
    assert [p.name for p in work.iterdir()] == ["datasets"]
