"""The prefix table (``dora.worker.path.conf``) read into the rules model: longest prefix per
key, segment boundaries, clear errors, and the index against a scan of 20k rules."""

import random

import pytest

from config import ConfigError
from tests.worker.rules.support import READ, SYNC, conf, policy
from ufs import uri as uris
from worker.rules.live import Rules
from worker.rules.model import Admission, Rule, Settings
from worker.rules.ruleset import Defaults, RuleSet


def test_longest_matching_prefix_wins_per_key() -> None:
    config = conf(
        f"s3://lake {SYNC}=10s",
        f"s3://lake/hot {SYNC}=0",
        f"s3://lake/hot/raw {READ}=NO_CACHE",
    )
    raw = policy(config, "s3://lake/hot/raw/a.parquet")
    # The raw rule sets only the read type: the sync interval still comes from /hot.
    assert (raw.sync_interval, raw.admission) == (0, Admission.PASS)
    hot = policy(config, "s3://lake/hot")
    assert (hot.sync_interval, hot.admission) == (0, Admission.CACHE)
    assert policy(config, "s3://lake/cold/x").sync_interval == 10_000


def test_prefixes_match_on_segment_boundaries_only() -> None:
    config = conf(f"s3://lake/hot {SYNC}=0", **{SYNC: "5s"})
    assert not policy(config, "s3://lake/hotter/x").sync_by_rule
    assert policy(config, "s3://lake/hotter/x").sync_interval == 5_000


def test_no_rule_leaves_the_configured_defaults() -> None:
    found = policy(conf(dora_user_file_readtype_default="NO_CACHE"), "file:///data/x")
    assert (found.sync_interval, found.sync_by_rule, found.admission) == (-1, False, Admission.PASS)


def test_alluxio_names_and_uri_spellings_are_accepted() -> None:
    config = conf("s3://lake/hot/ alluxio.user.file.metadata.sync.interval=-1", **{SYNC: "0"})
    assert policy(config, "S3://lake/hot/a").sync_interval == -1


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("s3://lake", "needs a URI prefix and at least one key=value"),
        ("s3://lake sync=0", "is not key=value for one of"),
        ("s3://lake dora.worker.http.port=1", "is not key=value for one of"),
        (f"s3://lake {SYNC}=soon", f"bad value 'soon' for {SYNC}"),
        (f"s3://lake {READ}=SOMETIMES", "expected one of CACHE"),
        (f"s3://../x {SYNC}=0", "contains a '..' segment"),
    ],
)
def test_a_bad_rule_is_an_error_naming_it(rule: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Rules.from_config(conf(rule))


def test_the_same_key_twice_for_one_prefix_is_an_error() -> None:
    with pytest.raises(ConfigError, match="set twice"):
        Rules.from_config(conf(f"s3://lake {SYNC}=0", f"s3://lake/ {SYNC}=1s"))


def test_describe_and_explain_show_where_values_come_from() -> None:
    rules = Rules.from_config(conf(f"s3://lake/hot {SYNC}=0", f"s3://lake {SYNC}=5min"))
    assert rules.describe() == [f"s3://lake/hot  {SYNC}=0", f"s3://lake  {SYNC}=5min"]
    explained = rules.explain("s3://lake/hot/x")
    assert explained[0] == f"sync-interval=0  (dora.worker.path.conf: s3://lake/hot  {SYNC}=0)"
    assert "admission=cache  (default)" in explained


def test_the_index_finds_what_a_scan_of_every_rule_finds_among_20k_rules() -> None:
    rng = random.Random(7)
    segments = ["a", "b", "ab", "a.b", "x%20y"]

    def some_uri(extra: str = "") -> str:
        scheme = rng.choice(["s3://lake", "s3://lake2", "file://"])
        names = [rng.choice(segments) for _ in range(rng.randint(0, 5))]
        path = "/".join(name for name in [*names, extra] if name)
        return uris.normalize(f"{scheme}/{path}" if path or scheme == "file://" else scheme)

    # Longest first, as the table orders them, so that the first match is the longest.
    prefixes = sorted({some_uri() for _ in range(20_000)} | {"file:///"}, key=lambda p: -len(p))
    intervals = {p: i for i, p in enumerate(prefixes)}
    rules = [Rule(Settings(sync_interval=intervals[p]), "test", p, prefix=p) for p in prefixes]
    ruleset = RuleSet(rules, Defaults(sync_interval=-7))
    for _ in range(2_000):
        uri = some_uri(rng.choice(["", "leaf", "a/leaf"]))
        under = [p for p in prefixes if uris.is_under(uri, p)]
        expected = intervals[max(under, key=len)] if under else -7
        assert ruleset.resolve(uri).sync_interval == expected, uri
