"""Building the effective configuration from its sources, in DESIGN.md's precedence order:
defaults < site file < environment < ``-Dkey=value`` < per-call options (``dora.user.*`` only)."""

from __future__ import annotations

import enum
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from config.errors import ConfigError
from config.keys import PropertyKey, Registry

T = TypeVar("T")

SITE_FILE_NAME = "dora-site.properties"
# Environment variables with the DORA_ prefix that are not property keys.
NON_KEY_ENV = frozenset({"DORA_CONF_DIR", "DORA_STATE_DIR"})
USER_PREFIX = "dora.user."


class Source(enum.Enum):
    DEFAULT = "default"
    SITE_FILE = "site file"
    ENVIRONMENT = "environment"
    COMMAND_LINE = "command line"
    CALL = "per-call option"


@dataclass(frozen=True)
class Setting:
    """One effective value: parsed, as the user wrote it, and where it came from."""

    key: PropertyKey[Any]
    value: Any
    text: str | None
    source: Source
    origin: str = ""

    def shown(self, reveal_secrets: bool = False) -> str:
        if self.text is None:
            return ""
        if self.key.secret and not reveal_secrets:
            return "******"
        return self.text


class Config:
    """The effective configuration: immutable, built once at start and passed to components.

    Thread-safe (read-only). ``with_call_options`` returns a new Config for one call.
    ``warnings`` are what loading found risky but not wrong (a secret other local users can
    read); whoever starts a process logs them once.
    """

    def __init__(
        self,
        registry: Registry,
        settings: Mapping[str, Setting],
        warnings: tuple[str, ...] = (),
    ) -> None:
        self.registry = registry
        self._settings = dict(settings)
        self.warnings = warnings

    def get(self, key: PropertyKey[T]) -> T:
        """The value of ``key`` (None only for keys with no default that nobody set)."""
        value: T = self._settings[key.name].value
        return value

    def setting(self, key: PropertyKey[Any] | str) -> Setting:
        name = key if isinstance(key, str) else key.name
        return self._settings[self.registry.lookup(name).name]

    def invalid(self, key: PropertyKey[Any], problem: str) -> ConfigError:
        """The error for an effective value of ``key`` that parsed but cannot be used (a mount
        root that is not a URI, a port already taken): it names the key, the value (masked if
        secret), where the value came from, and ``problem``."""
        setting = self._settings[key.name]
        return ConfigError(
            f"bad value {_shown(setting)} for {key.name!r}{_where(setting)}: {problem}"
        )

    def settings(self) -> list[Setting]:
        return [self._settings[key.name] for key in self.registry]

    def sources(self) -> str:
        """Where the effective values came from, for the line a process logs at start: the site
        file (with how many keys it set), the environment variables and the ``-D`` keys that set
        something, by name only (never a value), and how many keys kept their default."""
        site_files: dict[str, int] = {}
        environment: list[str] = []
        defines: list[str] = []
        defaults = 0
        for setting in self.settings():
            if setting.source is Source.SITE_FILE:
                path = setting.origin.rpartition(":")[0]
                site_files[path] = site_files.get(path, 0) + 1
            elif setting.source is Source.ENVIRONMENT:
                environment.append(setting.origin)
            elif setting.source is Source.COMMAND_LINE:
                defines.append(setting.key.name)
            elif setting.source is Source.DEFAULT:
                defaults += 1
        parts = [f"site file {path} ({_keys(count)})" for path, count in site_files.items()]
        parts += [f"environment {', '.join(sorted(environment))}"] if environment else []
        parts += [f"-D {', '.join(sorted(defines))}"] if defines else []
        parts.append(f"defaults for {_keys(defaults)}" if parts else "defaults only")
        return "; ".join(parts)

    def with_call_options(self, options: Mapping[str, str]) -> Config:
        """A Config with per-call options applied; only ``dora.user.*`` keys may be set per call."""
        texts: list[tuple[PropertyKey[Any], str, str]] = []
        for spelling, text in options.items():
            key = self.registry.lookup(spelling, "per-call option")
            if not key.name.startswith(USER_PREFIX):
                raise ConfigError(
                    f"property key {key.name!r} cannot be set per call; "
                    f"only {USER_PREFIX}* keys can"
                )
            texts.append((key, text, ""))
        return self.overridden(texts)

    def overridden(self, texts: Iterable[tuple[PropertyKey[Any], str, str]]) -> Config:
        """A Config with each ``(key, text, origin)`` of ``texts`` set, as a per-call option, to
        its text parsed (``origin`` says who set it); ConfigError naming the key, the value
        and the origin for a bad one."""
        updated = dict(self._settings)
        for key, text, origin in texts:
            updated[key.name] = _setting(key, text, Source.CALL, origin)
        return Config(self.registry, updated)


def _keys(count: int) -> str:
    return f"{count} key" if count == 1 else f"{count} keys"


def _setting(key: PropertyKey[Any], text: str, source: Source, origin: str) -> Setting:
    try:
        value = key.parse(text)
    except ValueError as exc:
        given = Setting(key, None, text, source, origin)
        raise ConfigError(
            f"bad value {_shown(given)} for {key.name!r}{_where(given)}: {exc}"
        ) from None
    return Setting(key, value, text.strip(), source, origin)


def _shown(setting: Setting) -> str:
    return "******" if setting.key.secret else repr(setting.text)


def _where(setting: Setting) -> str:
    return f" ({setting.source.value}{': ' + setting.origin if setting.origin else ''})"


def read_site_file(path: Path) -> str:
    """The text of a site file, which must be UTF-8. Raises ConfigError naming the file (and,
    for bytes that are not UTF-8, the line) when it cannot be read or decoded."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"site file {str(path)!r} cannot be read: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"site file {str(path)!r} is not UTF-8 text: byte {data[exc.start]:#04x} on line "
            f"{line}; expected a UTF-8 properties file"
        ) from None


def parse_properties(text: str, origin: str) -> list[tuple[str, str, int]]:
    """Parse Java-style properties text into (key, value, line number) triples.

    ``#`` and ``!`` start comments; ``key=value`` or ``key: value``; a trailing backslash
    continues a line. A line with no separator is an error naming the file and line.
    """
    entries: list[tuple[str, str, int]] = []
    pending = ""
    start_line = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if not pending:
            start_line = number
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        positions = [p for p in (line.find("="), line.find(":")) if p > 0]
        if not positions:
            raise ConfigError(f"{origin}:{start_line}: malformed line {line!r}; expected key=value")
        split = min(positions)
        entries.append((line[:split].strip(), line[split + 1 :].strip(), start_line))
    if pending:
        raise ConfigError(f"{origin}:{start_line}: line continuation runs past the end of file")
    return entries


def parse_define(arg: str) -> tuple[str, str]:
    """Split one ``-D`` argument (``key=value``, the ``-D`` already removed)."""
    key, sep, value = arg.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"malformed -D option {arg!r}; expected -Dkey=value")
    return key.strip(), value


def find_site_file(conf_file: str | None, environ: Mapping[str, str]) -> Path | None:
    """``--conf FILE`` if given (it must exist), else ``$DORA_CONF_DIR/dora-site.properties``
    when that exists."""
    if conf_file:
        path = Path(conf_file)
        if not path.is_file():
            raise ConfigError(f"site file {conf_file!r} (from --conf) does not exist")
        return path
    conf_dir = environ.get("DORA_CONF_DIR")
    if conf_dir:
        candidate = Path(conf_dir) / SITE_FILE_NAME
        if candidate.is_file():
            return candidate
    return None


def load_config(
    registry: Registry,
    conf_file: str | None = None,
    environ: Mapping[str, str] | None = None,
    defines: Iterable[str] = (),
) -> Config:
    """Build the effective Config. ``defines`` are ``key=value`` strings from ``-D`` options.

    Raises ConfigError for an unknown key (with a near-miss suggestion), a bad value, a malformed
    site-file line (with its line number) or a missing ``--conf`` file. A site-file or
    environment key outside a scoped ``registry`` (a client's) is another process's: skipped.
    """
    env = os.environ if environ is None else environ
    settings: dict[str, Setting] = {}
    for key in registry:
        default = key.parse(key.default) if key.default is not None else None
        settings[key.name] = Setting(key, default, key.default, Source.DEFAULT)

    warnings: list[str] = []
    site = find_site_file(conf_file, env)
    if site is not None:
        secrets = []
        for spelling, text, line in parse_properties(read_site_file(site), str(site)):
            if registry.foreign(spelling):
                continue
            key = registry.lookup(spelling, f"{site}:{line}")
            settings[key.name] = _setting(key, text, Source.SITE_FILE, f"{site}:{line}")
            if key.secret and text.strip():
                secrets.append(key.name)
        warnings += _readable_by_others(site, secrets)

    by_env = registry.by_env()
    for name, text in sorted(env.items()):
        if not name.startswith("DORA_") or name in NON_KEY_ENV:
            continue
        env_key = by_env.get(name)
        if env_key is None:
            spelling = name.lower().replace("_", ".")
            if not registry.foreign(spelling):
                # Not a key: lookup raises the error with a near-miss suggestion.
                registry.lookup(spelling, f"environment {name}")
            continue
        settings[env_key.name] = _setting(env_key, text, Source.ENVIRONMENT, name)

    for define in defines:
        spelling, text = parse_define(define)
        key = registry.lookup(spelling, "-D option")
        settings[key.name] = _setting(key, text, Source.COMMAND_LINE, "-D")
        if key.secret and text.strip():
            warnings.append(
                f"secret {key.name} was given with -D: any local user can read it with ps or "
                f"in /proc/<pid>/cmdline; set {key.env_name} in the environment or put it in a "
                "site file only you can read (chmod 600) instead"
            )
    return Config(registry, settings, tuple(dict.fromkeys(warnings)))


def _readable_by_others(site: Path, secrets: list[str]) -> list[str]:
    """A warning if ``site`` holds ``secrets`` and its group or others may read it."""
    if not secrets:
        return []
    mode = site.stat().st_mode
    if not mode & (stat.S_IRGRP | stat.S_IROTH):
        return []
    return [
        f"site file {str(site)!r} holds secret {', '.join(secrets)} but its group or others can "
        f"read it (mode {stat.S_IMODE(mode):o}); make it readable only by its owner: "
        f"chmod 600 {site}"
    ]
