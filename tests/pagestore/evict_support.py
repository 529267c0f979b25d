"""A page cache reduced to ids, over a real evictor: what the eviction tests and
``bench/experiments/evict_bench.py`` replay traces against."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from pagestore.evict import Evictor, make_evictor


class IdCache:
    """Holds at most ``capacity`` ids, asking the evictor ``policy`` for a victim whenever a new
    id needs room, as the stores do; checks that every victim is an id it holds. Not
    thread-safe."""

    def __init__(self, policy: str, capacity: int) -> None:
        self.evictor: Evictor[Hashable] = make_evictor(policy)
        self.capacity = capacity
        self.held: set[Hashable] = set()
        self.hits = 0
        self.misses = 0

    def read(self, key: Hashable) -> bool:
        """Read ``key``: a hit, or a miss that stores it; whether it was a hit."""
        if key in self.held:
            self.evictor.on_get(key)
            self.hits += 1
            return True
        self.misses += 1
        while len(self.held) >= self.capacity:
            victim = self.evictor.evict()
            assert victim in self.held, f"{victim!r} is not held"
            self.evictor.on_delete(victim)
            self.held.discard(victim)
        self.evictor.on_put(key)
        self.held.add(key)
        assert len(self.evictor) == len(self.held)
        return False

    def read_all(self, keys: Iterable[Hashable]) -> None:
        for key in keys:
            self.read(key)

    def share_held(self, keys: Iterable[Hashable]) -> float:
        """The share of ``keys`` held now (0 to 1)."""
        wanted = list(keys)
        return sum(key in self.held for key in wanted) / len(wanted)


@dataclass(frozen=True)
class ShiftResult:
    """What stays of a hot set read twice after a scan, and what is held of a new hot set read
    three times after that (shares, 0 to 1)."""

    hot_after_scan: float
    new_hot_after_three_reads: float


def scan_then_shift(
    policy: str, capacity: int, hot: int, scan_factor: int = 5, salt: str = ""
) -> ShiftResult:
    """The issue's scenario in ids: a hot set of ``hot`` pages read twice, a one-pass scan of
    ``scan_factor`` times the capacity, then a new hot set of the same size read three times.
    ``salt`` changes every id (and so the hashes a sketch sees)."""
    cache = IdCache(policy, capacity)
    old = [f"{salt}old{n}" for n in range(hot)]
    new = [f"{salt}new{n}" for n in range(hot)]
    for _ in range(2):
        cache.read_all(old)
    cache.read_all(f"{salt}scan{n}" for n in range(scan_factor * capacity))
    kept = cache.share_held(old)
    for _ in range(3):
        cache.read_all(new)
    return ShiftResult(kept, cache.share_held(new))
