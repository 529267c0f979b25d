"""How ``dora fs`` shows sizes, times and statuses."""

from __future__ import annotations

import datetime
from typing import Any

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def size_text(size: float, human: bool) -> str:
    """``size`` in bytes, or with ``human`` in the largest binary unit that keeps it at least 1
    (``512 B``, ``1.5 KiB``, ``3.0 GiB``), as ``aws s3 ls --human-readable`` shows it."""
    if not human:
        return str(int(size))
    if size < 1024:
        return f"{int(size)} B"
    value = float(size)
    for unit in _UNITS:
        value /= 1024
        if value < 1024 or unit == _UNITS[-1]:
            break
    return f"{value:.1f} {unit}"


def when(mtime_ns: int) -> str:
    """A modification time as local ``YYYY-mm-dd HH:MM:SS``; blank when the UFS gives none (an
    object store's directories)."""
    if not mtime_ns:
        return " " * 19
    return datetime.datetime.fromtimestamp(mtime_ns / 1e9).strftime("%Y-%m-%d %H:%M:%S")


def cached_percent(size: int, cached: int) -> int:
    """The share of a file's bytes in the page store, in whole percent."""
    return 100 * cached // size if size else 0


def long_line(info: dict[str, Any], human: bool) -> str:
    """One ``ls`` line: kind (``d`` or ``-``), size, share cached, ``pinned`` for a file whose
    pages are pinned, modification time, name."""
    pinned = "pinned" if info.get("pinned") else ""
    if info["type"] == "directory":
        return f"d {'-':>14} {'':>4} {pinned:6} {when(info['mtime_ns'])}  {info['name']}"
    size = size_text(info["size"], human)
    cached = cached_percent(info["size"], info["cached_bytes"])
    return f"- {size:>14} {cached:>3}% {pinned:6} {when(info['mtime_ns'])}  {info['name']}"
