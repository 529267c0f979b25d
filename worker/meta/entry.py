"""What the metadata tiers store for one URI, and the rules for when it expires or needs a sync."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

from ufs.status import UfsStatus
from worker.common.sync import NEVER


def wall_clock_ms() -> int:
    """Now, in epoch ms: the clock ``loaded_at`` is read from (injectable everywhere)."""
    return time.time_ns() // 1_000_000


class Operation(enum.Enum):
    """What produced an entry: a load from the UFS, or a write made through the worker."""

    LOADED = 1
    CREATED = 2
    UPDATED = 3
    DELETED = 4


@dataclass(frozen=True, slots=True)
class MetaEntry:
    """One URI's cached state. ``status`` None is a negative entry: the path does not exist.

    ``loaded_at`` is wall-clock epoch ms, so an entry read back after a restart still has its
    true age.
    """

    status: UfsStatus | None
    loaded_at: int
    op: Operation

    @property
    def version(self) -> str | None:
        """The version the entry names, None for a negative entry."""
        return None if self.status is None else self.status.version


@dataclass(frozen=True)
class Lifetimes:
    """How long an entry lives, counted from its ``loaded_at``: a status for ``ttl_ms`` (the
    metastore TTL), a negative entry for ``negative_ttl_ms``. Both tiers obey it; the memory tier
    may drop an entry sooner (its own TTL and size bound)."""

    ttl_ms: int
    negative_ttl_ms: int

    def expires_at(self, entry: MetaEntry) -> int:
        """The epoch ms from which ``entry`` must no longer be served."""
        life = self.ttl_ms if entry.status is not None else self.negative_ttl_ms
        return entry.loaded_at + life

    def expired(self, entry: MetaEntry, now: int) -> bool:
        return now >= self.expires_at(entry)


def needs_sync(loaded_at: int, sync_interval: int, now: int) -> bool:
    """DESIGN.md's rule: -1 never re-checks, 0 always does, N re-checks once older than N ms."""
    if sync_interval == NEVER:
        return False
    if sync_interval < 0:
        raise ValueError(f"sync interval {sync_interval} is invalid: expected -1, 0 or a duration")
    return now - loaded_at > sync_interval or sync_interval == 0
