"""``dora fs rm``, ``mv``, ``mkdir``, ``touch`` and ``invalidate`` in process."""

from pathlib import Path

import pytest

from tests.worker.cli.fs.conftest import Cli, error_line


def test_touch_creates_missing_files_and_leaves_existing_ones(
    cli: Cli, root: str, data_dir: Path
) -> None:
    (data_dir / "kept.txt").write_text("kept")
    (data_dir / "dir").mkdir()
    assert cli("touch", f"{root}/new.txt", f"dora://{root}/kept.txt", f"{root}/dir") == 0
    assert (data_dir / "new.txt").read_bytes() == b""
    assert (data_dir / "kept.txt").read_text() == "kept"
    assert (data_dir / "dir").is_dir()


def test_mkdir_mv_and_rm(cli: Cli, root: str, data_dir: Path) -> None:
    assert cli("mkdir", f"{root}/a/b", f"{root}/c") == 0
    assert (data_dir / "a" / "b").is_dir() and (data_dir / "c").is_dir()
    (data_dir / "a" / "b" / "x.log").write_text("x")
    (data_dir / "a" / "y.log").write_text("y")
    assert cli("mv", f"{root}/a", f"{root}/c/") == 0  # into a directory
    assert (data_dir / "c" / "a" / "b" / "x.log").read_text() == "x"
    assert cli("rm", f"{root}/c/a/*.log") == 0
    assert not (data_dir / "c" / "a" / "y.log").exists()
    assert cli("rm", f"{root}/c/a") == 1  # not empty
    assert cli("rm", "-R", f"{root}/c/a") == 0
    assert not (data_dir / "c" / "a").exists()


def test_invalidate_drops_what_the_worker_cached(
    cli: Cli, root: str, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (data_dir / "d").mkdir()
    (data_dir / "d" / "f.txt").write_text("one")
    assert cli.session.fs.cat_file(f"{root}/d/f.txt") == b"one"
    (data_dir / "d" / "f.txt").write_text("two")  # behind the worker's back
    assert cli("invalidate", "-R", f"{root}/d") == 0
    assert capsys.readouterr().out.startswith("invalidated ")
    assert cli.session.fs.cat_file(f"{root}/d/f.txt") == b"two"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("rm", "{root}/missing"), "{root}/missing"),
        (("rm", "{root}/*.none"), "{root}/*.none: no match"),
        (("mv", "{root}/missing", "{root}/x"), "{root}/missing"),
        (("touch", "file:///etc/x"), "outside the mount roots"),
        (("mkdir", "file:///etc/x"), "outside the mount roots"),
    ],
)
def test_failures_are_one_line(
    cli: Cli, root: str, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    assert cli(*(a.format(root=root) for a in argv)) == 1
    assert message.format(root=root) in error_line(capsys.readouterr().err, argv[0])
