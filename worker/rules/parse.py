"""The sources of rules, each read into :class:`~worker.rules.model.Rule` values.

The rules file (``dora.worker.path.rules.file``), one rule a line, ``#`` starts a comment::

    # <pattern> <directive>...
    s3://lake/**/_delta_log/**   max-age=0
    s3://lake/**/*.parquet       immutable
    s3://lake/raw/**             max-age=5min serve-stale admission=second-read window=30min
    s3://lake/tmp/**             admission=pass
    s3://lake/gold/**            pin ttl=7d quota=200GB

Directives: ``immutable`` (never re-check a cached status) or ``max-age=<duration>``;
``serve-stale[=true|false]``; ``admission=cache|pass|second-read`` and, with second-read,
``window=<duration>``; ``pin[=true|false]``; ``ttl=<duration>``; ``quota=<size>``. Each at
most once a line. Patterns: ``**`` any number of whole segments, ``*`` and ``?`` within one
segment; ``<uri>/**`` is the prefix ``<uri>``. A line ``caller:<identity> quota=<size>``
gives the calls of a client certificate's identity (mutual TLS) a quota of their own.

The prefix table (``dora.worker.path.conf``): comma-separated ``<uri prefix> <key>=<value>...``
for the sync interval and the read type (``NO_CACHE`` is ``admission=pass``); and the globs of
``dora.worker.cache.include``/``.exclude``, which make what they leave out pass-through.

Every error is a ConfigError naming the source (file and line, or key and entry) and what is
wrong with which directive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from config import ConfigError, PropertyKey
from config.units import parse_duration, parse_size
from ufs import uri as uris
from ufs.errors import UfsInvalidPath
from worker.common.client_keys import NO_CACHE, READ_TYPE, SYNC_INTERVAL
from worker.rules.globs import any_of, as_prefix, compile_glob, none_of
from worker.rules.keys import CACHE_EXCLUDE, CACHE_INCLUDE, PATH_CONF
from worker.rules.model import CALLER, Admission, Rule, Settings

NEVER = -1
SYNTAX = (
    "expected '<glob pattern> immutable|max-age=<duration> [serve-stale] "
    "[admission=cache|pass|second-read [window=<duration>]] [pin] [ttl=<duration>] "
    "[quota=<size>]'"
)
_DIRECTIVES = "immutable, max-age=<duration> or one of serve-stale, admission, window, pin, "
_DIRECTIVES += "ttl, quota"


def _boolean(text: str) -> bool:
    if text in ("true", "false"):
        return text == "true"
    raise ValueError("expected true or false")


def _positive(parse: Callable[[str], int]) -> Callable[[str], int]:
    def parsed(text: str) -> int:
        value = parse(text)
        if value <= 0:
            raise ValueError("expected more than 0")
        return value

    return parsed


def _admission(text: str) -> Admission:
    try:
        return Admission(text)
    except ValueError:
        raise ValueError(f"expected one of {', '.join(a.value for a in Admission)}") from None


# directive → (the field it sets, how its value is read)
_VALUED: dict[str, tuple[str, Callable[[str], Any]]] = {
    "max-age": ("sync_interval", parse_duration),
    "serve-stale": ("serve_stale", _boolean),
    "admission": ("admission", _admission),
    "window": ("window", _positive(parse_duration)),
    "pin": ("pin", _boolean),
    "ttl": ("ttl", _positive(parse_duration)),
    "quota": ("quota", _positive(parse_size)),
}
_FLAGS: dict[str, tuple[str, Any]] = {
    "immutable": ("sync_interval", NEVER),
    "serve-stale": ("serve_stale", True),
    "pin": ("pin", True),
}


def parse_file(text: str, source: str) -> tuple[Rule, ...]:
    """The rules of a rules file's ``text``, in file order; ConfigError names ``source``, the
    line and what is wrong with it."""
    rules = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{source}:{number}"
        if len(words) < 2:
            raise ConfigError(f"{where}: {SYNTAX}")
        settings = _settings(words[1:], where)
        if words[0].startswith(CALLER):
            rules.append(_caller_rule(words, settings, where))
            continue
        try:
            prefix = as_prefix(words[0])
            regex = None if prefix is not None else compile_glob(words[0])
        except UfsInvalidPath as exc:
            raise ConfigError(f"{where}: {exc}") from None
        rules.append(Rule(settings, where, " ".join(words), prefix, regex))
    return tuple(rules)


def _caller_rule(words: list[str], settings: Settings, where: str) -> Rule:
    """A ``caller:<identity> quota=<size>`` line: the quota of that proven identity's calls."""
    identity = words[0][len(CALLER) :]
    if not identity or settings != Settings(quota=settings.quota) or settings.quota is None:
        raise ConfigError(f"{where}: expected '{CALLER}<identity> quota=<size>'")
    return Rule(settings, where, " ".join(words), caller=identity)


def _settings(directives: list[str], where: str) -> Settings:
    values: dict[str, Any] = {}
    for word in directives:
        name, sep, text = word.partition("=")
        if sep and name in _VALUED:
            field, parse = _VALUED[name]
            try:
                value = parse(text)
            except ValueError as exc:
                raise ConfigError(f"{where}: {name}={text!r}: {exc}") from None
        elif not sep and name in _FLAGS:
            field, value = _FLAGS[name]
        else:
            raise ConfigError(f"{where}: {word!r} is not {_DIRECTIVES}")
        if field in values:
            raise ConfigError(
                f"{where}: {' '.join(directives)!r}: expected each setting once "
                f"({field.replace('_', ' ')} twice)"
            )
        values[field] = value
    if "window" in values and values.get("admission") is not Admission.SECOND_READ:
        raise ConfigError(f"{where}: window= applies only with admission=second-read")
    return Settings(**values)


_PATH_KEYS: tuple[PropertyKey[Any], ...] = (SYNC_INTERVAL, READ_TYPE)
_BY_SPELLING = {
    spelling: key for key in _PATH_KEYS for spelling in (key.name, key.alias) if spelling
}


def parse_table(entries: Iterable[str]) -> tuple[Rule, ...]:
    """The rules of ``dora.worker.path.conf``'s entries, one per prefix and key, the longest
    prefix first (so that, read in order, the longest matching prefix wins); ConfigError names
    the entry that is wrong."""
    rules: list[Rule] = []
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        for prefix, key, text, settings in _parse_entry(entry):
            if (prefix, key.name) in seen:
                raise ConfigError(f"{PATH_CONF.name}: {key.name} is set twice for {prefix!r}")
            seen.add((prefix, key.name))
            rules.append(Rule(settings, PATH_CONF.name, f"{prefix}  {key.name}={text}", prefix))
    return tuple(sorted(rules, key=lambda r: (-len(r.prefix or ""), r.prefix, r.text)))


def _parse_entry(entry: str) -> list[tuple[str, PropertyKey[Any], str, Settings]]:
    words = entry.split()
    if len(words) < 2:
        raise ConfigError(
            f"{PATH_CONF.name}: rule {entry!r} needs a URI prefix and at least one key=value"
        )
    try:
        prefix = uris.normalize(words[0])
    except UfsInvalidPath as exc:
        raise ConfigError(f"{PATH_CONF.name}: rule {entry!r}: {exc}") from None
    parsed = []
    for setting in words[1:]:
        spelling, sep, text = setting.partition("=")
        key = _BY_SPELLING.get(spelling)
        if not sep or key is None:
            allowed = ", ".join(k.name for k in _PATH_KEYS)
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
        parsed.append((prefix, key, text, _key_settings(key, value)))
    return parsed


def _key_settings(key: PropertyKey[Any], value: Any) -> Settings:
    if key is SYNC_INTERVAL:
        return Settings(sync_interval=value)
    return Settings(admission=Admission.PASS if value == NO_CACHE else Admission.CACHE)


def parse_filters(include: Sequence[str], exclude: Sequence[str]) -> tuple[Rule, ...]:
    """``dora.worker.cache.exclude`` and ``.include`` as rules: what an exclude glob matches,
    and (with includes) what no include glob matches, is pass-through."""
    passed = Settings(admission=Admission.PASS)
    rules = [
        Rule(passed, CACHE_EXCLUDE.name, pattern, regex=any_of([pattern])) for pattern in exclude
    ]
    if include:
        text = "not " + ",".join(include)
        rules.append(Rule(passed, CACHE_INCLUDE.name, text, regex=none_of(include)))
    return tuple(rules)


def admission_default(read_type: str) -> Admission:
    """The admission of a path no rule gives one: ``dora.user.file.readtype.default``'s."""
    return Admission.PASS if read_type == NO_CACHE else Admission.CACHE
