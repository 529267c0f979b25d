"""Option dataclasses for the metadata tiers, built once from the configuration."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field

from config import Config
from config.core_keys import WORK_DIR
from worker.common import client_keys
from worker.common.sync import NEVER
from worker.meta import keys
from worker.meta.entry import Lifetimes


class RecoverPolicy(enum.Enum):
    """What to do when the metastore directory cannot be opened."""

    WIPE = "wipe"
    FAIL = "fail"


@dataclass(frozen=True)
class CacheOptions:
    """The memory tier's bounds and the default sync interval (all durations in ms)."""

    status_cache_size: int = 100_000
    status_ttl_ms: int = 3_600_000
    list_cache_dirs: int = 1000
    list_ttl_ms: int = 3_600_000
    sync_interval_ms: int = NEVER

    @classmethod
    def from_config(cls, config: Config) -> CacheOptions:
        return cls(
            status_cache_size=config.get(keys.STATUS_CACHE_SIZE),
            status_ttl_ms=config.get(keys.STATUS_CACHE_TTL),
            list_cache_dirs=config.get(keys.LIST_CACHE_DIRS),
            list_ttl_ms=config.get(keys.LIST_CACHE_TTL),
            sync_interval_ms=config.get(client_keys.SYNC_INTERVAL),
        )


@dataclass(frozen=True)
class MetastoreOptions:
    """Where and how the RocksDB metastore keeps entries."""

    path: str
    lifetimes: Lifetimes = field(default_factory=lambda: Lifetimes(86_400_000, 10_000))
    flush_interval_ms: int = 100
    recover: RecoverPolicy = RecoverPolicy.WIPE

    @classmethod
    def from_config(cls, config: Config) -> MetastoreOptions:
        path = config.get(keys.METASTORE_DIR) or os.path.join(
            os.path.expanduser(config.get(WORK_DIR)), "metastore"
        )
        return cls(
            path=os.path.expanduser(path),
            lifetimes=Lifetimes(
                ttl_ms=config.get(keys.METASTORE_TTL),
                negative_ttl_ms=config.get(keys.NEGATIVE_CACHE_TTL),
            ),
            flush_interval_ms=config.get(keys.METASTORE_FLUSH_INTERVAL),
            recover=RecoverPolicy(config.get(keys.METASTORE_RECOVER)),
        )
