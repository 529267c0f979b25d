"""A request's freshness, resolved once: call option, path rule, feed revision, default."""

from pathlib import Path

import pytest

from config import Config
from tests.worker.rules.support import READ, SYNC, conf, policy
from worker.common.client_keys import SERVE_STALE
from worker.common.sync import stricter
from worker.freshness import Freshness, IntervalSource, listed
from worker.freshness import resolve as resolve_policy
from worker.rules.keys import RULES_FILE
from worker.rules.live import Rules


def resolve(
    config: Config,
    uri: str,
    given: int | None = None,
    *,
    must_sync: bool = False,
    serve_stale: bool | None = None,
) -> Freshness:
    """The freshness of a call to ``uri`` under ``config``'s rules."""
    return resolve_policy(policy(config, uri), given, must_sync=must_sync, serve_stale=serve_stale)


def test_the_call_wins_over_the_rule_which_wins_over_the_default() -> None:
    config = conf(f"s3://lake/hot {SYNC}=0", f"s3://lake/raw {READ}=NO_CACHE", **{SYNC: "30s"})
    assert resolve(config, "s3://lake/hot/a", -1) == Freshness(-1, IntervalSource.CALL, 0)
    assert resolve(config, "s3://lake/hot/a") == Freshness(0, IntervalSource.RULE, 0)
    assert resolve(config, "s3://lake/raw/a") == Freshness(30_000, IntervalSource.DEFAULT, 30_000)


def test_a_revision_the_worker_has_not_applied_re_checks_whatever_else_says() -> None:
    config = conf(f"s3://lake/cold {SYNC}=-1")
    assert resolve(config, "s3://lake/cold/a", -1, must_sync=True) == Freshness(
        0, IntervalSource.REVISION, -1
    )


@pytest.mark.parametrize(
    ("a", "b", "strictest"), [(-1, 30, 30), (30, -1, 30), (0, 30, 0), (-1, -1, -1), (10, 20, 10)]
)
def test_the_stricter_interval_re_checks_sooner(a: int, b: int, strictest: int) -> None:
    assert stricter(a, b) == strictest


def test_a_listed_child_takes_its_own_rule_only_where_one_names_it() -> None:
    config = conf(f"s3://lake/d/named {SYNC}=0", f"s3://lake/d/named/deeper {SYNC}=5s")
    directory = resolve(config, "s3://lake/d")
    children = ["s3://lake/d/named", "s3://lake/d/other"]
    assert listed(Rules.from_config(config), directory, children) == [0, -1]


def test_a_listed_child_a_glob_names_takes_its_interval(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.write_text("s3://lake/d/*.json max-age=0\n")
    config = conf(**{RULES_FILE.name: str(rules)})
    directory = resolve(config, "s3://lake/d")
    children = ["s3://lake/d/a.json", "s3://lake/d/b.csv"]
    assert listed(Rules.from_config(config), directory, children) == [0, -1]


def test_serve_stale_comes_from_the_call_then_the_rules_file_then_the_default(
    tmp_path: Path,
) -> None:
    rules = tmp_path / "rules"
    rules.write_text("s3://lake/hot/** max-age=0 serve-stale\n")
    config = conf(**{RULES_FILE.name: str(rules)})
    assert resolve(config, "s3://lake/hot/a").serve_stale
    assert not resolve(config, "s3://lake/hot/a", 0, serve_stale=False).serve_stale
    # A call that sends its own sync interval (0: the truth) is served stale only if it says so.
    assert not resolve(config, "s3://lake/hot/a", 0).serve_stale
    assert resolve(config, "s3://lake/hot/a", 0, serve_stale=True).serve_stale
    assert not resolve(config, "s3://lake/cold/a").serve_stale
    assert resolve(config, "s3://lake/cold/a", serve_stale=True).serve_stale
    assert resolve(conf(**{SERVE_STALE.name: "true"}), "s3://lake/cold/a").serve_stale
    assert not resolve(conf(**{SERVE_STALE.name: "true"}), "s3://lake/cold/a", 0).serve_stale
    # A request that must sync never serves stale, whatever allows it.
    assert not resolve(config, "s3://lake/hot/a", serve_stale=True, must_sync=True).serve_stale
