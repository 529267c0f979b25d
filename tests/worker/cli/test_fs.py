"""``dora fs`` against a real worker process over a local directory: ``put`` names what it
writes as ``aws s3 cp`` and fsspec's ``put`` do, and every failure is one line and an exit code."""

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_worker_process import DORA, WorkerProcess

pytestmark = pytest.mark.integration


@pytest.fixture
def worker(tmp_path: Path, data_dir: Path) -> Iterator[WorkerProcess]:
    work = tmp_path / "work"
    work.mkdir()
    process = WorkerProcess(work, f"dora.worker.ufs.roots=file://{data_dir}")
    yield process
    process.stop()


def dora_fs(worker: WorkerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DORA, "fs", *args, "--worker", worker.address],
        capture_output=True,
        text=True,
        check=False,
    )


def test_put_into_a_directory_keeps_the_file_name(
    worker: WorkerProcess, data_dir: Path, tmp_path: Path
) -> None:
    local = tmp_path / "x.txt"
    local.write_text("hello")
    done = dora_fs(worker, "put", str(local), f"file://{data_dir}/dir/")
    assert done.returncode == 0, done.stderr
    assert (data_dir / "dir" / "x.txt").read_text() == "hello"
    assert done.stdout == f"upload: {local} to file://{data_dir}/dir/x.txt\n"
    renamed = dora_fs(worker, "put", str(local), f"file://{data_dir}/y.txt")
    assert renamed.returncode == 0, renamed.stderr
    assert (data_dir / "y.txt").read_text() == "hello"


def test_put_a_directory_needs_r_and_then_uploads_the_tree(
    worker: WorkerProcess, data_dir: Path, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.txt").write_text("a")
    (tree / "sub" / "b.txt").write_text("b")
    refused = dora_fs(worker, "put", str(tree), f"file://{data_dir}/copy")
    assert refused.returncode == 1
    assert (
        refused.stderr
        == f"dora fs put: {tree} is a directory: use -R to upload it and everything in it\n"
    )
    done = dora_fs(worker, "put", "-R", str(tree), f"file://{data_dir}/copy")
    assert done.returncode == 0, done.stderr
    assert (data_dir / "copy" / "a.txt").read_text() == "a"
    assert (data_dir / "copy" / "sub" / "b.txt").read_text() == "b"
    assert sorted(done.stdout.splitlines()) == [
        f"upload: {tree}/a.txt to file://{data_dir}/copy/a.txt",
        f"upload: {tree}/sub/b.txt to file://{data_dir}/copy/sub/b.txt",
    ]


@pytest.mark.parametrize(
    ("local", "target", "message"),
    [
        ("missing.txt", "file://{data}/m.txt", "missing.txt: no such local file or directory"),
        ("x.txt", "file:///etc/x.txt", "outside"),
    ],
)
def test_put_failures_are_one_line(
    worker: WorkerProcess, data_dir: Path, tmp_path: Path, local: str, target: str, message: str
) -> None:
    (tmp_path / "x.txt").write_text("x")
    failed = dora_fs(worker, "put", str(tmp_path / local), target.format(data=data_dir))
    assert failed.returncode == 1
    assert message in failed.stderr
    assert failed.stderr.count("\n") == 1 and "Traceback" not in failed.stderr
