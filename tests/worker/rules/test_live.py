"""The rules in force: a changed file is re-read (checked at most once a second), ``reload()``
re-reads at once, and a file that no longer parses keeps the rules before, logged precisely."""

import logging
from pathlib import Path

import pytest

from worker.rules.live import Rules
from worker.rules.model import Admission
from worker.rules.ruleset import Defaults


def _interval(rules: Rules, uri: str) -> int:
    return rules.resolve(uri).sync_interval


def test_an_edit_is_read_once_checked_and_a_broken_one_is_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "rules"
    path.write_text("s3://lake/** immutable\n")
    now = [0.0]
    rules = Rules((), Defaults(sync_interval=5), path, clock=lambda: now[0])
    assert _interval(rules, "s3://lake/a") == -1
    path.write_text("s3://lake/** max-age=10s\n")
    assert _interval(rules, "s3://lake/a") == -1  # not checked again yet
    now[0] += 1.0
    assert _interval(rules, "s3://lake/a") == 10_000
    path.write_text("s3://lake/** max-age=10s\ns3://lake/x/** admission=pass ttl=never\n")
    now[0] += 1.0
    with caplog.at_level(logging.ERROR, logger="worker.rules.live"):
        assert _interval(rules, "s3://lake/a") == 10_000  # the broken edit is not taken
    assert rules.resolve("s3://lake/x/y").admission is Admission.CACHE
    assert f"{path}:2: ttl='never': expected a duration" in caplog.text
    assert "the previous ones stay in force" in caplog.text
    path.unlink()
    now[0] += 1.0
    assert _interval(rules, "s3://lake/a") == 10_000


def test_reload_re_reads_at_once_and_says_whether_it_took(tmp_path: Path) -> None:
    path = tmp_path / "rules"
    path.write_text("s3://lake/** immutable\n")
    rules = Rules((), Defaults(), path, clock=lambda: 0.0)  # the clock never lets it check
    path.write_text("s3://lake/** max-age=1s\n")
    assert _interval(rules, "s3://lake/a") == -1
    assert rules.reload()
    assert _interval(rules, "s3://lake/a") == 1_000
    path.write_text("s3://lake/** pin=sometimes\n")
    assert not rules.reload()
    assert _interval(rules, "s3://lake/a") == 1_000


def test_without_a_file_the_rules_are_the_configurations() -> None:
    rules = Rules((), Defaults(sync_interval=7, admission=Admission.PASS))
    found = rules.resolve("s3://a/b")
    assert (found.sync_interval, found.admission) == (7, Admission.PASS)
    assert rules.reload()
