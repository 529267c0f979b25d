"""Matching and the one precedence: what applies to a URI, field by field.

The rules form one ordered list: the rules file top to bottom, then the include/exclude
globs, then the prefix table longest prefix first. For each field, the first rule in that list
that matches the URI and sets the field gives it; a field no rule sets takes the configured
default. (Per-call options and the feed revision rank above all of it for freshness:
``worker.freshness``.)

Prefix rules are found through an index, for one dictionary probe per segment of the URI
however many there are (a table of 20,000 prefixes is as fast as one); glob rules are tried in
turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from config.units import format_duration, format_size
from worker.rules.model import DEFAULT_WINDOW_MS, FIELDS, Admission, Policy, Quota, Rule


@dataclass(frozen=True, slots=True)
class Defaults:
    """What a path no rule speaks for gets: the configured sync interval (ms), whether an
    expired status may be served while revalidated, and the admission."""

    sync_interval: int = -1
    serve_stale: bool = False
    admission: Admission = Admission.CACHE


class PrefixIndex:
    """Positions of rules by canonical URI prefix; :meth:`matches` yields those of the prefixes
    a URI is under (on a segment boundary, as ``ufs.uri.is_under`` decides). Immutable once
    built, so thread-safe."""

    def __init__(self) -> None:
        self._by_prefix: dict[str, list[int]] = {}

    def add(self, prefix: str, position: int) -> None:
        """Index ``position`` under ``prefix`` (for building; not thread-safe)."""
        self._by_prefix.setdefault(prefix, []).append(position)

    def __contains__(self, prefix: str) -> bool:
        return prefix in self._by_prefix

    def matches(self, canonical_uri: str) -> list[int]:
        """The positions of the rules of each prefix ``canonical_uri`` is under."""
        by_prefix = self._by_prefix
        if not by_prefix:
            return []
        found = list(by_prefix.get(canonical_uri, ()))
        end = len(canonical_uri)
        while (end := canonical_uri.rfind("/", 0, end)) > 0:
            # The URI is under ``p`` when it starts with ``p + "/"``, or with ``p`` for a
            # prefix that ends with "/" itself (``file:///``).
            for prefix in (canonical_uri[: end + 1], canonical_uri[:end]):
                hit = by_prefix.get(prefix)
                if hit is not None:
                    found += hit
        return found


class RuleSet:
    """Rules in precedence order with their index, and the defaults. Immutable, so
    thread-safe."""

    def __init__(self, rules: Sequence[Rule], defaults: Defaults) -> None:
        self.rules = tuple(rules)
        self.defaults = defaults
        self._index = PrefixIndex()
        self._globs: list[tuple[int, Rule]] = []
        self._callers: dict[str, Quota] = {}
        for position, rule in enumerate(self.rules):
            if rule.caller is not None:
                quota = rule.settings.quota
                if quota is not None:
                    self._callers.setdefault(rule.caller, Quota(quota, rule.origin, rule.pattern))
            elif rule.prefix is not None:
                self._index.add(rule.prefix, position)
            else:
                self._globs.append((position, rule))
        self._sync_globs = any(r.settings.sync_interval is not None for _, r in self._globs)
        self._default = self._policy({})  # what a URI no rule matches gets, made once

    def found(self, canonical_uri: str) -> dict[str, Rule]:
        """For each field some rule gives ``canonical_uri``, that rule (the first in order)."""
        positions = self._index.matches(canonical_uri)
        positions += [p for p, rule in self._globs if _matches(rule, canonical_uri)]
        chosen: dict[str, Rule] = {}
        for position in sorted(positions):
            settings = self.rules[position].settings
            for name in FIELDS:
                if name not in chosen and getattr(settings, name) is not None:
                    chosen[name] = self.rules[position]
            if len(chosen) == len(FIELDS):
                break
        return chosen

    def resolve(self, canonical_uri: str) -> Policy:
        """What applies to ``canonical_uri`` (in canonical form: ``ufs.uri.normalize``)."""
        chosen = self.found(canonical_uri)
        return self._policy(chosen) if chosen else self._default

    def _policy(self, chosen: dict[str, Rule]) -> Policy:
        def given(name: str, default: Any) -> Any:
            rule = chosen.get(name)
            return default if rule is None else getattr(rule.settings, name)

        quota = chosen.get("quota")
        defaults = self.defaults
        return Policy(
            sync_interval=given("sync_interval", defaults.sync_interval),
            sync_by_rule="sync_interval" in chosen,
            serve_stale=given("serve_stale", defaults.serve_stale),
            admission=given("admission", defaults.admission),
            window=given("window", DEFAULT_WINDOW_MS),
            pin=given("pin", False),
            ttl=given("ttl", None),
            quota=None if quota is None else Quota(given("quota", 0), quota.origin, quota.pattern),
        )

    def caller_quota(self, identity: str) -> Quota | None:
        """The quota of the calls of ``identity`` (a client certificate's, proven by mutual
        TLS), if a ``caller:<identity>`` rule gives one."""
        return self._callers.get(identity)

    def names(self, canonical_uri: str) -> bool:
        """Whether a rule might give ``canonical_uri`` another sync interval than its parent
        directory's: a prefix rule naming it exactly, or any glob that sets one."""
        return self._sync_globs or canonical_uri in self._index

    def explain(self, canonical_uri: str) -> list[str]:
        """What applies to ``canonical_uri``, one line per field, with the rule it comes from
        (``origin: text``) or ``default``."""
        chosen = self.found(canonical_uri)
        policy = self.resolve(canonical_uri)
        shown = {
            "sync_interval": format_duration(policy.sync_interval),
            "serve_stale": _flag(policy.serve_stale),
            "admission": policy.admission.value,
            "window": format_duration(policy.window),
            "pin": _flag(policy.pin),
            "ttl": "none" if policy.ttl is None else format_duration(policy.ttl),
            "quota": "none" if policy.quota is None else format_size(policy.quota.limit),
        }
        lines = []
        for name in FIELDS:
            rule = chosen.get(name)
            where = "default" if rule is None else f"{rule.origin}: {rule.text}"
            lines.append(f"{name.replace('_', '-')}={shown[name]}  ({where})")
        return lines


def _matches(rule: Rule, canonical_uri: str) -> bool:
    return rule.regex is not None and rule.regex.fullmatch(canonical_uri) is not None


def _flag(value: bool) -> str:
    return "true" if value else "false"
