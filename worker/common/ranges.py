"""Byte ranges as callers ask for them, resolved against the size of the file version served.

Two forms: a :class:`Window` (``offset`` and optional ``length``, as REST v1's query and WebHDFS's
OPEN give them) and a :class:`ByteRange` (one range of an HTTP ``Range`` header, RFC 9110
§14.1.2). Both resolve to ``(offset, length)`` inside the file or raise RangeNotSatisfiable
carrying the size, so an answer can say ``Content-Range: bytes */size``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from worker.common.errors import RangeNotSatisfiable


class Span(Protocol):
    """A requested range, not yet knowing the file's size."""

    def resolve(self, size: int) -> tuple[int, int]:
        """``(offset, length)`` within a file of ``size`` bytes. Raises RangeNotSatisfiable
        (with ``size``) when the request selects nothing the file has."""
        ...


@dataclass(frozen=True)
class Window:
    """``length`` bytes from ``offset`` (None: to the end). A window running past the end is
    cut at the end; one starting past the end is unsatisfiable, as is one starting exactly at
    the end of a non-empty file unless it asks for 0 bytes (reading an empty file whole is
    fine)."""

    offset: int = 0
    length: int | None = None

    def resolve(self, size: int) -> tuple[int, int]:
        if self.offset < 0 or (self.length is not None and self.length < 0):
            raise RangeNotSatisfiable(
                f"bad range offset={self.offset} length={self.length}", size=size
            )
        if self.offset > size or (self.offset == size and size and self.length != 0):
            raise RangeNotSatisfiable(
                f"offset {self.offset} is past the end of the file ({size} bytes)", size=size
            )
        available = size - self.offset
        return self.offset, available if self.length is None else min(self.length, available)


@dataclass(frozen=True)
class ByteRange:
    """One HTTP byte range: ``first-last`` (``last`` None: to the end) or, with ``first`` None,
    the last ``last`` bytes (a suffix range). Satisfiable when ``first`` is below the size, or
    for a suffix range when both the suffix and the file are non-empty (RFC 9110 §14.1.1; an
    empty file has no byte a 206 could name)."""

    first: int | None
    last: int | None

    def resolve(self, size: int) -> tuple[int, int]:
        if self.first is None:
            suffix = self.last or 0
            if suffix == 0 or size == 0:
                raise RangeNotSatisfiable(
                    f"range bytes=-{suffix} selects nothing of a {size}-byte file", size=size
                )
            return max(0, size - suffix), min(suffix, size)
        if self.first >= size:
            raise RangeNotSatisfiable(
                f"range starts at byte {self.first}, the file has {size} bytes", size=size
            )
        last = size - 1 if self.last is None else min(self.last, size - 1)
        return self.first, last - self.first + 1
