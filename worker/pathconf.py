"""Per-path properties (Alluxio's ``fs pathConf``): a table of URI prefix → ``dora.user.*`` values
in site properties, for callers that cannot send per-call options (Hadoop's WebHDFS client).

    dora.worker.path.conf=s3://lake/hot dora.user.file.metadata.sync.interval=0, \\
        s3://lake/raw dora.user.file.readtype.default=NO_CACHE

Each comma-separated rule is a URI prefix, then one or more ``key=value`` settings (the key by
its name or Alluxio alias). For each key, the rule with the longest prefix that matches a URI
(on a segment boundary) and sets that key wins; a per-call option wins over every rule, and a
URI no rule matches gets the key's own value. Keys applied per path: :data:`PATH_KEYS`.

The REST surfaces call :func:`resolve` once per request; the parsed table is cached per
configured list, and a lookup costs one dictionary probe per segment of the URI
(:class:`PrefixIndex`), however many rules there are.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from config import Config, ConfigError, KeyType, PropertyKey
from ufs import uri as uris
from ufs.errors import UfsInvalidPath
from worker import pathrules
from worker.common.client_keys import NO_CACHE, READ_TYPE, SYNC_INTERVAL

PATH_CONF: PropertyKey[list[str]] = PropertyKey(
    "dora.worker.path.conf",
    KeyType.LIST,
    "",
    "Per-path properties (Alluxio's fs pathConf), comma-separated rules "
    "'<uri prefix> <key>=<value> ...' for dora.user.file.metadata.sync.interval and "
    "dora.user.file.readtype.default; the longest matching prefix wins, per-call options win "
    "over it. Shown by `dora conf paths`.",
)
KEYS: list[PropertyKey[Any]] = [PATH_CONF]

# The keys a rule may set: both are applied by the worker per request.
PATH_KEYS: tuple[PropertyKey[Any], ...] = (SYNC_INTERVAL, READ_TYPE)
_BY_SPELLING = {
    spelling: key for key in PATH_KEYS for spelling in (key.name, key.alias) if spelling
}


@dataclass(frozen=True)
class PathRule:
    """One ``prefix key=value`` setting, parsed; ``text`` is the value as written."""

    prefix: str
    key: PropertyKey[Any]
    value: Any
    text: str


@dataclass(frozen=True)
class PathSettings:
    """What applies to one URI. ``sync_interval`` None means the configured default (the
    metadata manager owns it); ``cache`` False means the read is served pass-through;
    ``serve_stale`` True that a rule of the rules file serves it while revalidating."""

    sync_interval: int | None
    cache: bool
    serve_stale: bool = False


class PrefixIndex:
    """Values by canonical URI prefix; :meth:`matches` yields those of the prefixes a URI is
    under (on a segment boundary, as ``ufs.uri.is_under`` decides), longest first, for one
    dictionary probe per segment of the URI. Immutable once built, so thread-safe."""

    def __init__(self) -> None:
        self._by_prefix: dict[str, dict[str, PathRule]] = {}

    def add(self, rule: PathRule) -> None:
        """Index ``rule`` under its prefix (for building; not thread-safe)."""
        self._by_prefix.setdefault(rule.prefix, {})[rule.key.name] = rule

    def matches(self, canonical_uri: str) -> Iterator[dict[str, PathRule]]:
        """The rules of each prefix ``canonical_uri`` is under, by key name, longest first."""
        found = self._by_prefix.get(canonical_uri)
        if found is not None:
            yield found
        end = len(canonical_uri)
        while (end := canonical_uri.rfind("/", 0, end)) > 0:
            # The URI is under ``p`` when it starts with ``p + "/"``, or with ``p`` for a
            # prefix that ends with "/" itself (``file:///``).
            for prefix in (canonical_uri[: end + 1], canonical_uri[:end]):
                found = self._by_prefix.get(prefix)
                if found is not None:
                    yield found


class PathTable:
    """The parsed rules: ``rules`` most specific prefix first per key (as shown), and their
    index. Immutable, so thread-safe."""

    def __init__(self, rules: Iterable[PathRule]) -> None:
        self.rules = tuple(sorted(rules, key=lambda r: (r.key.name, -len(r.prefix), r.prefix)))
        self._index = PrefixIndex()
        for rule in self.rules:
            self._index.add(rule)

    @classmethod
    def parse(cls, entries: Iterable[str]) -> PathTable:
        """Parse ``dora.worker.path.conf`` entries; ConfigError names the entry that is wrong."""
        rules: list[PathRule] = []
        seen: set[tuple[str, str]] = set()
        for entry in entries:
            for rule in _parse_entry(entry):
                if (rule.prefix, rule.key.name) in seen:
                    raise ConfigError(
                        f"{PATH_CONF.name}: {rule.key.name} is set twice for {rule.prefix!r}"
                    )
                seen.add((rule.prefix, rule.key.name))
                rules.append(rule)
        return cls(rules)

    def lookup(self, key: PropertyKey[Any], canonical_uri: str) -> PathRule | None:
        """The rule for ``key`` with the longest prefix that matches ``canonical_uri``."""
        for rules in self._index.matches(canonical_uri):
            rule = rules.get(key.name)
            if rule is not None:
                return rule
        return None


def _parse_entry(entry: str) -> list[PathRule]:
    words = entry.split()
    if len(words) < 2:
        raise ConfigError(
            f"{PATH_CONF.name}: rule {entry!r} needs a URI prefix and at least one key=value"
        )
    try:
        prefix = uris.normalize(words[0])
    except UfsInvalidPath as exc:
        raise ConfigError(f"{PATH_CONF.name}: rule {entry!r}: {exc}") from None
    rules = []
    for setting in words[1:]:
        spelling, sep, text = setting.partition("=")
        key = _BY_SPELLING.get(spelling)
        if not sep or key is None:
            allowed = ", ".join(k.name for k in PATH_KEYS)
            raise ConfigError(
                f"{PATH_CONF.name}: rule {entry!r}: {setting!r} is not key=value "
                f"for one of {allowed}"
            )
        try:
            value = key.parse(text)
        except ValueError as exc:
            raise ConfigError(
                f"{PATH_CONF.name}: rule {entry!r}: bad value {text!r} for {key.name}: {exc}"
            ) from None
        rules.append(PathRule(prefix, key, value, text))
    return rules


_TABLES: dict[int, tuple[list[str], PathTable]] = {}
_TABLES_LOCK = threading.Lock()
_TABLES_KEPT = 8


def table(config: Config) -> PathTable:
    """The parsed table of ``config``, cached by the identity of its configured list (a
    config and the per-call configs made from it share it), so a request neither parses
    nor hashes 20,000 rules. Raises ConfigError for a bad rule: call it once at start so a
    worker with a broken table does not start."""
    entries: list[str] = config.get(PATH_CONF)
    cached = _TABLES.get(id(entries))
    if cached is not None and cached[0] is entries:
        return cached[1]
    parsed = PathTable.parse(entries)
    with _TABLES_LOCK:
        if len(_TABLES) >= _TABLES_KEPT:
            _TABLES.pop(next(iter(_TABLES)))
        _TABLES[id(entries)] = (entries, parsed)  # the list kept alive, so its id stays its own
    return parsed


def resolve(config: Config, uri: str, sync_interval: int | None = None) -> PathSettings:
    """The settings for ``uri``: ``sync_interval`` (a per-call option, None if the caller sent
    none) wins over the longest matching rule, which wins over the key's configured value.

    Raises UfsInvalidPath for a malformed URI, ConfigError for a bad table.
    """
    return settings(config, uris.normalize(uri), sync_interval)


def settings(config: Config, canonical: str, sync_interval: int | None = None) -> PathSettings:
    """:func:`resolve` of a URI already in canonical form (``ufs.uri.normalize``)."""
    rules = table(config)
    # The rules file's globs (immutable, max-age, serve-stale) before this table's prefixes.
    glob = pathrules.match(config, canonical)
    if sync_interval is None and glob is not None:
        sync_interval = glob.sync_interval
    if sync_interval is None:
        rule = rules.lookup(SYNC_INTERVAL, canonical)
        sync_interval = None if rule is None else rule.value
    read_rule = rules.lookup(READ_TYPE, canonical)
    read_type = config.get(READ_TYPE) if read_rule is None else read_rule.value
    return PathSettings(sync_interval, read_type != NO_CACHE, glob is not None and glob.serve_stale)


def describe(config: Config) -> list[str]:
    """The table as ``dora conf paths`` prints it: one line per prefix and key, most specific
    prefix first within each key."""
    return [f"{rule.prefix}  {rule.key.name}={rule.text}" for rule in table(config).rules]


def explain(config: Config, uri: str) -> list[str]:
    """What applies to ``uri``, one line per key, with the rule (or the configuration) it
    comes from."""
    canonical = uris.normalize(uri)
    lines = []
    for key in PATH_KEYS:
        rule = table(config).lookup(key, canonical)
        if rule is not None:
            lines.append(f"{key.name}={rule.text}  (rule for {rule.prefix})")
        else:
            setting = config.setting(key)
            lines.append(f"{key.name}={setting.shown()}  ({setting.source.value})")
    return lines
