"""What a rule says and what applies to one URI.

A :class:`Rule` is a matcher (a URI prefix, or a regular expression made from a glob) with the
:class:`Settings` it gives, each field optional; a :class:`Policy` is every field resolved for
one URI, defaults included. Both are immutable.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, fields

from pagestore.quota import Account

DEFAULT_WINDOW_MS = 3_600_000
"""How long a first read is remembered for second-read admission when a rule names no
``window``."""


class Admission(enum.Enum):
    """Whether the pages a read fetches are stored."""

    CACHE = "cache"
    """Stored (the default)."""
    PASS = "pass"
    """Never stored: served straight from the UFS (pass-through)."""
    SECOND_READ = "second-read"
    """Stored from the second read of the same pages within the rule's window; a first read is
    served through, so a one-pass scan leaves the cache as it was."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What one rule sets; None: this rule leaves the field to the rules after it.

    ``sync_interval`` (ms; -1 never re-check: ``immutable``; from ``max-age``),
    ``serve_stale``, ``admission`` and its ``window`` (ms), ``pin``, ``ttl`` (ms after a
    file's data and metadata were loaded that they are freed) and ``quota`` (bytes the rule's
    paths may hold)."""

    sync_interval: int | None = None
    serve_stale: bool | None = None
    admission: Admission | None = None
    window: int | None = None
    pin: bool | None = None
    ttl: int | None = None
    quota: int | None = None


FIELDS: tuple[str, ...] = tuple(field.name for field in fields(Settings))


CALLER = "caller:"
"""How a rules file line names a caller identity rather than a URI pattern (``caller:alice``)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: it matches a URI under ``prefix`` (on a segment boundary) or one that
    ``regex`` matches whole, or, with ``caller``, the calls of that proven identity (the
    client certificate's under mutual TLS; such a rule only sets a quota); ``origin`` names
    where it was read (``file:line``, or the key) and ``text`` is how it was written there."""

    settings: Settings
    origin: str
    text: str
    prefix: str | None = None
    regex: re.Pattern[str] | None = None
    caller: str | None = None

    @property
    def pattern(self) -> str:
        """What the rule matches, as written (its first word)."""
        return self.text.split(maxsplit=1)[0]


@dataclass(frozen=True, slots=True)
class Quota:
    """A quota and the rule it belongs to (``rule``: where it was read): the bytes of every
    path that rule matches (or that its caller stores) count against ``limit`` together, under
    the rule's pattern as ``name`` (``s3://lake/gold/**``, ``caller:alice``: the label its
    metrics carry)."""

    limit: int
    rule: str
    name: str

    @property
    def account(self) -> Account:
        """What the page store charges pages to for this quota."""
        return Account(self.name, self.limit)


@dataclass(frozen=True, slots=True)
class Policy:
    """What applies to one URI, every field resolved (``worker.rules.ruleset``).

    ``sync_interval`` and ``serve_stale`` are the path's (a per-call option still wins over
    them, ``worker.freshness``), ``sync_by_rule`` whether a rule gave the interval rather than
    the configured default; ``admission`` and ``window`` decide whether a read's pages are
    stored (``worker.reader``); ``pin``, ``ttl`` (ms; None: none) and ``quota`` (None: none)
    are what the rules say for the path's data."""

    sync_interval: int
    sync_by_rule: bool = False
    serve_stale: bool = False
    admission: Admission = Admission.CACHE
    window: int = DEFAULT_WINDOW_MS
    pin: bool = False
    ttl: int | None = None
    quota: Quota | None = None
