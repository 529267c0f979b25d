"""Load jobs: prewarm metadata and pages for a file or a prefix in the background, with
include/exclude globs, progress and cancel (the Hive CachedStore prewarm idea)."""

from __future__ import annotations

import enum
import fnmatch
import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ufs.errors import UfsError
from ufs.status import UfsStatus

if TYPE_CHECKING:
    from worker.service import WorkerService

log = logging.getLogger(__name__)
MAX_ERRORS_KEPT = 20


class JobState(enum.Enum):
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass
class LoadJob:
    """One load job's request and progress. Progress fields are written by the job's thread
    only and read by anyone; ints are updated atomically enough for a progress report."""

    id: str
    path: str
    recursive: bool
    include: Sequence[str]
    exclude: Sequence[str]
    state: JobState = JobState.RUNNING
    files_total: int = 0
    files_done: int = 0
    files_failed: int = 0
    bytes_total: int = 0
    bytes_done: int = 0
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    errors: list[str] = field(default_factory=list)
    cancel: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)

    def wants(self, uri: str) -> bool:
        relative = uri[len(self.path) :].lstrip("/") or uri.rsplit("/", 1)[-1]
        if self.include and not any(_match(uri, relative, p) for p in self.include):
            return False
        return not any(_match(uri, relative, p) for p in self.exclude)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "recursive": self.recursive,
            "include": list(self.include),
            "exclude": list(self.exclude),
            "state": self.state.value,
            "files_total": self.files_total,
            "files_done": self.files_done,
            "files_failed": self.files_failed,
            "bytes_total": self.bytes_total,
            "bytes_done": self.bytes_done,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "errors": list(self.errors),
        }


def _match(uri: str, relative: str, pattern: str) -> bool:
    """A pattern matches the full URI, the path relative to the job's root, or the name."""
    name = uri.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(text, pattern) for text in (uri, relative, name))


class LoadManager:
    """Runs load jobs, one thread each. Thread-safe: the job table is guarded by one lock."""

    def __init__(self, service: WorkerService) -> None:
        self._service = service
        self._jobs: dict[str, LoadJob] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def submit(
        self, path: str, recursive: bool, include: Sequence[str], exclude: Sequence[str]
    ) -> LoadJob:
        """Start a job for ``path`` (checked against the mount roots first)."""
        # Outside the roots, not found, denied: refused now, not later in the job.
        root = self._service.status(path, sync_interval=0)
        with self._lock:
            job = LoadJob(f"load-{next(self._ids)}", root.uri, recursive, include, exclude)
            self._jobs[job.id] = job
            thread = threading.Thread(target=self._run, args=(job, root), name=job.id, daemon=True)
            self._threads.append(thread)
        thread.start()
        return job

    def get(self, job_id: str) -> LoadJob | None:
        with self._lock:
            return self._jobs.get(job_id)

    def latest(self, path: str) -> LoadJob | None:
        """The newest job submitted for ``path`` (a canonical URI), or None. For surfaces that
        name load jobs by path, as Alluxio's REST API does."""
        with self._lock:
            jobs = [job for job in self._jobs.values() if job.path == path]
        return jobs[-1] if jobs else None

    def cancel(self, job_id: str) -> LoadJob | None:
        job = self.get(job_id)
        if job is not None:
            job.cancel.set()
        return job

    def wait(self, job_id: str, timeout: float | None = None) -> LoadJob | None:
        """The job once it has finished (or when ``timeout`` passes); None if unknown."""
        job = self.get(job_id)
        if job is not None:
            job.finished.wait(timeout)
        return job

    def states(self) -> dict[str, int]:
        with self._lock:
            counts = Counter(job.state.value for job in self._jobs.values())
        return {state.value: counts.get(state.value, 0) for state in JobState}

    def close(self) -> None:
        with self._lock:
            jobs, threads = list(self._jobs.values()), list(self._threads)
        for job in jobs:
            job.cancel.set()
        for thread in threads:
            thread.join()

    def _run(self, job: LoadJob, root: UfsStatus) -> None:
        try:
            for status in self._files(job, root):
                if job.cancel.is_set():
                    break
                self._load_file(job, status)
        except UfsError as exc:
            job.errors.append(str(exc))
            job.state = JobState.FAILED
        else:
            job.state = JobState.CANCELLED if job.cancel.is_set() else JobState.DONE
        job.finished_at = time.time()
        job.finished.set()
        log.info("load job %s on %s: %s", job.id, job.path, job.to_dict())

    def _files(self, job: LoadJob, root: UfsStatus) -> list[UfsStatus]:
        service = self._service
        files: list[UfsStatus] = []
        if not root.is_dir:
            files.append(root)
        else:
            stack = [job.path]
            while stack and not job.cancel.is_set():
                for child in service.list(stack.pop(), sync_interval=0):
                    if child.is_dir:
                        if job.recursive:
                            stack.append(child.uri)
                    elif job.wants(child.uri):
                        files.append(child)
        job.files_total = len(files)
        job.bytes_total = sum(f.size for f in files)
        return files

    def _load_file(self, job: LoadJob, status: UfsStatus) -> None:
        try:
            result = self._service.read(status.uri, 0, None, sync_interval=-1)
            for chunk in result.chunks:
                job.bytes_done += len(chunk)
                if job.cancel.is_set():
                    return
            job.files_done += 1
        except (UfsError, OSError, ValueError) as exc:
            job.files_failed += 1
            if len(job.errors) < MAX_ERRORS_KEPT:
                job.errors.append(f"{status.uri}: {exc}")
