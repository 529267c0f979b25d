"""Decoding what the cluster reads from etcd: feed batches, member entries, applied positions.

etcd is a trust boundary (docs/cluster.md): anyone who can write under the cluster's keys can
put any bytes there. So every value read from etcd is decoded here, with JSON's non-standard
constants (``Infinity``, ``NaN``) refused, nesting too deep for the parser caught, sizes and
numbers bounded and every field's type checked exactly (``true`` is no port, ``80.5`` no
revision), and every failure is one exception, :class:`BadEntry`, which each reader handles
where it reads (skip and count the entry; never stop a thread or answer 500 over it).
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

# A feed batch is at most 512 KiB (the publisher's bound) and etcd refuses values over 1.5 MiB
# by default; anything larger did not come from a worker.
MAX_VALUE_BYTES = 2 << 20
# Revisions, times in ms and sizes in bytes all fit in a signed 64-bit integer (etcd's int64).
MAX_INT = (1 << 63) - 1


class BadEntry(ValueError):
    """A value read from etcd is not what its key must hold; the message says what and why."""


def load_json(raw: bytes, what: str) -> Any:
    """``raw`` parsed as strict JSON. Raises BadEntry for anything else, too large, or nested
    deeper than the parser can go."""
    if len(raw) > MAX_VALUE_BYTES:
        raise BadEntry(f"{what}: {len(raw)} bytes, more than the {MAX_VALUE_BYTES} allowed")
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise BadEntry(f"{what}: JSON nested too deep") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, too many digits
        raise BadEntry(f"{what}: not JSON ({_short(exc)})") from None


def mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        _wrong(what, "an object", value)
    return value


def array(value: Any, what: str, length: int | None = None) -> list[Any]:
    if not isinstance(value, list) or (length is not None and len(value) != length):
        _wrong(what, "an array" if length is None else f"an array of {length}", value)
    return value


def text(value: Any, what: str, max_chars: int) -> str:
    if not isinstance(value, str) or len(value) > max_chars:
        _wrong(what, f"a string of at most {max_chars} characters", value)
    return value


def integer(value: Any, what: str, low: int = 0, high: int = MAX_INT) -> int:
    """``value`` if it is a JSON integer (not a boolean, not a float) in ``[low, high]``."""
    if type(value) is not int or not low <= value <= high:
        _wrong(what, f"an integer in [{low}, {high}]", value)
    return value


def decimal(raw: bytes, what: str) -> int:
    """A non-negative integer written in ASCII digits (as workers write their positions)."""
    if not raw or len(raw) > 19 or not raw.isdigit():  # bytes.isdigit is ASCII only
        raise BadEntry(f"{what}: expected up to 19 ASCII digits, got {raw[:40]!r}")
    return int(raw)


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _wrong(what: str, expected: str, value: Any) -> NoReturn:
    raise BadEntry(f"{what}: expected {expected}, got {_short(value)}")


def _short(value: object) -> str:
    if isinstance(value, dict | list):
        # Never the repr of a container: it may be huge, or too deep to print.
        return f"{'an object' if isinstance(value, dict) else 'an array'} of {len(value)}"
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."
