"""What one load job does: list the directories under its path and read each file through the
cache (or, for a metadata-only job, only list), with a bounded number of listings and fills
running at once (``dora.worker.load.parallelism``, or ``.parallelism.local`` on a local UFS), so a
slow UFS call holds up only one of them. Files of a page or less are cached many at a time
(``WorkerService.cache_whole``: one UFS request and one page store write for a batch of a local
UFS's files), as a 100k-file load would otherwise spend its time in per-file overheads; what
that cannot cache is read the usual way.

A file or subdirectory that fails (outside the mount roots through a symlink, vanished, denied,
unreadable) is counted and noted on the job, and the job goes on; only a failure to list the
job's own path ends it.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from ufs.errors import UfsError
from ufs.status import UfsStatus
from worker.load.job import LoadJob
from worker.load.options import FILL_BATCH
from worker.load.source import LoadSource
from worker.meta.errors import MetaError

log = logging.getLogger(__name__)

# Failures of one file or directory that a job expects and records; anything else is a bug,
# recorded as well but logged with its traceback.
_EXPECTED = (UfsError, MetaError, OSError, ValueError)


class JobWork:
    """Runs one job's listings and fills on a pool of ``parallelism`` threads, ``batch`` files
    per fill. The pool lives as long as :meth:`run`; everything else is touched by the calling
    thread only."""

    def __init__(
        self,
        service: LoadSource,
        job: LoadJob,
        root: UfsStatus,
        parallelism: int,
        batch: int = FILL_BATCH,
    ) -> None:
        self._service = service
        self._job = job
        self._root = root
        self._parallelism = parallelism
        self._batch = batch
        self._dirs: deque[str] = deque()
        self._files: deque[UfsStatus] = deque()
        self._listing: dict[Future[list[UfsStatus]], str] = {}

    def run(self) -> None:
        """Load the job's path until done or cancelled. Raises what listing the path raises."""
        if not self._root.is_dir:
            self._found([self._root])
        else:
            self._dirs.append(self._root.uri)
        pool = ThreadPoolExecutor(self._parallelism, thread_name_prefix=self._job.id)
        try:
            pending: set[Future[list[UfsStatus]]] = set()
            while not self._job.cancel.is_set():
                while len(pending) < 2 * self._parallelism:
                    task = self._next_task(pool)
                    if task is None:
                        break
                    pending.add(task)
                if not pending:
                    return
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for task in done:
                    self._finished(task)
        finally:
            # Queued tasks are dropped; running ones end at their next file.
            pool.shutdown(wait=True, cancel_futures=True)

    def _next_task(self, pool: ThreadPoolExecutor) -> Future[list[UfsStatus]] | None:
        # Fill before listing further once a batch is ready, so found files stay few.
        if len(self._files) >= self._batch or (self._files and not self._dirs):
            batch = [self._files.popleft() for _ in range(min(self._batch, len(self._files)))]
            return pool.submit(self._fill, batch)
        if self._dirs:
            directory = self._dirs.popleft()
            task = pool.submit(self._service.list, self._service.request(directory, 0))
            self._listing[task] = directory
            return task
        return None

    def _finished(self, task: Future[list[UfsStatus]]) -> None:
        directory = self._listing.pop(task, None)
        if directory is None:
            task.result()  # a fill: it counted its files itself
            return
        try:
            children = task.result()
        except Exception as exc:
            if directory == self._root.uri:
                raise
            _note_failure(self._job, directory, exc)
            self._job.count(dirs_failed=1)
            return
        if self._job.recursive:
            self._dirs.extend(child.uri for child in children if child.is_dir)
        self._found(c for c in children if not c.is_dir and self._job.wants(c.uri))

    def _found(self, files: Iterable[UfsStatus]) -> None:
        found = list(files)
        if self._job.metadata_only:
            # Listing cached their statuses already (and submit cached a file root's).
            self._job.count(files_total=len(found), files_done=len(found))
            return
        self._job.count(files_total=len(found), bytes_total=sum(f.size for f in found))
        self._files.extend(found)

    def _fill(self, files: list[UfsStatus]) -> list[UfsStatus]:
        service, job = self._service, self._job
        cached = service.cached_bytes(files)
        todo: list[UfsStatus] = []
        for status, have in zip(files, cached, strict=True):
            # Already cached (a job run again, a file read meanwhile): nothing to read.
            if have >= status.size:
                job.count(files_done=1, bytes_done=status.size)
            else:
                todo.append(status)
        # Small files are read and stored many at a time; the rest, and the small ones that
        # could not be, one by one through reads.
        small = [f for f in todo if 0 < f.size <= service.page_size]
        large = [f for f in todo if not 0 < f.size <= service.page_size]
        if small and not job.cancel.is_set():
            left = service.cache_whole(small)
            job.count(
                files_done=len(small) - len(left),
                bytes_done=sum(f.size for f in small) - sum(f.size for f in left),
            )
            small = list(left)
        for status in [*small, *large]:
            if job.cancel.is_set():
                break
            _load_file(service, job, status)
        return []


def _load_file(service: LoadSource, job: LoadJob, status: UfsStatus) -> None:
    try:
        result = service.read(service.request(status.uri, -1))
        for chunk in result.chunks:
            job.count(bytes_done=len(chunk))
            if job.cancel.is_set():
                return
    except Exception as exc:  # noqa: BLE001 - one file's failure is counted, the job goes on
        _note_failure(job, status.uri, exc)
        job.count(files_failed=1)
    else:
        job.count(files_done=1)


def _note_failure(job: LoadJob, uri: str, exc: Exception) -> None:
    if not isinstance(exc, _EXPECTED):
        log.warning("load job %s: unexpected failure on %s", job.id, uri, exc_info=exc)
    job.note_error(f"{uri}: {exc}")
