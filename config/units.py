"""Parsing and formatting of the value forms property keys accept: durations and sizes."""

from __future__ import annotations

import re

_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_SIZE_UNITS = {
    "b": 1,
    "kb": 1 << 10, "k": 1 << 10, "kib": 1 << 10,
    "mb": 1 << 20, "m": 1 << 20, "mib": 1 << 20,
    "gb": 1 << 30, "g": 1 << 30, "gib": 1 << 30,
    "tb": 1 << 40, "t": 1 << 40, "tib": 1 << 40,
}  # fmt: skip
# re.ASCII: \d would also match other scripts' digits, which float() and int() then accept.
_NUMBER_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$", re.ASCII)
# Longer numbers are mistakes (2**63 has 19 digits), and int() refuses more than 4,300 digits
# with its own wording.
_MAX_DIGITS = 20

DURATION_FORM = "a duration such as 500ms, 30s, 10min, 1h or 2d (a bare integer is ms)"
SIZE_FORM = "a size such as 512B, 64KB, 1MB, 1GB or 1TB (powers of 1024; a bare integer is bytes)"


def _number_with_unit(text: str, units: dict[str, int], form: str, base: str) -> int:
    """``text`` as a number with an optional unit from ``units``; a bare number must be whole."""
    match = _NUMBER_UNIT.match(text)
    if match is None:
        raise ValueError(f"expected {form}")
    number, unit = match.group(1), match.group(2).lower()
    if len(number) > _MAX_DIGITS:
        raise ValueError(f"expected {form}: at most {_MAX_DIGITS} digits")
    if unit == "":
        if "." in number:
            raise ValueError(f"expected {form}: a bare number must be whole {base}")
        return int(number)
    if unit not in units:
        raise ValueError(f"unknown unit {unit!r}; expected {form}")
    return round(float(number) * units[unit])


def parse_duration(text: str, allow_never: bool = False) -> int:
    """Parse a duration into milliseconds.

    Raises ValueError naming the expected form. ``-1`` (meaning "never") is accepted only when
    ``allow_never`` is set.
    """
    if text.strip() == "-1" and allow_never:
        return -1
    form = DURATION_FORM + (" or -1" if allow_never else "")
    return _number_with_unit(text, _DURATION_UNITS_MS, form, "ms")


def parse_size(text: str) -> int:
    """Parse a size into bytes (powers of 1024). Raises ValueError naming the expected form."""
    return _number_with_unit(text, _SIZE_UNITS, SIZE_FORM, "bytes")


def format_duration(ms: int) -> str:
    """The shortest exact spelling of a duration in ms (``-1`` stays ``-1``)."""
    if ms <= 0:
        return str(ms)
    for unit in ("d", "h", "min", "s"):
        factor = _DURATION_UNITS_MS[unit]
        if ms % factor == 0:
            return f"{ms // factor}{unit}"
    return f"{ms}ms"


def format_size(size: int) -> str:
    """The shortest exact spelling of a byte size."""
    for unit in ("TB", "GB", "MB", "KB"):
        factor = _SIZE_UNITS[unit.lower()]
        if size and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"
