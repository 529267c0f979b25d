"""``dora fs cat``, ``head`` and ``tail`` in process."""

import os
from pathlib import Path

import pytest

from tests.worker.cli.fs.conftest import Cli, error_line


def test_cat_head_and_tail_write_bytes_to_stdout(
    cli: Cli, root: str, data_dir: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    content = os.urandom(50_000)
    (data_dir / "a.bin").write_bytes(content)
    (data_dir / "b.txt").write_bytes(b"bee\n")
    assert cli("cat", f"dora://{root}/a.bin", f"{root}/*.txt") == 0
    assert capsysbinary.readouterr().out == content + b"bee\n"
    assert cli("head", "-c", "10", f"{root}/a.bin") == 0
    assert capsysbinary.readouterr().out == content[:10]
    assert cli("tail", "-c", "10", f"{root}/a.bin") == 0
    assert capsysbinary.readouterr().out == content[-10:]
    assert cli("tail", "-c", "0", f"{root}/a.bin") == 0
    assert cli("head", "-c", "100", f"{root}/b.txt") == 0
    assert capsysbinary.readouterr().out == b"bee\n"
    assert cli("tail", f"{root}/b.txt") == 0  # 1 KB by default
    assert capsysbinary.readouterr().out == b"bee\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("cat", "{root}"), "cannot cat {root}: it is a directory"),
        (("cat", "{root}/missing"), "{root}/missing"),
        (("head", "{root}"), "is a directory"),
        (("tail", "{root}/missing"), "{root}/missing"),
    ],
)
def test_failures_are_one_line(
    cli: Cli,
    root: str,
    capsysbinary: pytest.CaptureFixture[bytes],
    argv: tuple[str, ...],
    message: str,
) -> None:
    assert cli(*(a.format(root=root) for a in argv)) == 1
    captured = capsysbinary.readouterr()
    assert captured.out == b""
    assert message.format(root=root) in error_line(captured.err.decode(), argv[0])
