"""Load jobs: prewarm metadata and pages for a file or a prefix in the background, with
include/exclude globs, progress and cancel (the Hive CachedStore prewarm idea).

Jobs run on a fixed number of threads (``dora.worker.load.threads``); others wait in a bounded
queue. Every job reaches a final state whatever its work raises, and finished jobs are kept for
progress queries only as long and as many as ``dora.worker.load.history.*`` say.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence

from ufs.status import UfsStatus
from worker.common.errors import WorkerBusy
from worker.load.job import JobState, LoadJob
from worker.load.options import LoadOptions
from worker.load.source import LoadSource
from worker.load.work import JobWork

log = logging.getLogger(__name__)


RETRY_AFTER_S = 5
"""What a refused submission is told to wait: a queued job takes seconds at least."""


class LoadRejected(WorkerBusy):
    """The worker cannot take another load job now: the queue is full, or it is stopping.
    Retrying later may succeed: every surface answers 503 ``WorkerBusy`` with ``Retry-After``
    (the error catalogue's row for :class:`WorkerBusy`)."""


class LoadManager:
    """Runs load jobs on a bounded pool of daemon threads.

    Thread-safe: the job table, the queue and the pool are guarded by one condition lock, never
    held while a job works. A job's own lock (progress) is taken after it, never before.
    """

    def __init__(self, source: LoadSource, options: LoadOptions) -> None:
        self._source = source
        self._options = options
        self._cond = threading.Condition()
        self._jobs: dict[str, LoadJob] = {}
        self._queue: deque[tuple[LoadJob, UfsStatus]] = deque()
        self._runners: list[threading.Thread] = []
        self._closed = False
        self._ids = itertools.count(1)

    def submit(
        self,
        path: str,
        recursive: bool,
        include: Sequence[str],
        exclude: Sequence[str],
        metadata_only: bool = False,
    ) -> LoadJob:
        """Queue a job for ``path``, checked against the mount roots first. With
        ``metadata_only`` the job caches statuses and listings, not data.

        Raises the UFS errors of a status call on ``path`` (outside the roots, not found,
        denied, unavailable) and LoadRejected if the queue is full or the manager is closed.
        """
        # Refused now, not later in the job.
        root = self._source.status(self._source.request(path, 0))
        with self._cond:
            if self._closed:
                raise LoadRejected(
                    "the worker is stopping; no new load jobs", retry_after=RETRY_AFTER_S
                )
            if len(self._queue) >= self._options.queue_size:
                raise LoadRejected(
                    f"{len(self._queue)} load jobs are already waiting "
                    "(dora.worker.load.queue.size); try again later",
                    retry_after=RETRY_AFTER_S,
                )
            self._prune()
            job = LoadJob(
                f"load-{next(self._ids)}", root.uri, recursive, include, exclude, metadata_only
            )
            self._jobs[job.id] = job
            self._queue.append((job, root))
            if len(self._runners) < self._options.threads:
                self._start_runner()
            self._cond.notify()
        return job

    def get(self, job_id: str) -> LoadJob | None:
        """The job, or None if it is unknown or has left the history."""
        with self._cond:
            self._prune()
            return self._jobs.get(job_id)

    def jobs(self) -> list[LoadJob]:
        """Every job still in the history, oldest first."""
        with self._cond:
            self._prune()
            return sorted(self._jobs.values(), key=lambda job: job.submitted_at)

    def latest(self, path: str) -> LoadJob | None:
        """The newest job submitted for ``path`` (a canonical URI) still in the history, or
        None. For surfaces that name load jobs by path, as Alluxio's REST API does."""
        with self._cond:
            self._prune()
            jobs = [job for job in self._jobs.values() if job.path == path]
        return jobs[-1] if jobs else None

    def cancel(self, job_id: str) -> LoadJob | None:
        """Cancel a job: a queued one ends at once, a running one at its next file (or page).
        Cancelling a finished job changes nothing. None if the job is unknown."""
        with self._cond:
            job = self._jobs.get(job_id)
            if job is None:
                return None
            job.cancel.set()
            if job.state is JobState.QUEUED:
                self._queue = deque(item for item in self._queue if item[0] is not job)
                job.finish(JobState.CANCELLED)
        return job

    def wait(self, job_id: str, timeout: float | None = None) -> LoadJob | None:
        """The job once it has finished (or when ``timeout`` passes); None if unknown."""
        job = self.get(job_id)
        if job is not None:
            job.finished.wait(timeout)
        return job

    def states(self) -> dict[str, int]:
        """How many known jobs are in each state (for the metrics)."""
        with self._cond:
            self._prune()
            counts = Counter(job.state.value for job in self._jobs.values())
        return {state.value: counts.get(state.value, 0) for state in JobState}

    def close(self) -> None:
        """Cancel every job and wait up to ``dora.worker.load.stop.timeout`` for running ones to
        stop; a job still running then is left to end on its own thread. Idempotent."""
        with self._cond:
            self._closed = True
            live = [job for job in self._jobs.values() if not job.state.final]
            for job in live:
                job.cancel.set()
                if job.state is JobState.QUEUED:
                    job.finish(JobState.CANCELLED)
            self._queue.clear()
            self._cond.notify_all()
            runners = list(self._runners)
        deadline = time.monotonic() + self._options.stop_timeout_ms / 1000
        for runner in runners:
            runner.join(max(0.0, deadline - time.monotonic()))
        stuck = [job.id for job in live if not job.finished.is_set()]
        if stuck:
            log.warning("load jobs %s did not stop in time; leaving them to end", stuck)

    def _start_runner(self) -> None:
        """Caller holds ``_cond``."""
        runner = threading.Thread(
            target=self._serve, name=f"load-runner-{len(self._runners) + 1}", daemon=True
        )
        self._runners.append(runner)
        runner.start()

    def _serve(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                job, root = self._queue.popleft()
                job.start()
            self._run(job, root)

    def _run(self, job: LoadJob, root: UfsStatus) -> None:
        """Do the job's work; whatever it raises, the job ends in a final state."""
        outcome = JobState.FAILED
        try:
            parallelism = self._options.parallelism_for(root.uri)
            batch = self._options.fill_batch_for(root.uri)
            JobWork(self._source, job, root, parallelism, batch).run()
            outcome = JobState.CANCELLED if job.cancel.is_set() else JobState.DONE
        except Exception as exc:  # any failure ends the job, recorded on it
            log.warning("load job %s on %s failed", job.id, job.path, exc_info=True)
            job.note_error(f"{job.path}: {exc}")
        finally:
            with self._cond:
                job.finish(outcome)
            log.info("load job %s on %s: %s", job.id, job.path, job.to_dict())

    def _prune(self) -> None:
        """Forget finished jobs past the history's age or count. Caller holds ``_cond``."""
        finished = [job for job in self._jobs.values() if job.state.final]
        oldest = time.time() - self._options.history_ttl_ms / 1000
        kept = sorted(
            (job for job in finished if (job.finished_at or 0) >= oldest),
            key=lambda job: job.finished_at or 0,
        )
        keep = {job.id for job in kept[max(0, len(kept) - self._options.history_size) :]}
        for job in finished:
            if job.id not in keep:
                del self._jobs[job.id]
