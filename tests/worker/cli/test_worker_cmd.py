"""``dora worker start`` through the installed console script: a worker that cannot start says
why in one line naming the key or file, exits 2, and leaves nothing behind."""

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.worker.cli.test_conf import DORA, dora
from tests.worker.conftest import open_service


def start(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return dora("worker", "start", f"-Ddora.work.dir={work}", "-Ddora.worker.http.port=0", *args)


def refused(out: subprocess.CompletedProcess[str], *names: str) -> str:
    """The one line a refused start printed, checked for what it must name."""
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    for name in names:
        assert name in lines[0]
    return lines[0]


def test_a_bad_mount_root_opens_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    line = refused(start(work, "-Ddora.worker.ufs.roots=notauri"), "dora.worker.ufs.roots")
    assert "'notauri'" in line
    assert not work.exists()  # checked before any store was opened


@pytest.mark.parametrize("port", ["99999", "-1", "٣"])
def test_a_port_out_of_range_is_refused_everywhere(tmp_path: Path, port: str) -> None:
    refused(start(tmp_path / "work", f"-Ddora.worker.http.port={port}"), "dora.worker.http.port")
    refused(dora("conf", "list", f"-Ddora.worker.http.port={port}"), "dora.worker.http.port")


def test_a_site_file_that_is_not_utf8(tmp_path: Path) -> None:
    site = tmp_path / "dora-site.properties"
    site.write_bytes(b"# ok\ndora.work.dir=/tmp/caf\xe9\n")
    line = refused(start(tmp_path / "work", "--conf", str(site)), str(site))
    assert "line 2" in line and "UTF-8" in line


@pytest.fixture
def taken_port() -> Iterator[int]:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    yield holder.getsockname()[1]
    holder.close()


def test_a_port_in_use(tmp_path: Path, taken_port: int) -> None:
    work = tmp_path / "work"
    out = dora(
        "worker", "start", f"-Ddora.work.dir={work}", f"-Ddora.worker.http.port={taken_port}"
    )
    refused(out, "dora.worker.http.port", str(taken_port))
    assert not work.exists()


def test_a_metastore_directory_holding_other_data(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "data.txt").write_text("keep")
    out = start(tmp_path / "work", f"-Ddora.worker.metastore.rocksdb.dir={foreign}")
    refused(out, "dora.worker.metastore.rocksdb.dir", str(foreign))
    assert [p.name for p in foreign.iterdir()] == ["data.txt"]


def test_a_metastore_another_worker_holds(tmp_path: Path, data_dir: Path) -> None:
    work = tmp_path / "work"
    running = open_service(work, f"file://{data_dir}")
    try:
        out = start(work, f"-Ddora.worker.ufs.roots=file://{data_dir}")
        refused(out, "dora.worker.metastore.rocksdb.dir", "in use by another worker")
    finally:
        running.close()


def run_until_started(tmp_path: Path, data_dir: Path, *extra: str) -> str:
    """Start a worker, wait until it announces itself, stop it; what it wrote to stderr."""
    state = tmp_path / "state.json"
    args = [DORA, "worker", "start", f"-Ddora.work.dir={tmp_path / 'work'}",
            "-Ddora.worker.http.port=0", f"-Ddora.worker.ufs.roots=file://{data_dir}",
            "--state-file", str(state), *extra]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORA_")}
    worker = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not state.exists() and worker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert state.exists()
    finally:
        worker.terminate()
        _, stderr = worker.communicate(timeout=60)
    return stderr


def test_a_secret_on_the_command_line_is_warned_about_at_start(
    tmp_path: Path, data_dir: Path
) -> None:
    stderr = run_until_started(tmp_path, data_dir, "-Ddora.worker.security.token=hunter2")
    warnings = [line for line in stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1
    assert "dora.worker.security.token was given with -D" in warnings[0]
    assert "hunter2" not in stderr


@pytest.mark.parametrize("option", ["--log-format=json", "-Ddora.worker.log.format=json"])
def test_json_log_lines(tmp_path: Path, data_dir: Path, option: str) -> None:
    stderr = run_until_started(tmp_path, data_dir, option, "-Ddora.worker.security.token=x")
    lines = [json.loads(line) for line in stderr.splitlines()]
    assert {"time", "level", "logger", "message"} <= set(lines[0])
    assert any(line["message"].startswith("worker listening on http://") for line in lines)
    assert [line["level"] for line in lines].count("WARNING") == 1  # the -D secret
