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
_NUMBER_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")

DURATION_FORM = "a duration such as 500ms, 30s, 10min, 1h or 2d (a bare integer is ms)"
SIZE_FORM = "a size such as 512B, 64KB, 1MB, 1GB or 1TB (powers of 1024; a bare integer is bytes)"


def parse_duration(text: str, allow_never: bool = False) -> int:
    """Parse a duration into milliseconds.

    Raises ValueError naming the expected form. ``-1`` (meaning "never") is accepted only when
    ``allow_never`` is set.
    """
    stripped = text.strip()
    if stripped == "-1" and allow_never:
        return -1
    match = _NUMBER_UNIT.match(stripped)
    if match is None:
        raise ValueError(f"expected {DURATION_FORM}" + (" or -1" if allow_never else ""))
    number, unit = match.group(1), match.group(2).lower()
    if unit == "":
        if "." in number:
            raise ValueError(f"expected {DURATION_FORM}: a bare number must be whole ms")
        return int(number)
    if unit not in _DURATION_UNITS_MS:
        raise ValueError(f"unknown duration unit {unit!r}; expected {DURATION_FORM}")
    return round(float(number) * _DURATION_UNITS_MS[unit])


def parse_size(text: str) -> int:
    """Parse a size into bytes (powers of 1024). Raises ValueError naming the expected form."""
    match = _NUMBER_UNIT.match(text)
    if match is None:
        raise ValueError(f"expected {SIZE_FORM}")
    number, unit = match.group(1), match.group(2).lower()
    if unit == "":
        if "." in number:
            raise ValueError(f"expected {SIZE_FORM}: a bare number must be whole bytes")
        return int(number)
    if unit not in _SIZE_UNITS:
        raise ValueError(f"unknown size unit {unit!r}; expected {SIZE_FORM}")
    return round(float(number) * _SIZE_UNITS[unit])


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
