"""Eviction policies, one module each; :func:`make_evictor` picks one by its configured name."""

from __future__ import annotations

from pagestore.evict.base import Evictor, K
from pagestore.evict.lfu import LfuEvictor
from pagestore.evict.lru import LruEvictor

EVICTORS = ("lru", "lfu")


def make_evictor(name: str) -> Evictor[K]:
    """A new, empty evictor for the policy ``name`` (``lru`` or ``lfu``); ValueError otherwise."""
    if name == "lru":
        return LruEvictor()
    if name == "lfu":
        return LfuEvictor()
    raise ValueError(f"unknown evictor {name!r}; expected one of {', '.join(EVICTORS)}")


__all__ = ["EVICTORS", "Evictor", "LfuEvictor", "LruEvictor", "make_evictor"]
