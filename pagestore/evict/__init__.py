"""Eviction policies, one module each; :func:`make_evictor` picks one by its configured name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pagestore.evict.base import Evictor, K
from pagestore.evict.lfu import LfuEvictor
from pagestore.evict.lru import LruEvictor
from pagestore.evict.s3fifo import S3FifoEvictor
from pagestore.evict.slru import SlruEvictor
from pagestore.evict.tinylfu import TinyLfuEvictor

_POLICIES: dict[str, Callable[[], Evictor[Any]]] = {
    "lru": LruEvictor,
    "lfu": LfuEvictor,
    "s3fifo": S3FifoEvictor,
    "slru": SlruEvictor,
    "tinylfu": TinyLfuEvictor,
}
EVICTORS = tuple(_POLICIES)
"""The names of the policies, as ``dora.worker.page.store.evictor`` accepts them."""

DEFAULT_EVICTOR = "s3fifo"
"""The default policy, chosen by measurement (bench/experiments/evict_bench.py, bench/RESULTS.md):
it alone
keeps at least 90% of a hot set through a one-pass scan and caches 90% of a new hot set read
three times, its hit ratio on a scanned Zipf trace is within a point of the best, and a read
costs it under a microsecond more than LRU."""


def make_evictor(name: str) -> Evictor[K]:
    """A new, empty evictor for the policy ``name`` (one of :data:`EVICTORS`); ValueError
    otherwise."""
    policy = _POLICIES.get(name)
    if policy is None:
        raise ValueError(f"unknown evictor {name!r}; expected one of {', '.join(EVICTORS)}")
    return policy()


__all__ = [
    "DEFAULT_EVICTOR",
    "EVICTORS",
    "Evictor",
    "LfuEvictor",
    "LruEvictor",
    "S3FifoEvictor",
    "SlruEvictor",
    "TinyLfuEvictor",
    "make_evictor",
]
