"""Quota rules: a path rule's quota and a ``caller:<identity>`` line read into the model, and
the request context's charge: the path's quota, and the caller's only when a client
certificate proved who it is."""

from pathlib import Path

import pytest

from config import ConfigError
from pagestore.quota import Account
from tests.worker.rules.support import conf
from worker.request import context
from worker.rules.keys import RULES_FILE
from worker.rules.live import Rules
from worker.rules.parse import parse_file

RULES = (
    "s3://lake/gold/** quota=1GB\n"
    "s3://lake/**      quota=10GB pin\n"
    "caller:etl-nightly quota=2GB\n"
    "caller:etl-nightly quota=5GB\n"  # the first line for an identity wins, as for paths
)


@pytest.fixture
def rules(tmp_path: Path) -> Rules:
    path = tmp_path / "rules"
    path.write_text(RULES)
    return Rules.from_config(conf(**{RULES_FILE.name: str(path)}))


def test_a_file_counts_against_the_first_rule_that_gives_it_a_quota(rules: Rules) -> None:
    assert context(rules, "s3://lake/gold/a").charge == (Account("s3://lake/gold/**", 1 << 30),)
    assert context(rules, "s3://lake/raw/a").charge == (Account("s3://lake/**", 10 << 30),)
    assert context(rules, "s3://other/a").charge == ()


def test_a_proven_callers_quota_is_charged_with_the_paths(rules: Rules) -> None:
    proven = context(rules, "s3://lake/gold/a", caller="etl-nightly", identity="etl-nightly")
    assert proven.charge == (
        Account("s3://lake/gold/**", 1 << 30),
        Account("caller:etl-nightly", 2 << 30),
    )
    # A caller nothing proved (WebHDFS's user.name) has no quota: it could name anyone.
    claimed = context(rules, "s3://lake/gold/a", caller="etl-nightly")
    assert claimed.charge == (Account("s3://lake/gold/**", 1 << 30),)
    assert context(rules, "s3://other/a", identity="analyst").charge == ()


@pytest.mark.parametrize(
    "line",
    ["caller: quota=1GB", "caller:bob pin", "caller:bob quota=1GB ttl=1h", "caller:bob quota=0"],
)
def test_a_caller_line_sets_a_quota_and_nothing_else(line: str) -> None:
    with pytest.raises(ConfigError, match="rules:1: "):
        parse_file(line + "\n", "rules")
