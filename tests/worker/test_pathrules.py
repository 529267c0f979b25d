"""Path rules from a file (worker.pathrules): glob patterns, immutable, max-age and serve-stale,
first match wins, precise errors, and a file edited under a running worker taking effect."""

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from config import ConfigError
from worker.pathrules import NEVER, RulesFile, compile_glob, parse
from worker.service import WorkerService


@pytest.mark.parametrize(
    ("pattern", "matching", "other"),
    [
        (
            "s3://lake/**/_delta_log/**",
            [
                "s3://lake/t/_delta_log/0001.json",
                "s3://lake/a/b/_delta_log",
                "s3://lake/_delta_log/x",
            ],
            ["s3://lake/t/data.parquet", "s3://lake/t/_delta_logs/x", "s3://lake2/_delta_log/x"],
        ),
        (
            "s3://lake/*/part-?.parquet",
            ["s3://lake/t/part-1.parquet"],
            ["s3://lake/t/u/part-1.parquet", "s3://lake/t/part-10.parquet"],
        ),
        ("S3://lake/raw/**", ["s3://lake/raw", "s3://lake/raw/a/b"], ["s3://lake/rawer/a"]),
        ("s3://**/x.txt", ["s3://a/x.txt", "s3://a/b/x.txt"], ["s3://a/y.txt"]),
    ],
)
def test_globs(pattern: str, matching: list[str], other: list[str]) -> None:
    regex = compile_glob(pattern)
    assert [uri for uri in matching if regex.fullmatch(uri)] == matching
    assert [uri for uri in other if regex.fullmatch(uri)] == []


def test_first_matching_line_wins() -> None:
    rules = parse(
        "# lakehouse tables\n"
        "s3://lake/**/_delta_log/**  max-age=0\n"
        "s3://lake/**  immutable   # data files never change\n"
        "s3://raw/**   max-age=5min serve-stale\n"
        "s3://**       serve-stale\n",
        "rules",
    )
    assert [r.sync_interval for r in rules] == [0, NEVER, 300_000, None]
    assert [r.serve_stale for r in rules] == [False, False, True, True]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("s3://lake/**", "rules:1: expected '<glob pattern> immutable|max-age=<duration> ["),
        ("\ns3://lake/** mutable", "rules:2: 'mutable' is not immutable, max-age=<duration> or"),
        ("s3://lake/** immutable max-age=1s", "rules:1: 'immutable max-age=1s': expected"),
        ("s3://lake/** serve-stale serve-stale", "rules:1: 'serve-stale serve-stale': expected"),
        ("s3://lake/** max-age=soon", "rules:1: max-age='soon':"),
        ("lake/** immutable", "rules:1: invalid path"),
    ],
)
def test_a_bad_line_is_named(text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(text, "rules")
    assert problem in str(raised.value)


def _interval(rules: RulesFile, uri: str) -> int | None:
    rule = rules.match(uri)
    return None if rule is None else rule.sync_interval


def test_an_edit_is_read_once_checked_and_a_broken_one_is_not(tmp_path: Path) -> None:
    path = tmp_path / "rules"
    path.write_text("s3://lake/** immutable\n")
    now = [0.0]
    rules = RulesFile(path, clock=lambda: now[0])
    assert _interval(rules, "s3://lake/a") == NEVER
    path.write_text("s3://lake/** max-age=10s\n")
    assert _interval(rules, "s3://lake/a") == NEVER  # not checked again yet
    now[0] += 1.0
    assert _interval(rules, "s3://lake/a") == 10_000
    path.write_text("s3://lake/** max-age=\n")
    now[0] += 1.0
    assert _interval(rules, "s3://lake/a") == 10_000  # the broken edit is not taken
    path.unlink()
    now[0] += 1.0
    assert _interval(rules, "s3://lake/a") == 10_000


def test_a_worker_takes_an_edited_rules_file(
    make_service: Callable[..., WorkerService], data_dir: Path, tmp_path: Path
) -> None:
    rules = tmp_path / "rules"
    rules.write_text(f"file://{data_dir}/tables/** immutable\n")
    (data_dir / "tables").mkdir()
    (data_dir / "tables" / "f").write_bytes(b"one")
    uri = f"file://{data_dir}/tables/f"
    # Calls send no sync interval, and the default is "always re-check": only rules differ.
    service = make_service(
        f"dora.worker.path.rules.file={rules}", "dora.user.file.metadata.sync.interval=0"
    )
    assert b"".join(service.read(service.request(uri)).chunks) == b"one"
    (data_dir / "tables" / "f").write_bytes(b"two, longer")
    assert (
        b"".join(service.read(service.request(uri)).chunks) == b"one"
    )  # immutable: never re-checked
    rules.write_text(f"file://{data_dir}/tables/** max-age=0\n")
    deadline = time.monotonic() + 30
    while b"".join(service.read(service.request(uri)).chunks) != b"two, longer":
        assert time.monotonic() < deadline, "the edited rules file was not taken"
        time.sleep(0.1)


def test_a_worker_with_a_broken_rules_file_does_not_start(
    make_service: Callable[..., WorkerService], tmp_path: Path
) -> None:
    rules = tmp_path / "rules"
    rules.write_text("s3://lake/** sometimes\n")
    with pytest.raises(ConfigError, match="rules:1: 'sometimes' is not immutable"):
        make_service(f"dora.worker.path.rules.file={rules}")
    with pytest.raises(ConfigError, match="cannot read"):
        make_service(f"dora.worker.path.rules.file={tmp_path / 'missing'}")
