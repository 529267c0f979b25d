"""Building the metadata tiers from properties."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import ConfigError, load_config
from config.loader import Config
from tests.worker.meta.support import CountingUfs, FakeClock, Outside
from worker.keys import build_registry
from worker.meta.entry import Lifetimes
from worker.meta.manager import MetadataManager
from worker.meta.options import CacheOptions, MetastoreOptions, RecoverPolicy


def config(*defines: str) -> Config:
    return load_config(build_registry(), environ={}, defines=defines)


def test_defaults_follow_the_design() -> None:
    cache = CacheOptions.from_config(config("dora.work.dir=/var/lib/dora"))
    assert cache == CacheOptions(100_000, 3_600_000, 1000, 3_600_000, -1)
    store = MetastoreOptions.from_config(config("dora.work.dir=/var/lib/dora"))
    assert store == MetastoreOptions(
        "/var/lib/dora/metastore", Lifetimes(86_400_000, 10_000), 100, RecoverPolicy.WIPE
    )


def test_the_work_dir_and_the_metastore_dir_expand_the_home(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOME", "/home/ada")
    assert MetastoreOptions.from_config(config()).path == "/home/ada/.cache/doracache/metastore"
    explicit = config("dora.worker.metastore.rocksdb.dir=~/meta")
    assert MetastoreOptions.from_config(explicit).path == "/home/ada/meta"


def test_alluxio_names_and_durations_are_accepted() -> None:
    cache = CacheOptions.from_config(
        config(
            "alluxio.user.file.metadata.sync.interval=30s",
            "alluxio.dora.ufs.file.status.cache.size=5",
            "dora.worker.metastore.rocksdb.recover=fail",
        )
    )
    assert (cache.sync_interval_ms, cache.status_cache_size) == (30_000, 5)
    store = MetastoreOptions.from_config(config("dora.worker.metastore.rocksdb.recover=fail"))
    assert store.recover is RecoverPolicy.FAIL


def test_a_bad_recover_policy_is_refused() -> None:
    with pytest.raises(ConfigError, match="wipe, fail"):
        config("dora.worker.metastore.rocksdb.recover=repair")


def test_from_config_opens_the_rocksdb_metastore(
    tmp_path: Path, outside: Outside, clock: FakeClock
) -> None:
    settings = config(
        f"dora.work.dir={tmp_path / 'work'}", "dora.user.file.metadata.sync.interval=0"
    )
    ufs = CountingUfs()
    manager = MetadataManager.from_config(settings, ufs, clock)
    outside.write("a", b"one")
    manager.reads.get_status(outside.uri("a"))
    manager.reads.get_status(outside.uri("a"))
    manager.close()
    assert ufs.calls == 2
    assert (tmp_path / "work" / "metastore" / "DORACACHE").is_file()
