"""Path rules from a file (``dora.worker.path.rules.file``): when to look at the UFS at all, by
glob pattern, changed while the worker runs.

    # <glob pattern> <directive>...   (first matching line wins)
    s3://lake/**/_delta_log/**   max-age=0
    s3://lake/**/*.parquet       immutable
    s3://lake/raw/**             max-age=5min serve-stale

Directives: ``immutable`` (the data under it never changes: never re-check a cached status —
what lakehouse data files are; Alluxio's cache filter has it), ``max-age=<duration>`` (re-check
a status cached longer than that; ``0`` always) and ``serve-stale`` (serve while revalidating:
an expired status is answered at once while one background re-check runs, see
``docs/consistency.md``). Patterns match canonical URIs: ``**`` any number of whole segments,
``*`` and ``?`` within one segment. A rule gives the sync interval (and serve-stale) of a call
that sends none; a per-call option still wins, and these rules win over the prefix table of
``dora.worker.path.conf`` (``worker.pathconf``, which consults :func:`match`).

The file is re-read when it changes (checked at most once a second, on lookups, and at once on
SIGHUP, :mod:`worker.hangup`): a file that
no longer parses is reported in the log and the rules read before stay in force; at start, a
bad file stops the worker with an error naming the line.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config import Config, ConfigError, KeyType, PropertyKey
from config.units import parse_duration
from ufs import uri as uris
from ufs.errors import UfsInvalidPath

log = logging.getLogger(__name__)

RULES_FILE: PropertyKey[str | None] = PropertyKey(
    "dora.worker.path.rules.file",
    KeyType.STRING,
    None,
    "A file of path rules '<glob pattern> immutable|max-age=<duration> [serve-stale]' (or "
    "serve-stale alone), one per line, first match wins; re-read when it changes. They set the "
    "sync interval and serve-stale of calls that send none.",
)
KEYS: list[PropertyKey[Any]] = [RULES_FILE]

CHECK_EVERY_S = 1.0
NEVER = -1


_SYNTAX = "expected '<glob pattern> immutable|max-age=<duration> [serve-stale]'"


@dataclass(frozen=True)
class GlobRule:
    """One line: the pattern as written, its compiled form, the sync interval it gives (None:
    it gives none, the line says only ``serve-stale``) and whether it serves stale."""

    pattern: str
    regex: re.Pattern[str]
    sync_interval: int | None
    serve_stale: bool = False


def compile_glob(pattern: str) -> re.Pattern[str]:
    """``pattern`` as a regular expression over canonical URIs: ``**`` any number of whole
    segments (as the last one: the directory itself or anything under it), ``*`` and ``?``
    within one segment. Raises UfsInvalidPath for a pattern that is not a URI."""
    uris.normalize(pattern.replace("*", "x").replace("?", "x"))
    scheme, _, rest = pattern.partition("://")
    segments = rest.rstrip("/").split("/")
    parts = [re.escape(scheme.lower() + "://")]
    for n, segment in enumerate(segments):
        last = n == len(segments) - 1
        if segment == "**" and n == 0:
            parts.append(".*")
        elif segment == "**":
            parts.append("(?:/.*)?" if last else "(?:/[^/]+)*")
        else:
            glob = "".join(
                "[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch) for ch in segment
            )
            parts.append(glob if n == 0 else "/" + glob)
    return re.compile("".join(parts))


def parse(text: str, source: str) -> tuple[GlobRule, ...]:
    """The rules of a rules file's ``text``; ConfigError names ``source``, the line and what
    is wrong with it."""
    rules = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{source}:{number}"
        if len(words) < 2:
            raise ConfigError(f"{where}: {_SYNTAX}")
        try:
            regex = compile_glob(words[0])
        except UfsInvalidPath as exc:
            raise ConfigError(f"{where}: {exc}") from None
        rules.append(_rule(words[0], regex, words[1:], where))
    return tuple(rules)


def _rule(pattern: str, regex: re.Pattern[str], directives: list[str], where: str) -> GlobRule:
    stale = "serve-stale" in directives
    intervals = [word for word in directives if word != "serve-stale"]
    if len(intervals) > 1 or len(directives) > len(intervals) + 1:
        raise ConfigError(f"{where}: {' '.join(directives)!r}: {_SYNTAX}")
    interval = _directive(intervals[0], where) if intervals else None
    return GlobRule(pattern, regex, interval, stale)


def _directive(word: str, where: str) -> int:
    if word == "immutable":
        return NEVER
    name, sep, value = word.partition("=")
    if name != "max-age" or not sep:
        raise ConfigError(f"{where}: {word!r} is not immutable, max-age=<duration> or serve-stale")
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: max-age={value!r}: {exc}") from None


class RulesFile:
    """The rules of one file, re-read when its identity (inode, size, mtime) changes.

    Thread-safe: ``_lock`` guards the check and swap; the rules are an immutable tuple read
    without it.
    """

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._stamp = self._identity()
        self.rules = parse(self._read(), str(path))
        self._checked = clock()

    def _identity(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _read(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{RULES_FILE.name}: cannot read {self.path}: {exc}") from None

    def current(self) -> tuple[GlobRule, ...]:
        """The rules in force, after re-reading the file if it changed (checked at most every
        :data:`CHECK_EVERY_S`)."""
        now = self._clock()
        if now - self._checked < CHECK_EVERY_S:
            return self.rules
        with self._lock:
            if now - self._checked >= CHECK_EVERY_S:
                self._checked = now
                self._reload()
        return self.rules

    def reload(self) -> None:
        """Re-read the file now, whether or not it looks changed (a SIGHUP: a file rewritten
        with the same size within the same mtime tick looks unchanged), and log what changed."""
        with self._lock:
            self._checked = self._clock()
            self._reload(force=True)

    def _reload(self, force: bool = False) -> None:
        stamp = self._identity()
        if stamp == self._stamp and not force:
            return
        self._stamp = stamp
        try:
            rules = parse(self._read(), str(self.path))
        except ConfigError as exc:
            log.error("path rules not reloaded, the previous ones stay in force: %s", exc)
            return
        before = {_line(rule) for rule in self.rules}
        after = {_line(rule) for rule in rules}
        self.rules = rules
        log.info(
            "path rules reloaded from %s: %d rules, %d new, %d gone",
            self.path,
            len(rules),
            len(after - before),
            len(before - after),
        )

    def match(self, canonical_uri: str) -> GlobRule | None:
        """The first rule that matches ``canonical_uri``, None if none does."""
        for rule in self.current():
            if rule.regex.fullmatch(canonical_uri):
                return rule
        return None


def _line(rule: GlobRule) -> tuple[str, int | None, bool]:
    """What a rule says, to tell which rules a reload changed."""
    return (rule.pattern, rule.sync_interval, rule.serve_stale)


@functools.lru_cache(maxsize=8)
def _rules_file(path: str) -> RulesFile:
    return RulesFile(Path(path))


def rules_file(config: Config) -> RulesFile | None:
    """The rules file ``config`` names (one per path, shared), None if none. Raises ConfigError
    for a file that cannot be read or parsed: call it once at start."""
    path = config.get(RULES_FILE)
    return _rules_file(path) if path else None


def match(config: Config, canonical_uri: str) -> GlobRule | None:
    """The rule of the rules file that applies to ``canonical_uri``, None if none does."""
    rules = rules_file(config)
    return None if rules is None else rules.match(canonical_uri)
