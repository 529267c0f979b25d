"""The interface every eviction policy implements: it sees page keys, never bytes or sizes."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol, TypeVar

K = TypeVar("K", bound=Hashable)


class Evictor(Protocol[K]):
    """Decides which page leaves first. The store owns storage and size accounting; a policy
    only tracks the keys it is told about and names a victim.

    Implementations are not thread-safe: the store calls them under its own lock.
    """

    def on_put(self, key: K) -> None:
        """A page was added (adding a tracked key counts as an access)."""

    def on_get(self, key: K) -> None:
        """A page was read; untracked keys are ignored."""

    def on_delete(self, key: K) -> None:
        """A page left the store (evicted, invalidated or corrupt); untracked keys are ignored."""

    def evict(self) -> K | None:
        """The page to remove next, or None when nothing is tracked. The key stays tracked
        until :meth:`on_delete` is called for it."""

    def __len__(self) -> int:
        """The number of tracked pages."""
