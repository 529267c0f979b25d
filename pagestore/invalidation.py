"""The log that keeps a fill racing an invalidation from storing stale pages."""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from pagestore.files import uri_under
from pagestore.page import PageKey


class Invalidation(NamedTuple):
    """One invalidation: every version of a file (``version_key`` None) or one version, or
    (``file_id`` None) every file under a URI ``prefix``."""

    file_id: str | None
    version_key: str | None = None
    prefix: str | None = None

    def covers(self, key: PageKey, uri: str) -> bool:
        if self.prefix is not None:
            return uri_under(uri, self.prefix)
        return self.file_id == key.file_id and self.version_key in (None, key.version_key)


class InvalidationLog:
    """The most recent invalidations, numbered. A writer notes :meth:`mark` before it starts and
    asks :meth:`invalidated_since` before its page becomes visible; if the page's file was
    invalidated in between, the page may be stale and must not be stored. When the log has
    forgotten entries newer than a mark, the answer is conservatively yes.

    Not thread-safe: the page cache calls it under its own lock.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._seq = 0
        self._recent: deque[tuple[int, Invalidation]] = deque(maxlen=limit)

    def mark(self) -> int:
        return self._seq

    def record(self, invalidation: Invalidation) -> None:
        self._seq += 1
        self._recent.append((self._seq, invalidation))

    def invalidated_since(self, mark: int, key: PageKey, uri: str) -> bool:
        """Whether the page ``key`` of the file at ``uri`` was invalidated after ``mark``."""
        if mark == self._seq:
            return False
        if not self._recent or self._recent[0][0] > mark + 1:
            return True
        for seq, invalidation in reversed(self._recent):
            if seq <= mark:
                break
            if invalidation.covers(key, uri):
                return True
        return False
