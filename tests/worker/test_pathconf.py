"""Per-path properties: longest prefix per key, per-call options first, clear errors."""

import random

import pytest

from config import Config, ConfigError, load_config
from ufs import uri as uris
from ufs.errors import UfsInvalidPath
from worker import pathconf
from worker.common import client_keys
from worker.keys import build_registry


def conf(*rules: str, **defines: str) -> Config:
    settings = [f"{k.replace('_', '.')}={v}" for k, v in defines.items()]
    return load_config(
        build_registry(),
        environ={},
        defines=[f"dora.worker.path.conf={', '.join(rules)}", *settings],
    )


SYNC = "dora.user.file.metadata.sync.interval"
READ = "dora.user.file.readtype.default"


def test_longest_matching_prefix_wins_per_key() -> None:
    config = conf(
        f"s3://lake {SYNC}=10s",
        f"s3://lake/hot {SYNC}=0",
        f"s3://lake/hot/raw {READ}=NO_CACHE",
    )
    raw = pathconf.resolve(config, "s3://lake/hot/raw/a.parquet")
    # The raw rule sets only the read type: the sync interval still comes from /hot.
    assert raw == pathconf.PathSettings(sync_interval=0, cache=False)
    assert pathconf.resolve(config, "s3://lake/hot") == pathconf.PathSettings(0, True)
    assert pathconf.resolve(config, "s3://lake/cold/x") == pathconf.PathSettings(10_000, True)


def test_prefixes_match_on_segment_boundaries_only() -> None:
    config = conf(f"s3://lake/hot {SYNC}=0")
    assert pathconf.resolve(config, "s3://lake/hotter/x").sync_interval is None


def test_a_per_call_option_wins_over_every_rule() -> None:
    config = conf(f"s3://lake {SYNC}=0")
    assert pathconf.resolve(config, "s3://lake/x", sync_interval=-1).sync_interval == -1


def test_no_rule_leaves_the_configured_defaults() -> None:
    config = conf(dora_user_file_readtype_default="NO_CACHE")
    assert pathconf.resolve(config, "file:///data/x") == pathconf.PathSettings(None, False)


def test_alluxio_names_and_uri_spellings_are_accepted() -> None:
    config = conf("s3://lake/hot/ alluxio.user.file.metadata.sync.interval=-1")
    assert pathconf.resolve(config, "S3://lake/hot/a").sync_interval == -1


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
        pathconf.table(conf(rule))


def test_the_same_key_twice_for_one_prefix_is_an_error() -> None:
    with pytest.raises(ConfigError, match="set twice"):
        pathconf.table(conf(f"s3://lake {SYNC}=0", f"s3://lake/ {SYNC}=1s"))


def test_a_malformed_uri_is_refused() -> None:
    with pytest.raises(UfsInvalidPath):
        pathconf.resolve(conf(), "no-scheme")


def test_describe_and_explain_show_where_values_come_from() -> None:
    config = conf(f"s3://lake/hot {SYNC}=0", f"s3://lake {SYNC}=5min")
    assert pathconf.describe(config) == [f"s3://lake/hot  {SYNC}=0", f"s3://lake  {SYNC}=5min"]
    assert pathconf.explain(config, "s3://lake/hot/x") == [
        f"{SYNC}=0  (rule for s3://lake/hot)",
        f"{READ}=CACHE  (default)",
    ]


def test_the_index_finds_what_a_scan_of_every_rule_finds_among_20k_rules() -> None:
    rng = random.Random(7)
    segments = ["a", "b", "ab", "a.b", "x%20y"]

    def some_uri(extra: str = "") -> str:
        scheme = rng.choice(["s3://lake", "s3://lake2", "file://"])
        names = [rng.choice(segments) for _ in range(rng.randint(0, 5))]
        path = "/".join(name for name in [*names, extra] if name)
        return uris.normalize(f"{scheme}/{path}" if path or scheme == "file://" else scheme)

    prefixes = sorted({some_uri() for _ in range(20_000)} | {"file:///"})
    rules = [
        pathconf.PathRule(p, client_keys.SYNC_INTERVAL, i, str(i)) for i, p in enumerate(prefixes)
    ]
    table = pathconf.PathTable(rules)
    for _ in range(2_000):
        uri = some_uri(rng.choice(["", "leaf", "a/leaf"]))
        under = [r for r in rules if uris.is_under(uri, r.prefix)]
        expected = max(under, key=lambda r: len(r.prefix)) if under else None
        assert table.lookup(client_keys.SYNC_INTERVAL, uri) == expected, uri
