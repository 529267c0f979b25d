"""One load job: what it was asked to load, its state and its progress."""

from __future__ import annotations

import enum
import fnmatch
import threading
import time
from collections.abc import Sequence
from typing import Any

MAX_ERRORS_KEPT = 20


class JobState(enum.Enum):
    """Where a job is in its life. QUEUED and RUNNING are live; the others are final."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"

    @property
    def final(self) -> bool:
        return self not in (JobState.QUEUED, JobState.RUNNING)


class LoadJob:
    """A load job's request, state and progress. A ``metadata_only`` job caches statuses and
    listings only: its files count as done once their statuses are cached, and it loads no bytes.

    Thread-safe: progress is counted under the job's own lock (several fill threads may count at
    once) and read as one consistent snapshot by :meth:`to_dict`. State changes are made by the
    manager under its lock, then published here. ``finished`` is set once the state is final.
    """

    def __init__(
        self,
        job_id: str,
        path: str,
        recursive: bool,
        include: Sequence[str],
        exclude: Sequence[str],
        metadata_only: bool = False,
    ) -> None:
        self.id = job_id
        self.path = path
        self.recursive = recursive
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.metadata_only = metadata_only
        self.cancel = threading.Event()
        self.finished = threading.Event()
        self._lock = threading.Lock()
        self._state = JobState.QUEUED
        self._progress = dict.fromkeys(
            ("files_total", "files_done", "files_failed", "dirs_failed", "bytes_total"), 0
        )
        self._progress["bytes_done"] = 0
        self._errors: list[str] = []
        self.submitted_at = time.time()
        self.started_at: float | None = None
        self.finished_at: float | None = None

    @property
    def state(self) -> JobState:
        return self._state

    def wants(self, uri: str) -> bool:
        """Whether ``uri`` passes the job's include/exclude globs."""
        relative = uri[len(self.path) :].lstrip("/") or uri.rsplit("/", 1)[-1]
        if self.include and not any(_match(uri, relative, p) for p in self.include):
            return False
        return not any(_match(uri, relative, p) for p in self.exclude)

    # -- progress (any thread) ------------------------------------------------------------------

    def count(self, **amounts: int) -> None:
        """Add to progress counters by name (``files_done=1, bytes_done=n``, ...)."""
        with self._lock:
            for name, amount in amounts.items():
                self._progress[name] += amount

    def note_error(self, message: str) -> None:
        """Keep ``message`` among the first MAX_ERRORS_KEPT errors."""
        with self._lock:
            if len(self._errors) < MAX_ERRORS_KEPT:
                self._errors.append(message)

    # -- state (the manager only) ---------------------------------------------------------------

    def start(self) -> None:
        self.started_at = time.time()
        self._state = JobState.RUNNING

    def finish(self, state: JobState) -> None:
        """Enter final ``state`` once; later calls change nothing."""
        if self._state.final:
            return
        self.finished_at = time.time()
        self._state = state
        self.finished.set()

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            progress, errors = dict(self._progress), list(self._errors)
        return {
            "id": self.id,
            "path": self.path,
            "recursive": self.recursive,
            "include": list(self.include),
            "exclude": list(self.exclude),
            "metadata_only": self.metadata_only,
            "state": self._state.value,
            **progress,
            "submitted_at": self.submitted_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "errors": errors,
        }


def _match(uri: str, relative: str, pattern: str) -> bool:
    """A pattern matches the full URI, the path relative to the job's root, or the name."""
    name = uri.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(text, pattern) for text in (uri, relative, name))
