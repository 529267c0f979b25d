"""Quotas: bytes that the pages charged to one account may hold together, each account over
its limit giving up its own pages first.

The worker charges each page it stores to the accounts its request names (a path rule's
``quota``, the caller's identity quota: ``worker.rules``); the store keeps, for each account,
the bytes its pages hold and an evictor of the store's own policy over those of its pages that
may be evicted. Before a page charged to accounts is stored, every account it would take past
its limit gives up pages of its own, in its evictor's order, so a prefix that fills its quota
pushes out its own pages, never another's. Pinned pages count against their accounts but are
never victims (:class:`~pagestore.pins.PinningEvictor` tells the book which pages may be
evicted): an account full of pinned pages refuses the page instead
(:attr:`~pagestore.api.PutResult.OVER_QUOTA`). Pages being written are not counted until they
are stored, so concurrent writes may pass a limit by what they are writing at that moment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pagestore.evict import Evictor, make_evictor
from pagestore.page import PageKey


@dataclass(frozen=True, slots=True)
class Account:
    """A quota pages are charged to: ``name`` (what it is reported as) and ``limit`` bytes.
    Immutable."""

    name: str
    limit: int


Charge = tuple[Account, ...]
"""The accounts a page is charged to (none: no quota applies)."""

NO_CHARGE: Charge = ()


@dataclass(frozen=True, slots=True)
class QuotaUsage:
    """One account's figures: bytes its pages hold, its limit (the last one a page was
    charged under), and pages evicted because it was over it."""

    used_bytes: int
    limit_bytes: int
    evictions: int


class _Ledger:
    """One account's bytes (``loose``: those of its pages that may be evicted), limit,
    evictions and evictor (of its pages that may be evicted)."""

    def __init__(self, limit: int, evictor: Evictor[PageKey]) -> None:
        self.limit = limit
        self.used = 0
        self.loose = 0
        self.evictions = 0
        self.evictor = evictor

    def short(self, size: int) -> bool:
        """Whether ``size`` more bytes cannot fit even with every evictable page gone."""
        return self.used - self.loose + size > self.limit


_NONE: tuple[int, tuple[_Ledger, ...]] = (0, ())


class QuotaBook:
    """The accounts of one store (shared by its directories' evictors, as their
    :class:`~pagestore.pins.PinState` is), each with an evictor of the store's ``policy``.

    The store calls :meth:`expect` with a page's charge just before it tracks the page; the
    store's evictors (``PinningEvictor``) then report the page :meth:`added`, whether it may be
    evicted (:meth:`evictable`, :meth:`unevictable`), read (:meth:`touched`) and
    :meth:`removed`. Not thread-safe: the store's lock guards it."""

    def __init__(self, policy: str) -> None:
        self._policy = policy
        self._ledgers: dict[str, _Ledger] = {}
        self._pages: dict[PageKey, tuple[int, tuple[_Ledger, ...]]] = {}
        self._expected: dict[PageKey, tuple[_Ledger, ...]] = {}

    def _ledger(self, account: Account) -> _Ledger:
        ledger = self._ledgers.get(account.name)
        if ledger is None:
            ledger = self._ledgers[account.name] = _Ledger(
                account.limit, make_evictor(self._policy)
            )
        ledger.limit = account.limit  # a reloaded rule's limit applies from its next page
        return ledger

    def can_fit(self, charge: Charge, size: int) -> bool:
        """Whether ``size`` more bytes can fit every account of ``charge``, once they give up
        what they may: False when one is full of pages that may not be evicted (pinned), or
        smaller than ``size``."""
        return not any(self._ledger(account).short(size) for account in charge)

    def next_victim(self, charge: Charge, size: int) -> PageKey | None:
        """The next page to evict so that ``size`` more bytes fit every account of
        ``charge`` (one of the own pages of the first account without room), or None when
        they fit (or cannot: ask :meth:`can_fit` first). The store must remove the page (it
        is counted as the account's eviction) before asking again."""
        for account in charge:
            ledger = self._ledger(account)
            if ledger.used + size > ledger.limit:
                victim = ledger.evictor.evict()
                if victim is not None:
                    ledger.evictions += 1
                return victim
        return None

    def expect(self, key: PageKey, charge: Charge) -> None:
        """``key`` is about to be tracked (stored), charged to ``charge``."""
        if charge:
            self._expected[key] = tuple(self._ledger(account) for account in charge)

    def added(self, key: PageKey, size: int) -> None:
        """``key`` of ``size`` bytes is tracked now (stored, or found by a restore): charged
        as :meth:`expect` said, else to no account."""
        ledgers = self._expected.pop(key, ())
        if not ledgers:
            return
        self._pages[key] = (size, ledgers)
        for ledger in ledgers:
            ledger.used += size

    def evictable(self, key: PageKey) -> None:
        """``key`` may be evicted (it went into the store's policy)."""
        size, ledgers = self._pages.get(key, _NONE)
        for ledger in ledgers:
            ledger.evictor.on_put(key)
            ledger.loose += size

    def unevictable(self, key: PageKey) -> None:
        """``key`` may no longer be evicted (pinned)."""
        size, ledgers = self._pages.get(key, _NONE)
        for ledger in ledgers:
            ledger.evictor.on_delete(key)
            ledger.loose -= size

    def touched(self, key: PageKey) -> None:
        """``key`` was read."""
        _, ledgers = self._pages.get(key, _NONE)
        for ledger in ledgers:
            ledger.evictor.on_get(key)

    def removed(self, key: PageKey, evictable: bool) -> None:
        """``key`` left the store (``evictable``: it was not pinned): its bytes are no longer
        charged."""
        size, ledgers = self._pages.pop(key, _NONE)
        for ledger in ledgers:
            ledger.used -= size
            if evictable:
                ledger.loose -= size
                ledger.evictor.on_delete(key)

    def usage(self) -> Mapping[str, QuotaUsage]:
        """Each account's figures, by name."""
        return {
            name: QuotaUsage(ledger.used, ledger.limit, ledger.evictions)
            for name, ledger in sorted(self._ledgers.items())
        }
