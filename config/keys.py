"""Typed property keys and the registry that collects them.

Each component declares its own keys next to its code (``ufs/keys.py``, ``pagestore/keys.py``,
``worker/keys.py``); the worker collects them into one :class:`Registry`, which rejects a name or
alias declared twice.
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from config.errors import ConfigError
from config.units import (
    DURATION_FORM,
    SIZE_FORM,
    format_duration,
    format_size,
    parse_duration,
    parse_size,
)

T = TypeVar("T")

_INTEGER = re.compile(r"-?[0-9]+")
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


class KeyType(enum.Enum):
    """The value forms a key can take; each knows how to parse and describe itself."""

    INT = "int"
    BOOL = "bool"
    STRING = "string"
    LIST = "list"
    DURATION = "duration"
    SIZE = "size"
    SIZE_LIST = "size list"


def _parse_int(text: str) -> int:
    # ASCII digits only: int() would also take "٣", "1_000" and "+5".
    if _INTEGER.fullmatch(text.strip()) is None:
        raise ValueError("expected an integer")
    return int(text)


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError("expected true or false")


def _parse_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


@dataclass(frozen=True)
class PropertyKey(Generic[T]):
    """One declared property: its name, type, default (as text, the way a user writes it),
    meaning, and whether its value is a secret. ``alias`` is the Alluxio name where one exists.

    ``allow_never`` lets a duration key take ``-1``; ``choices`` restricts a string key;
    ``minimum`` and ``maximum`` bound an int, duration or size key (both inclusive).
    """

    name: str
    type: KeyType
    default: str | None
    description: str
    secret: bool = False
    alias: str | None = None
    allow_never: bool = False
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None

    def parse(self, text: str) -> T:
        """Parse ``text`` into this key's value; raise ValueError saying what was expected."""
        value: Any
        if self.type is KeyType.INT:
            value = _parse_int(text)
        elif self.type is KeyType.BOOL:
            value = _parse_bool(text)
        elif self.type is KeyType.LIST:
            value = _parse_list(text)
        elif self.type is KeyType.DURATION:
            value = parse_duration(text, allow_never=self.allow_never)
        elif self.type is KeyType.SIZE:
            value = parse_size(text)
        elif self.type is KeyType.SIZE_LIST:
            value = [parse_size(item) for item in _parse_list(text)]
        else:
            value = text.strip()
            if self.choices and value not in self.choices:
                raise ValueError(f"expected one of {', '.join(self.choices)}")
        self._check_bounds(value)
        return cast(T, value)

    def _check_bounds(self, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            return
        if self.allow_never and value == -1:
            return
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"expected at least {self.describe_value(self.minimum)}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"expected at most {self.describe_value(self.maximum)}")

    def expected(self) -> str:
        """A human description of the accepted form, used in errors and the template."""
        if self.type is KeyType.DURATION:
            return DURATION_FORM + (", or -1 for never" if self.allow_never else "")
        if self.type is KeyType.SIZE:
            return SIZE_FORM
        if self.type is KeyType.SIZE_LIST:
            return "a comma-separated list of sizes, each " + SIZE_FORM
        if self.type is KeyType.BOOL:
            return "true or false"
        if self.type is KeyType.LIST:
            return "a comma-separated list"
        if self.type is KeyType.INT:
            return "an integer"
        if self.choices:
            return "one of " + ", ".join(self.choices)
        return "a string"

    def describe_value(self, value: object) -> str:
        """Render a parsed value back into the form a user writes (secrets are not masked here)."""
        if value is None:
            return ""
        if self.type is KeyType.DURATION:
            return format_duration(cast(int, value))
        if self.type is KeyType.SIZE:
            return format_size(cast(int, value))
        if self.type is KeyType.SIZE_LIST:
            return ",".join(format_size(size) for size in cast(list[int], value))
        if self.type is KeyType.BOOL:
            return "true" if value else "false"
        if self.type is KeyType.LIST:
            return ",".join(cast(list[str], value))
        return str(value)

    @property
    def env_name(self) -> str:
        """The environment variable that sets this key: upper case, dots to underscores."""
        return self.name.upper().replace(".", "_")


@dataclass
class Registry:
    """All declared keys, by name and by alias. Not thread-safe for declaration; read-only after.

    ``scope``, for a registry of one process's keys only (a client's): the name prefixes it holds
    every key of. A spelling it does not know outside them is another process's key (a worker
    reads the same site file and environment, and checks its keys itself), which loading skips;
    one inside them is an error as usual. Empty: the registry holds every key."""

    _by_name: dict[str, PropertyKey[Any]] = field(default_factory=dict)
    _by_alias: dict[str, PropertyKey[Any]] = field(default_factory=dict)
    scope: tuple[str, ...] = ()

    def add(self, key: PropertyKey[Any]) -> None:
        """Add a key; raise ConfigError if its name or alias is already declared."""
        for spelling in filter(None, (key.name, key.alias)):
            if spelling in self._by_name or spelling in self._by_alias:
                raise ConfigError(f"property key {spelling!r} is declared twice")
        if key.default is not None:
            try:
                key.parse(key.default)
            except ValueError as exc:
                raise ConfigError(f"default of {key.name!r} is invalid: {exc}") from None
        self._by_name[key.name] = key
        if key.alias:
            self._by_alias[key.alias] = key

    def extend(self, keys: Iterable[PropertyKey[Any]]) -> Registry:
        for key in keys:
            self.add(key)
        return self

    def __iter__(self) -> Iterator[PropertyKey[Any]]:
        return iter(sorted(self._by_name.values(), key=lambda k: k.name))

    def __len__(self) -> int:
        return len(self._by_name)

    def lookup(self, spelling: str, where: str = "") -> PropertyKey[Any]:
        """The key named ``spelling`` (its name or alias), or a ConfigError with a suggestion."""
        key = self._by_name.get(spelling) or self._by_alias.get(spelling)
        if key is not None:
            return key
        near = difflib.get_close_matches(spelling, [*self._by_name, *self._by_alias], n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        place = f" ({where})" if where else ""
        raise ConfigError(f"unknown property key {spelling!r}{place}{hint}")

    def foreign(self, spelling: str) -> bool:
        """Whether ``spelling`` is another process's key, which loading skips (see ``scope``)."""
        known = spelling in self._by_name or spelling in self._by_alias
        return bool(self.scope) and not known and not spelling.startswith(self.scope)

    def by_env(self) -> dict[str, PropertyKey[Any]]:
        return {key.env_name: key for key in self._by_name.values()}
