"""``dora fs cp``, ``get`` and ``put`` in process: where copies land, trees byte for byte, and
failures as one line and an exit status with nothing half-written."""

import os
from pathlib import Path

import httpx
import pytest

from tests.worker.cli.fs.conftest import Cli, cli_on, error_line, make_tree, tree_files
from worker.api.app import create_app
from worker.client.bridge import SyncBridge
from worker.service import WorkerService


def test_a_tree_goes_up_and_down_byte_for_byte(
    cli: Cli, root: str, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = make_tree(tmp_path / "tree")
    assert cli("put", "-R", str(tmp_path / "tree"), f"{root}/up") == 0
    assert tree_files(data_dir / "up") == source
    assert (data_dir / "up" / "empty").is_dir()
    assert cli("get", "-R", f"dora://{root}/up", str(tmp_path / "down")) == 0
    assert tree_files(tmp_path / "down") == source
    assert (tmp_path / "down" / "empty").is_dir()
    assert cli("cp", "-R", f"dora::{root}/up", f"{root}/copy") == 0
    assert tree_files(data_dir / "copy") == source
    lines = capsys.readouterr().out.splitlines()
    assert f"upload: {tmp_path}/tree/sub/b.bin to {root}/up/sub/b.bin" in lines
    assert f"download: {root}/up/sub/b.bin to {tmp_path}/down/sub/b.bin" in lines
    assert f"copy: {root}/up/sub/b.bin to {root}/copy/sub/b.bin" in lines
    assert len(lines) == 3 * len(source)
    assert not list(tmp_path.rglob("*.dora-part"))


@pytest.mark.parametrize(
    ("source", "target", "landed"),
    [
        ("f.txt", "new.txt", "new.txt"),
        ("f.txt", "dir", "dir/f.txt"),  # an existing directory
        ("f.txt", "fresh/", "fresh/f.txt"),  # a trailing slash names a directory
        ("tree", "dir", "dir/tree/x.txt"),
        ("tree", "fresh", "fresh/x.txt"),
        ("tree/", "dir", "dir/x.txt"),  # a trailing slash on the source: its contents
    ],
)
def test_where_a_copy_lands(
    cli: Cli, root: str, data_dir: Path, source: str, target: str, landed: str
) -> None:
    (data_dir / "f.txt").write_text("f")
    (data_dir / "tree").mkdir()
    (data_dir / "tree" / "x.txt").write_text("f")
    (data_dir / "dir").mkdir()
    assert cli("cp", "-R", f"{root}/{source}", f"{root}/{target}") == 0
    assert (data_dir / landed).read_text() == "f"


def test_glob_matches_keep_their_paths_below_the_pattern(
    cli: Cli, root: str, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tree(data_dir / "t")
    (data_dir / "t" / "more").mkdir()
    (data_dir / "t" / "more" / "d.parquet").write_bytes(b"d")
    assert cli("get", "-q", f"{root}/t/**/*.parquet", str(tmp_path / "out")) == 0
    assert sorted(tree_files(tmp_path / "out")) == ["more/d.parquet", "sub/deeper/c.parquet"]
    assert capsys.readouterr().out == ""
    assert cli("get", f"{root}/t/*", str(tmp_path / "files")) == 0  # directories need -R
    assert sorted(tree_files(tmp_path / "files")) == ["a.txt", "zero"]


def test_several_sources_go_into_the_target(
    cli: Cli, root: str, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("one", "two"):
        (tmp_path / name).write_text(name)
    assert cli("put", str(tmp_path / "one"), str(tmp_path / "two"), f"{root}/both") == 0
    assert tree_files(data_dir / "both") == {"one": b"one", "two": b"two"}
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    # Without a local target (the last argument is a URI) get copies into the current directory.
    assert cli("get", f"{root}/both/one", f"{root}/both/two") == 0
    assert tree_files(here) == {"one": b"one", "two": b"two"}


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (("cp", "{root}/tree", "{root}/x"), 1,
         "{root}/tree is a directory: use -R to copy it and everything in it"),
        (("put", "{tmp}/local", "{root}/x"), 1,
         "{tmp}/local is a directory: use -R to upload it and everything in it"),
        (("cp", "-R", "{root}/tree", "{root}/tree/sub/"), 1,
         "cannot copy {root}/tree onto or into itself ({root}/tree/sub/tree)"),
        (("get", "{root}/nothing*"), 1, "{root}/nothing*: no match"),
        (("get", "{root}/tree/*", "{tmp}/o"), 1,
         "{root}/tree/*: matches only directories: use -R to copy them"),
        (("get", "{root}/missing"), 1, "{root}/missing"),
        (("put", "{tmp}/missing", "{root}/x"), 1, "{tmp}/missing: no such local file"),
        (("put", "{tmp}/local/f", "file:///etc/f"), 1, "outside the mount roots"),
        (("cp", "{tmp}/local/f", "{tmp}/g"), 2, "both ends are local"),
        (("cp", "{tmp}/local/f", "{root}/tree", "{root}/x"), 2, "all local or all in the cache"),
        (("get", "s3:/broken", "{tmp}/o"), 2, "invalid path"),
    ],
)  # fmt: skip
def test_failures_are_one_line_and_an_exit_status(
    cli: Cli,
    root: str,
    data_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    status: int,
    message: str,
) -> None:
    (data_dir / "tree" / "sub").mkdir(parents=True)
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "f").write_text("f")
    assert cli(*(a.format(root=root, tmp=tmp_path) for a in argv)) == status
    assert message.format(root=root, tmp=tmp_path) in error_line(capsys.readouterr().err, argv[0])


class FailingReads(httpx.BaseTransport):
    """Sends every request through ``inner``, except that reads after the first ``good``
    cannot connect."""

    def __init__(self, inner: httpx.BaseTransport, good: int) -> None:
        self.inner = inner
        self.good = good

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/read":
            if self.good == 0:
                raise httpx.ConnectError("connection refused", request=request)
            self.good -= 1
        return self.inner.handle_request(request)


def test_a_failed_download_leaves_no_file(
    service: WorkerService, root: str, data_dir: Path, tmp_path: Path
) -> None:
    (data_dir / "big.bin").write_bytes(os.urandom(20_000))
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept.bin").write_bytes(b"old")
    transport = FailingReads(SyncBridge(httpx.ASGITransport(app=create_app(service))), good=2)
    # Over HTTP only: the pages the first try cached would otherwise be read from their files.
    cli = cli_on(
        transport,
        "dora.user.client.read.chunk.size=4KB",
        "dora.user.client.short.circuit.enabled=false",
    )
    assert cli("get", f"{root}/big.bin", str(out / "kept.bin")) == 1
    assert (out / "kept.bin").read_bytes() == b"old"
    assert [p.name for p in out.iterdir()] == ["kept.bin"]
    assert cli("get", f"{root}/big.bin", str(out / "new.bin")) == 1
    assert [p.name for p in out.iterdir()] == ["kept.bin"]
