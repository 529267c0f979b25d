"""The demo job end to end on a tiny dataset over a local-directory UFS, as a user runs it: every
run's checksum equals the direct read's, and nothing it started outlives it."""

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


def test_demo_on_a_tiny_dataset_matches_the_direct_read(tmp_path: Path) -> None:
    work, ufs = tmp_path / "work", tmp_path / "ufs"
    ufs.mkdir()
    args = ["--files", "4", "--rows-per-file", "2000", "--ufs", f"file://{ufs}"]
    out = subprocess.run(
        [sys.executable, "-m", "worker.demo", *args, "--work-dir", str(work)],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    header = next(
        i for i, line in enumerate(lines) if line.startswith("run ") and "checksum" in line
    )
    table = lines[header + 2 : header + 5]
    runs = {line.split()[0]: line for line in table}
    assert list(runs) == ["cold", "warm", "changed"]
    assert all(line.endswith("yes") for line in runs.values())
    checksums = {name: line.split()[-2] for name, line in runs.items()}
    assert checksums["cold"] == checksums["warm"] != checksums["changed"]
    assert "every answer matches the direct read of the UFS" in out.stdout
    # The sidecar worker and Spark's JVM are gone, and so is the per-run state.
    assert processes_mentioning(str(work)) == []
    assert [p.name for p in work.iterdir()] == ["datasets"]
    assert list(ufs.iterdir()) == []
