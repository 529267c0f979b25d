"""What one load job does: list the files under its path and read each through the cache.

A file or subdirectory that fails (outside the mount roots through a symlink, vanished, denied,
unreadable) is counted and noted on the job, and the job goes on; only a failure to list the
job's own path ends it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ufs.errors import UfsError
from ufs.status import UfsStatus
from worker.load.job import LoadJob
from worker.meta.errors import MetaError

if TYPE_CHECKING:
    from worker.service import WorkerService

log = logging.getLogger(__name__)

# Failures of one file or directory that a job expects and records; anything else is a bug,
# recorded as well but logged with its traceback.
_EXPECTED = (UfsError, MetaError, OSError, ValueError)


def run_job(service: WorkerService, job: LoadJob, root: UfsStatus) -> None:
    """Load ``root`` (a file, or a directory's files as the job says) until done or cancelled.
    Raises what listing ``root`` itself raises."""
    files = _files(service, job, root) if root.is_dir else [root]
    job.count(files_total=len(files), bytes_total=sum(f.size for f in files))
    for status in files:
        if job.cancel.is_set():
            return
        _load_file(service, job, status)


def _files(service: WorkerService, job: LoadJob, root: UfsStatus) -> list[UfsStatus]:
    files: list[UfsStatus] = []
    stack = [root.uri]
    while stack and not job.cancel.is_set():
        directory = stack.pop()
        try:
            children = service.list(directory, sync_interval=0)
        except Exception as exc:
            if directory == root.uri:
                raise
            _note_failure(job, directory, exc)
            job.count(dirs_failed=1)
            continue
        for child in children:
            if child.is_dir:
                if job.recursive:
                    stack.append(child.uri)
            elif job.wants(child.uri):
                files.append(child)
    return files


def _load_file(service: WorkerService, job: LoadJob, status: UfsStatus) -> None:
    try:
        result = service.read(status.uri, 0, None, sync_interval=-1)
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
