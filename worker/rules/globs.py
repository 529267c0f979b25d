"""Patterns over canonical URIs: the rules file's globs and the include/exclude globs, as
regular expressions, and which patterns are plain prefixes (indexed, not scanned)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

from ufs import uri as uris

_WILD = frozenset("*?")


def compile_glob(pattern: str) -> re.Pattern[str]:
    """``pattern`` as a regular expression over canonical URIs: ``**`` any number of whole
    segments (as the last one: the directory itself or anything under it), ``*`` and ``?``
    within one segment; a pattern with neither matches that URI only. Raises UfsInvalidPath
    for a pattern that is not a URI."""
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


def as_prefix(pattern: str) -> str | None:
    """The canonical prefix ``pattern`` is, when it is ``<uri>/**`` with no other wildcard
    (it then matches what the prefix matches: the URI itself and anything under it), else
    None. Raises UfsInvalidPath for a pattern that is not a URI."""
    head = pattern.rstrip("/")
    if not head.endswith("/**"):
        return None
    head = head[: -len("/**")]
    if _WILD & set(head) or head.endswith("/"):
        return None
    return uris.normalize(head)


def any_of(patterns: Sequence[str]) -> re.Pattern[str]:
    """A regular expression matching a URI that any of the shell-style ``patterns`` matches
    whole (``dora.worker.cache.include``/``exclude``: ``*`` also crosses ``/``)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def none_of(patterns: Sequence[str]) -> re.Pattern[str]:
    """A regular expression matching a URI that none of ``patterns`` (as :func:`any_of`)
    matches."""
    return re.compile(f"(?!{any_of(patterns).pattern})(?s:.*)")
