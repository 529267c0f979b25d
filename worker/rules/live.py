"""The rules in force: read from the configuration and the rules file at start, the file
re-read while the worker runs.

The file is checked for a change at most once a second, on lookups, and :meth:`Rules.reload`
re-reads it at once (what a SIGHUP handler calls). A file that no longer reads or parses is
reported in the log, naming the file, the line and the directive, and the rules read before
stay in force; at start, a bad file stops the worker with that error. Listeners
(:meth:`Rules.on_reload`) hear each rule set that replaced another, with the one before.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from config import Config, ConfigError
from pagestore.quota import NO_CHARGE, Charge
from worker.common.client_keys import READ_TYPE, SERVE_STALE, SYNC_INTERVAL
from worker.rules.keys import CACHE_EXCLUDE, CACHE_INCLUDE, PATH_CONF, RULES_FILE
from worker.rules.model import Policy, Quota, Rule
from worker.rules.parse import admission_default, parse_file, parse_filters, parse_table
from worker.rules.ruleset import Defaults, RuleSet

log = logging.getLogger(__name__)

CHECK_EVERY_S = 1.0

Listener = Callable[[RuleSet, RuleSet], None]
"""Told ``(before, after)`` when a reload put ``after`` in force."""


class Rules:
    """The rule set in force: the rules file's rules (``path``; None: no file) before the
    ``fixed`` rules of the configuration, over ``defaults``.

    Thread-safe: ``_lock`` guards checking and re-reading the file; the rule set is immutable
    and replaced whole, so lookups read it without the lock. Listeners are called in the
    thread that reloaded, after the lock is released (so they may look rules up)."""

    def __init__(
        self,
        fixed: Sequence[Rule],
        defaults: Defaults,
        path: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self._fixed = tuple(fixed)
        self._defaults = defaults
        self._clock = clock
        self._lock = threading.Lock()
        self._stamp = self._identity()
        self._set = self._build()
        self._checked = clock()
        self._listeners: list[Listener] = []

    @classmethod
    def from_config(cls, config: Config, clock: Callable[[], float] = time.monotonic) -> Rules:
        """The rules ``config`` names. Raises ConfigError naming the key, or the file and line,
        of a rule that cannot be read."""
        include: list[str] = config.get(CACHE_INCLUDE)
        exclude: list[str] = config.get(CACHE_EXCLUDE)
        table: list[str] = config.get(PATH_CONF)
        fixed = parse_filters(include, exclude) + parse_table(table)
        defaults = Defaults(
            config.get(SYNC_INTERVAL),
            config.get(SERVE_STALE),
            admission_default(config.get(READ_TYPE)),
        )
        path = config.get(RULES_FILE)
        return cls(fixed, defaults, Path(path) if path else None, clock)

    def _identity(self) -> tuple[int, int, int] | None:
        if self.path is None:
            return None
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _build(self) -> RuleSet:
        if self.path is None:
            return RuleSet(self._fixed, self._defaults)
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{RULES_FILE.name}: cannot read {self.path}: {exc}") from None
        return RuleSet(parse_file(text, str(self.path)) + self._fixed, self._defaults)

    def current(self) -> RuleSet:
        """The rule set in force, after re-reading the file if it changed (checked at most every
        :data:`CHECK_EVERY_S`)."""
        now = self._clock()
        if self.path is None or now - self._checked < CHECK_EVERY_S:
            return self._set
        changed = None
        with self._lock:
            if now - self._checked >= CHECK_EVERY_S:
                self._checked = now
                if self._identity() != self._stamp:
                    changed = self._reload_locked()
        self._tell(changed)
        return self._set

    def reload(self) -> bool:
        """Re-read the rules file now, whether or not it looks changed. True if its rules are
        now in force; False (logged, with the file, line and directive) if it could not be
        read or parsed, and the rules before stay in force."""
        with self._lock:
            self._checked = self._clock()
            changed = self._reload_locked()
        self._tell(changed)
        return changed is not None

    def on_reload(self, listener: Listener) -> None:
        """Call ``listener(before, after)`` after each reload that put a new rule set in force."""
        self._listeners.append(listener)

    def _tell(self, changed: tuple[RuleSet, RuleSet] | None) -> None:
        if changed is not None:
            for listener in self._listeners:
                listener(*changed)

    def _reload_locked(self) -> tuple[RuleSet, RuleSet] | None:
        """The rule sets before and after, or None when the file could not be used."""
        self._stamp = self._identity()
        before = self._set
        try:
            self._set = self._build()
        except ConfigError as exc:
            log.error("path rules not reloaded, the previous ones stay in force: %s", exc)
            return None
        old, new = self._file_rules(before), self._file_rules(self._set)
        log.info(
            "path rules reloaded from %s: %d rules, %d new, %d gone",
            self.path,
            len(new),
            len(new - old),
            len(old - new),
        )
        return before, self._set

    def _file_rules(self, rules: RuleSet) -> set[str]:
        """What the rules file's rules in ``rules`` say, to tell which rules a reload changed
        (the configuration's rules never change while the worker runs)."""
        return {rule.text for rule in rules.rules if rule not in self._fixed}

    def resolve(self, canonical_uri: str) -> Policy:
        """What applies to ``canonical_uri`` (``ufs.uri.normalize``d) by the rules in force."""
        return self.current().resolve(canonical_uri)

    def charge_of(self, canonical_uri: str) -> Charge:
        """The quota a file's pages count against by its path's rules alone: a restored
        page's (who stored it is not known after a restart)."""
        quota = self.resolve(canonical_uri).quota
        return NO_CHARGE if quota is None else (quota.account,)

    def caller_quota(self, identity: str) -> Quota | None:
        """The quota of ``identity``'s calls by the rules in force (``RuleSet.caller_quota``)."""
        return self.current().caller_quota(identity)

    def explain(self, canonical_uri: str) -> list[str]:
        """What applies to ``canonical_uri``, one line per field with the rule it comes from
        (``RuleSet.explain``)."""
        return self.current().explain(canonical_uri)

    def describe(self) -> list[str]:
        """The rules in precedence order, as ``dora conf paths`` prints them: the file's as
        ``file:line: line``, the configuration's as written."""
        lines = []
        for rule in self.current().rules:
            lines.append(
                rule.text if rule.origin == PATH_CONF.name else f"{rule.origin}: {rule.text}"
            )
        return lines
