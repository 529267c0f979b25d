"""``dora fs ls``, ``stat``, ``du`` and ``find`` in process: what they print for directories,
files and patterns, and their failures."""

import datetime
import json
from pathlib import Path

import pytest

from tests.worker.cli.fs.conftest import Cli, error_line, make_tree


@pytest.fixture
def tree(data_dir: Path) -> Path:
    make_tree(data_dir / "t")
    return data_dir / "t"


def names(out: str) -> list[str]:
    """The last column of each line (the URI)."""
    return [line.split()[-1] for line in out.splitlines()]


def test_ls_lists_children_everything_below_or_a_patterns_matches(
    cli: Cli, root: str, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = f"{root}/t"
    assert cli("ls", t) == 0
    assert names(capsys.readouterr().out) == [f"{t}/{n}" for n in ("a.txt", "empty", "sub", "zero")]
    assert cli("ls", "-R", f"dora://{t}/") == 0
    below = names(capsys.readouterr().out)
    assert below == sorted(below) and len(below) == 7 and f"{t}/sub/deeper/c.parquet" in below
    assert cli("ls", f"dora::{t}/**/*.parquet", f"{t}/a.txt") == 0
    out = capsys.readouterr().out
    assert names(out) == [f"{t}/sub/deeper/c.parquet", f"{t}/a.txt"]
    assert out.splitlines()[1].split()[:3] == ["-", "6", "0%"]


def test_ls_long_form_shows_kind_size_share_cached_and_human_sizes(
    cli: Cli, root: str, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.session.fs.cat_file(f"{root}/t/sub/b.bin")  # cached now
    assert cli("ls", "-h", f"{root}/t/sub") == 0
    b_line, deeper_line = capsys.readouterr().out.splitlines()
    assert b_line.split()[:4] == ["-", "68.4", "KiB", "100%"]
    # A local directory has a modification time of its own, shown as a file's is.
    kind, size, date, _, name = deeper_line.split()
    assert (kind, size, name) == ("d", "-", f"{root}/t/sub/deeper")
    assert date == datetime.datetime.fromtimestamp((tree / "sub/deeper").stat().st_mtime).strftime(
        "%Y-%m-%d"
    )


def test_stat_prints_each_status_as_json(
    cli: Cli, root: str, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("stat", f"{root}/t/a.txt") == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["name"], status["size"], status["type"]) == (f"{root}/t/a.txt", 6, "file")


def test_du_totals_each_child_or_with_s_the_whole_path(
    cli: Cli, root: str, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = f"{root}/t"
    sub_size = 70_000 + 3004
    assert cli("du", t) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows == [
        ["6", "0", "0%", f"{t}/a.txt"],
        ["0", "0", "0%", f"{t}/empty"],
        [str(sub_size), "0", "0%", f"{t}/sub"],
        ["0", "0", "0%", f"{t}/zero"],
    ]
    cli.session.fs.cat_file(f"{t}/sub/b.bin")  # cached now
    assert cli("du", "-s", "-h", t, f"{t}/*.txt") == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows == [
        ["71.3", "KiB", "68.4", "KiB", "95%", t],
        ["6", "B", "0", "B", "0%", f"{t}/a.txt"],
    ]


def test_find_filters_by_name_type_and_depth(
    cli: Cli, root: str, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = f"{root}/t"
    assert cli("find", t, "--name", "*.parquet") == 0
    assert capsys.readouterr().out.splitlines() == [f"{t}/sub/deeper/c.parquet"]
    assert cli("find", t, "--type", "d") == 0
    assert capsys.readouterr().out.splitlines() == [f"{t}/empty", f"{t}/sub", f"{t}/sub/deeper"]
    assert cli("find", t, "--maxdepth", "1", "--type", "f") == 0
    assert capsys.readouterr().out.splitlines() == [f"{t}/a.txt", f"{t}/zero"]
    assert cli("find", f"{t}/s*", "--name", "[bc]*") == 0  # a match and what is below it
    assert capsys.readouterr().out.splitlines() == [f"{t}/sub/b.bin", f"{t}/sub/deeper/c.parquet"]
    assert cli("find", t, "--name", "nothing") == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (("ls", "{root}/missing"), 1, "{root}/missing"),
        (("ls", "-R", "{root}/missing"), 1, "{root}/missing"),
        (("du", "{root}/missing"), 1, "{root}/missing"),
        (("find", "{root}/missing"), 1, "{root}/missing"),
        (("ls", "{root}/*.nothing"), 1, "{root}/*.nothing: no match"),
        (("stat", "file:///etc"), 1, "outside the mount roots"),
        (("ls", "relative/x"), 2, "invalid path 'relative/x'"),
    ],
)
def test_failures_are_one_line_and_an_exit_status(
    cli: Cli,
    root: str,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    status: int,
    message: str,
) -> None:
    assert cli(*(a.format(root=root) for a in argv)) == status
    assert message.format(root=root) in error_line(capsys.readouterr().err, argv[0])
