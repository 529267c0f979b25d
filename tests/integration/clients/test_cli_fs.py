"""``dora fs`` end to end: the real ``dora`` console script against real worker processes over a
local directory and over SeaweedFS. Output and exit status of each command, trees copied byte
for byte, and every failure as one line on stderr: a missing path, a path outside the mount
roots, no worker reachable, a usage error, Ctrl-C, a closed stdout."""

import os
import pty
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from tests.integration.conftest import BUCKET
from tests.integration.harness import DORA, WorkerProcess
from tests.worker.cli.fs.conftest import make_tree, tree_files
from worker.common.ring import HashRing
from worker.devlab.local.s3 import LocalS3

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[WorkerProcess]:
    process = WorkerProcess(
        tmp_path_factory.mktemp("work"), f"dora.worker.ufs.roots=file://{data_dir}"
    )
    yield process
    process.stop()


@pytest.fixture(scope="module")
def s3_worker(
    tmp_path_factory: pytest.TempPathFactory, seaweedfs: LocalS3
) -> Iterator[WorkerProcess]:
    process = WorkerProcess(
        tmp_path_factory.mktemp("s3-work"),
        f"dora.worker.ufs.roots=s3://{BUCKET}",
        *seaweedfs.storage_defines(),
    )
    yield process
    process.stop()


@pytest.fixture
def root(data_dir: Path, request: pytest.FixtureRequest) -> Path:
    """A directory of the test's own under the local worker's mount root."""
    return Path(tempfile.mkdtemp(prefix=request.node.name[:40], dir=data_dir))


def dora(*args: str, worker: WorkerProcess | None = None) -> subprocess.CompletedProcess[str]:
    """``dora ARGS... [--worker ADDRESS]``, its output as text."""
    where = ["--worker", worker.address] if worker else []
    return subprocess.run(
        [DORA, *args, *where], capture_output=True, text=True, check=False, timeout=300
    )


def ok(*args: str, worker: WorkerProcess | None = None) -> str:
    """The stdout of a ``dora`` command that must succeed quietly on stderr."""
    done = dora(*args, worker=worker)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout


def failed(status: int, *args: str, worker: WorkerProcess | None = None) -> str:
    """The one line on stderr of a ``dora fs`` command that must fail with ``status``."""
    done = dora(*args, worker=worker)
    assert done.returncode == status, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith(f"dora fs {args[1]}: ") and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    return done.stderr


def test_version() -> None:
    assert ok("--version") == f"dora {metadata.version('doracache')}\n"


def test_a_tree_through_seaweedfs(s3_worker: WorkerProcess, s3_root: str, tmp_path: Path) -> None:
    source = make_tree(tmp_path / "tree")
    up = f"{s3_root}/up"
    uploaded = ok("fs", "put", "-R", str(tmp_path / "tree"), up, worker=s3_worker)
    assert f"upload: {tmp_path}/tree/sub/b.bin to {up}/sub/b.bin\n" in uploaded
    listed = ok("fs", "ls", "-R", f"dora://{up}", worker=s3_worker).splitlines()
    files = [line.split()[-1] for line in listed if line.startswith("-")]
    assert files == sorted(f"{up}/{name}" for name in source)
    total = sum(len(data) for data in source.values())
    assert ok("fs", "du", "-s", up, worker=s3_worker).split() == [str(total), "0", "0%", up]
    found = ok("fs", "find", f"dora::{up}", "--name", "*.parquet", worker=s3_worker)
    assert found == f"{up}/sub/deeper/c.parquet\n"
    matched = ok("fs", "ls", f"{up}/**/*.parquet", worker=s3_worker)
    assert matched.split()[-1] == f"{up}/sub/deeper/c.parquet"
    ok("fs", "get", "-R", "-q", f"dora://{up}", str(tmp_path / "down"), worker=s3_worker)
    assert tree_files(tmp_path / "down") == source
    ok("fs", "cp", "-R", "-q", up, f"{s3_root}/copy", worker=s3_worker)
    ok("fs", "get", "-R", "-q", f"{s3_root}/copy", str(tmp_path / "copy"), worker=s3_worker)
    assert tree_files(tmp_path / "copy") == source
    cached = ok("fs", "du", "-s", "-h", up, worker=s3_worker).split()
    assert cached[-2:] == ["100%", up]  # everything was read through the cache
    assert ok("fs", "cat", f"{up}/a.txt", worker=s3_worker) == "alpha\n"
    ok("fs", "touch", f"{up}/touched", worker=s3_worker)
    assert '"size": 0' in ok("fs", "stat", f"{up}/touched", worker=s3_worker)
    ok("fs", "rm", "-R", up, worker=s3_worker)
    assert up in failed(1, "fs", "ls", up, worker=s3_worker)


def test_commands_on_a_local_directory(worker: WorkerProcess, root: Path, tmp_path: Path) -> None:
    uri = f"file://{root}"
    (tmp_path / "x.txt").write_text("hello")
    assert ok("fs", "cp", str(tmp_path / "x.txt"), f"{uri}/dir/", worker=worker) == (
        f"upload: {tmp_path}/x.txt to {uri}/dir/x.txt\n"
    )
    assert (root / "dir" / "x.txt").read_text() == "hello"
    ok("fs", "put", "-q", str(tmp_path / "x.txt"), f"{uri}/y.txt", worker=worker)
    assert (root / "y.txt").read_text() == "hello"
    ok("fs", "mkdir", f"{uri}/made", worker=worker)
    ok("fs", "mv", f"{uri}/dir/x.txt", f"{uri}/made/", worker=worker)
    assert (root / "made" / "x.txt").read_text() == "hello"
    assert ok("fs", "head", "-c", "4", f"{uri}/made/x.txt", worker=worker) == "hell"
    assert ok("fs", "tail", "-c", "4", f"{uri}/made/x.txt", worker=worker) == "ello"
    assert ok("fs", "invalidate", "-R", uri, worker=worker).startswith("invalidated ")
    loaded = dora("fs", "load", "-R", uri, worker=worker)
    assert loaded.returncode == 0 and "100.0%  10 B/10 B  2/2 files" in loaded.stderr
    listing = ok("fs", "ls", "-h", f"{uri}/made", worker=worker)
    assert listing.split()[:4] == ["-", "5", "B", "100%"]
    ok("fs", "get", f"{uri}/made/x.txt", str(tmp_path / "back.txt"), worker=worker)
    assert (tmp_path / "back.txt").read_text() == "hello"


def test_free_drops_cached_pages_and_keeps_the_store(worker: WorkerProcess, root: Path) -> None:
    (root / "d").mkdir()
    files = {root / "d" / "a.bin": os.urandom(3 << 20), root / "d" / "b.bin": os.urandom(3 << 20),
             root / "c.bin": os.urandom(3 << 20)}  # fmt: skip
    for path, content in files.items():
        path.write_bytes(content)
        read = worker.http.get("/v1/read", params={"path": f"file://{path}"})
        assert read.content == content

    def cached() -> list[int]:
        statuses = [worker.http.get("/v1/status", params={"path": f"file://{p}"}) for p in files]
        return [int(status.json()["cached_bytes"]) for status in statuses]

    assert cached() == [3 << 20] * 3
    freed = ok("fs", "free", f"file://{root}/c.bin", worker=worker)
    assert freed == f"freed file://{root}/c.bin: 1 cached statuses dropped\n"
    assert cached() == [3 << 20, 3 << 20, 0]
    assert ok("fs", "free", "-R", f"file://{root}/d", worker=worker).startswith("freed ")
    assert cached() == [0, 0, 0]
    for path, content in files.items():  # the store is untouched: every file reads back whole
        assert path.read_bytes() == content
        assert worker.http.get("/v1/read", params={"path": f"file://{path}"}).content == content


def test_put_a_directory_needs_r_and_then_uploads_the_tree(
    worker: WorkerProcess, root: Path, tmp_path: Path
) -> None:
    source = make_tree(tmp_path / "tree")
    refused = failed(1, "fs", "put", str(tmp_path / "tree"), f"file://{root}/copy", worker=worker)
    assert refused == (
        f"dora fs put: {tmp_path}/tree is a directory: use -R to upload it and everything in it\n"
    )
    ok("fs", "put", "-R", "-q", str(tmp_path / "tree"), f"file://{root}/copy", worker=worker)
    assert tree_files(root / "copy") == source


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (("stat", "{uri}/missing"), 1, "{uri}/missing"),
        (("cat", "dora://{uri}/missing"), 1, "NotFound"),
        (("get", "{uri}/missing", "{tmp}/out"), 1, "NotFound"),
        (("ls", "file:///etc"), 1, "outside the mount roots"),
        (("put", "{tmp}/missing.txt", "{uri}/m.txt"), 1, "{tmp}/missing.txt: no such local file"),
        (("cp", "{tmp}/a", "{tmp}/b"), 2, "both ends are local"),
        (("ls", "relative/path"), 2, "invalid path 'relative/path'"),
    ],
)  # fmt: skip
def test_failures_are_one_line_and_an_exit_status(
    worker: WorkerProcess,
    root: Path,
    tmp_path: Path,
    argv: tuple[str, ...],
    status: int,
    message: str,
) -> None:
    args = [arg.format(uri=f"file://{root}", tmp=tmp_path) for arg in argv]
    line = failed(status, "fs", *args, worker=worker)
    assert message.format(uri=f"file://{root}", tmp=tmp_path) in line


def test_the_dora_url_forms_name_the_same_file(worker: WorkerProcess, root: Path) -> None:
    (root / "f.txt").write_text("same")
    for form in ("dora://file://{}/f.txt", "dora::file://{}/f.txt", "file://{}/f.txt"):
        assert ok("fs", "cat", form.format(root), worker=worker) == "same"


def test_no_worker_reachable_and_configuration_errors(root: Path) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{unused.getsockname()[1]}"
    line = failed(1, "fs", "ls", f"file://{root}", "--worker", address)
    assert "no worker reachable" in line and address in line
    assert "is not host:port" in failed(2, "fs", "ls", f"file://{root}", "--worker", "nowhere")
    configured = dora("fs", "ls", f"file://{root}", "-Ddora.no.such.key=1")
    assert configured.returncode == 2
    assert configured.stderr.count("\n") == 1 and "dora.no.such.key" in configured.stderr


def test_ctrl_c_is_exit_130_without_a_traceback(root: Path) -> None:
    """A worker that accepts the connection and never answers; Ctrl-C once the call is sent."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen()
        address = f"127.0.0.1:{hung.getsockname()[1]}"
        command = [DORA, "fs", "ls", f"file://{root}", "--worker", address]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            hung.settimeout(120)
            connection, _ = hung.accept()
            with connection:
                assert connection.recv(1024).startswith(b"GET /v1/")  # the call is on its way
                process.send_signal(signal.SIGINT)
                out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert (process.returncode, out, err) == (130, b"", b"dora fs ls: interrupted\n")


def test_a_closed_stdout_ends_cat_quietly(worker: WorkerProcess, root: Path) -> None:
    (root / "big.bin").write_bytes(os.urandom(20 << 20))
    command = [DORA, "fs", "cat", f"file://{root}/big.bin", "--worker", worker.address]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    assert len(process.stdout.read(10)) == 10
    process.stdout.close()  # as `| head -c 10` does
    assert process.stderr.read() == b""
    assert process.wait(timeout=120) == 0


def test_progress_shows_on_a_terminal_only(
    worker: WorkerProcess, root: Path, tmp_path: Path
) -> None:
    (root / "big.bin").write_bytes(os.urandom(3 << 20))
    uri = f"file://{root}/big.bin"
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [DORA, "fs", "get", uri, str(tmp_path / "a.bin"), "--worker", worker.address],
            stdout=subprocess.PIPE, stderr=terminal, check=False, timeout=300,
        )  # fmt: skip
        os.close(terminal)
        shown = _read_all(controller)
    finally:
        os.close(controller)
    assert done.returncode == 0
    assert done.stdout == f"download: {uri} to {tmp_path}/a.bin\n".encode()
    assert b"100.0%  3.0 MiB/3.0 MiB  1/1 files" in shown
    piped = dora("fs", "get", uri, str(tmp_path / "b.bin"), worker=worker)
    assert (piped.returncode, piped.stderr) == (0, "")
    quiet = dora("fs", "get", "-q", uri, str(tmp_path / "c.bin"), worker=worker)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert (tmp_path / "c.bin").read_bytes() == (root / "big.bin").read_bytes()


def _read_all(descriptor: int) -> bytes:
    """What a pseudo-terminal's controller holds once the other side is closed."""
    chunks = []
    while True:
        try:
            chunk = os.read(descriptor, 65536)
        except OSError:  # EIO: the terminal side is closed and everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_each_file_goes_to_its_owner_on_the_hash_ring(
    worker: WorkerProcess, root: Path, tmp_path: Path, data_dir: Path
) -> None:
    second = WorkerProcess(tmp_path, f"dora.worker.ufs.roots=file://{data_dir}")
    try:
        workers = {worker.address: worker, second.address: second}
        uris = [f"file://{root}/f{i}.txt" for i in range(12)]
        for i in range(12):
            (root / f"f{i}.txt").write_text(f"file {i}")
        both = f"-Ddora.user.workers={worker.address},{second.address}"
        assert ok("fs", "cat", f"file://{root}/f*.txt", both).count("file ") == len(uris)
        ring = HashRing(workers, virtual_nodes=200)
        owners = {ring.owner(uri) for uri in uris}
        assert owners == set(workers)  # both own some: the test can tell routing apart
        for uri in uris:
            for address, process in workers.items():
                status = process.http.get("/v1/status", params={"path": uri}).json()
                expected = status["size"] if address == ring.owner(uri) else 0
                assert status["cached_bytes"] == expected, (uri, address)
    finally:
        second.stop()
