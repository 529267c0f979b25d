"""Pinned pages: kept out of the eviction policy, so no policy can pick them, within a bound.

Every store kind keeps its evictor behind a :class:`PinningEvictor`: a page of a pinned file
is not told to the policy (``on_put``) or is taken back from it (``on_delete``) when its file is
pinned, and is handed back (``on_put``) when the file is unpinned. The policies stay as they
are; the bound on pinned bytes (:class:`PinMax`) is kept in the :class:`PinState` a store's
evictors share, so a page past it is stored as any other, evictable.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from config.units import format_size, parse_size
from pagestore.evict import Evictor
from pagestore.page import PageKey
from pagestore.quota import QuotaBook

_SHARE = re.compile(r"0?\.\d+|1(\.0*)?|0")


@dataclass(frozen=True, slots=True)
class PinMax:
    """How many bytes pinned pages may hold: a ``share`` of the store's capacity, or a
    fixed number of ``size`` bytes when it is set. Immutable."""

    share: float = 0.5
    size: int | None = None

    @classmethod
    def parse(cls, text: str) -> PinMax:
        """``0.5`` (a share of capacity, 0 to 1) or a size (``10GB``); ValueError otherwise."""
        text = text.strip()
        if _SHARE.fullmatch(text):
            return cls(share=float(text))
        try:
            return cls(size=parse_size(text))
        except ValueError:
            raise ValueError(
                "expected a share of the capacity from 0 to 1 (0.5) or a size (10GB)"
            ) from None

    def limit(self, capacity: int) -> int:
        """The bound in bytes for a store of ``capacity`` bytes."""
        return self.size if self.size is not None else int(capacity * self.share)

    def __str__(self) -> str:
        return format_size(self.size) if self.size is not None else str(self.share)


HALF = PinMax()
"""The default bound: half the capacity."""


class PinState:
    """The pinned files of one store and the bytes their pinned pages hold, against ``limit``.
    Not thread-safe: the store's lock guards it, with the evictors that share it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.files: set[str] = set()


class PinningEvictor:
    """``policy`` with the pages of pinned files kept out of it (an
    :class:`~pagestore.evict.Evictor` itself). ``size_of`` gives a tracked page's data size
    (the store's index entry). It also tells the store's ``quotas`` (:mod:`pagestore.quota`)
    which pages are stored and which of them may be evicted, so a quota's victims are never
    pinned. Not thread-safe: the store calls it under its lock."""

    def __init__(
        self,
        policy: Evictor[PageKey],
        state: PinState,
        size_of: Callable[[PageKey], int],
        quotas: QuotaBook | None = None,
    ) -> None:
        self._policy = policy
        self._state = state
        self._size_of = size_of
        # A book nothing is charged to never makes an evictor: its policy does not matter.
        self._quotas = QuotaBook("lru") if quotas is None else quotas
        self._keys: dict[str, set[PageKey]] = {}  # every tracked page, by file id
        self._held: dict[PageKey, int] = {}  # pinned pages and their sizes

    @property
    def held_bytes(self) -> int:
        """Bytes of the pages this evictor holds pinned."""
        return sum(self._held.values())

    def on_put(self, key: PageKey) -> None:
        if key in self._held:
            return
        keys = self._keys.setdefault(key.file_id, set())
        if key in keys:  # stored again: an access
            self.on_get(key)
            return
        keys.add(key)
        self._quotas.added(key, self._size_of(key))
        if not self._hold(key):
            self._policy.on_put(key)
            self._quotas.evictable(key)

    def on_get(self, key: PageKey) -> None:
        if key not in self._held:
            self._policy.on_get(key)
            self._quotas.touched(key)

    def on_delete(self, key: PageKey) -> None:
        keys = self._keys.get(key.file_id)
        if keys is None or key not in keys:
            return
        keys.discard(key)
        if not keys:
            del self._keys[key.file_id]
        size = self._held.pop(key, None)
        if size is None:
            self._policy.on_delete(key)
        else:
            self._state.used -= size
        self._quotas.removed(key, evictable=size is None)

    def evict(self) -> PageKey | None:
        return self._policy.evict()

    def __len__(self) -> int:
        return len(self._policy) + len(self._held)

    def pin(self, file_id: str) -> None:
        """Take the file's tracked pages out of the policy, as far as the bound allows (the
        caller has added ``file_id`` to the shared state's files)."""
        for key in sorted(self._keys.get(file_id, ()), key=lambda k: k.page_index):
            if key not in self._held and self._hold(key):
                self._policy.on_delete(key)
                self._quotas.unevictable(key)

    def unpin(self, file_id: str) -> None:
        """Hand the file's pinned pages back to the policy."""
        for key in self._keys.get(file_id, ()):
            size = self._held.pop(key, None)
            if size is not None:
                self._state.used -= size
                self._policy.on_put(key)
                self._quotas.evictable(key)

    def clear(self) -> None:
        """Forget every tracked page (its directory left service): the pinned bytes and the
        quotas' charges are released."""
        self._state.used -= self.held_bytes
        for keys in self._keys.values():
            for key in keys:
                self._quotas.removed(key, evictable=key not in self._held)
        self._keys.clear()
        self._held.clear()

    def _hold(self, key: PageKey) -> bool:
        """Pin ``key`` if its file is pinned and the bound has room for it."""
        state = self._state
        if key.file_id not in state.files:
            return False
        size = self._size_of(key)
        if state.used + size > state.limit:
            return False
        state.used += size
        self._held[key] = size
        return True


def pin_file(state: PinState, evictors: list[PinningEvictor], file_id: str, pinned: bool) -> None:
    """Pin or unpin ``file_id`` in a store whose evictors share ``state`` (the store's lock
    held): what every store kind does for :meth:`~pagestore.api.Store.pin`. Pinning a pinned
    file does nothing (the page cache pins a covered file before each of its puts: its new
    pages are held as they come)."""
    if pinned == (file_id in state.files):
        return
    if pinned:
        state.files.add(file_id)
        for evictor in evictors:
            evictor.pin(file_id)
    else:
        state.files.discard(file_id)
        for evictor in evictors:
            evictor.unpin(file_id)
