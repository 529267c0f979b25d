"""The one parser of the integers requests carry, for every surface (REST v1's query and Range
header, WebHDFS's offsets and lengths, the Alluxio routes' page indexes and ranges).

An integer is ASCII digits and nothing else, at most :data:`MAX_INTEGER` (Java's ``long``, what
a Hadoop client can send): Python's ``int()`` would also take spaces, underscores and other
scripts' digits (``٣``; ``²`` passes ``str.isdigit`` and then fails ``int``), and raises
ValueError past 4,300 digits. Each surface words its own 400 around the ValueError raised here,
naming the parameter; :func:`shown` keeps a long value from filling the message.
"""

from __future__ import annotations

import re

MAX_INTEGER = (1 << 63) - 1
_DIGITS = len(str(MAX_INTEGER))
_NATURAL = re.compile(r"[0-9]+")
_SIGNED = re.compile(r"-?[0-9]+")
SHOWN_CHARS = 40


def natural(text: str) -> int:
    """``text`` as an integer from 0 to :data:`MAX_INTEGER`; ValueError saying what was
    expected for anything else."""
    return _parse(text, _NATURAL, "a whole number")


def signed(text: str) -> int:
    """``text`` as an integer with an optional leading ``-``, of magnitude at most
    :data:`MAX_INTEGER`; ValueError saying what was expected for anything else."""
    return _parse(text, _SIGNED, "an integer")


def _parse(text: str, form: re.Pattern[str], what: str) -> int:
    if form.fullmatch(text) is None or len(text.lstrip("-")) > _DIGITS:
        raise ValueError(f"expected {what} of at most {MAX_INTEGER} (digits 0-9 only)")
    value = int(text)
    if abs(value) > MAX_INTEGER:
        raise ValueError(f"expected {what} of at most {MAX_INTEGER} (digits 0-9 only)")
    return value


def shown(text: str) -> str:
    """``text`` quoted for an error message, cut to its first characters when it is long."""
    if len(text) <= SHOWN_CHARS:
        return repr(text)
    return f"{text[:SHOWN_CHARS]!r}... ({len(text)} characters)"
