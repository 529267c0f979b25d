"""The one precedence: per field, the first matching rule of the rules file (top to bottom),
then of the include/exclude globs, then of the prefix table (longest first), then the
defaults; globs and prefixes rank by position only."""

from pathlib import Path

from tests.worker.rules.support import READ, SYNC, conf, policy
from worker.rules.keys import RULES_FILE
from worker.rules.model import Admission, Quota


def test_per_field_the_first_matching_line_wins(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.write_text(
        "s3://lake/gold/*.parquet  immutable\n"  # a glob, before the prefix below
        "s3://lake/gold/**         max-age=1min admission=second-read quota=1GB\n"
        "s3://lake/**              max-age=1h pin serve-stale\n"
    )
    config = conf(**{RULES_FILE.name: str(rules)})
    data = policy(config, "s3://lake/gold/a.parquet")
    assert data.sync_interval == -1  # the glob's line comes first
    assert data.admission is Admission.SECOND_READ  # the glob sets none: the next line's
    assert (data.pin, data.serve_stale) == (True, True)  # only the last line sets these
    assert data.quota == Quota(1 << 30, f"{rules}:2", "s3://lake/gold/**")
    other = policy(config, "s3://lake/gold/a.csv")
    assert other.sync_interval == 60_000


def test_a_prefix_line_before_a_glob_wins_over_it(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.write_text("s3://lake/gold/** max-age=1min\ns3://lake/gold/*.parquet immutable\n")
    config = conf(**{RULES_FILE.name: str(rules)})
    assert policy(config, "s3://lake/gold/a.parquet").sync_interval == 60_000


def test_the_file_wins_over_the_table_which_fills_in_what_it_leaves(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.write_text("s3://lake/hot/** max-age=1s\n")
    config = conf(
        f"s3://lake/hot/deeper {SYNC}=0",
        f"s3://lake/hot {READ}=NO_CACHE",
        **{RULES_FILE.name: str(rules)},
    )
    found = policy(config, "s3://lake/hot/deeper/x")
    assert (found.sync_interval, found.admission) == (1_000, Admission.PASS)


def test_exclude_and_include_globs_pass_through_over_the_table(tmp_path: Path) -> None:
    config = conf(
        f"s3://lake {READ}=CACHE",
        **{"dora.worker.cache.exclude": "*.tmp", "dora.worker.cache.include": "s3://lake/*"},
    )
    assert policy(config, "s3://lake/a/x.tmp").admission is Admission.PASS
    assert policy(config, "s3://lake/a/x.csv").admission is Admission.CACHE
    assert policy(config, "s3://other/x.csv").admission is Admission.PASS
    # A rules file line ranks above them.
    rules = tmp_path / "rules"
    rules.write_text("s3://lake/keep/** admission=cache\n")
    with_file = conf(**{"dora.worker.cache.exclude": "*.tmp", RULES_FILE.name: str(rules)})
    assert policy(with_file, "s3://lake/keep/x.tmp").admission is Admission.CACHE


def test_defaults_fill_every_field_no_rule_sets() -> None:
    found = policy(
        conf(**{SYNC: "30s", "dora.user.file.metadata.sync.serve.stale": "true"}), "s3://a/b"
    )
    assert (found.sync_interval, found.sync_by_rule, found.serve_stale) == (30_000, False, True)
    assert (found.admission, found.pin, found.ttl, found.quota) == (
        Admission.CACHE,
        False,
        None,
        None,
    )
