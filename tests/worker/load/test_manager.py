"""Load jobs: a bounded executor, a final state whatever happens, cancel, a bounded history and a
close that returns."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.worker.load.conftest import WAIT_S, HeldUfs
from worker.load import JobState, LoadJob, LoadRejected
from worker.service import WorkerService

Make = Callable[..., WorkerService]


def uri(path: Path) -> str:
    return f"file://{path}"


def make_dirs(data_dir: Path, *names: str, files: int = 2) -> list[Path]:
    made = []
    for name in names:
        (data_dir / name).mkdir()
        for i in range(files):
            (data_dir / name / f"f{i}.bin").write_bytes(bytes([i]) * 1000)
        made.append(data_dir / name)
    return made


def finished(service: WorkerService, job: LoadJob) -> LoadJob:
    done = service.loads.wait(job.id, timeout=WAIT_S)
    assert done is not None and done.finished.is_set(), f"{job.id} did not finish"
    return done


def held_job(service: WorkerService, ufs: HeldUfs, directory: Path) -> LoadJob:
    """A job running and stuck in its first listing."""
    ufs.hold(uri(directory))
    job = service.loads.submit(uri(directory), True, [], [])
    assert ufs.entered[uri(directory)].wait(WAIT_S)
    return job


def load_runners() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("load-runner")]


def test_jobs_beyond_the_threads_wait_in_the_queue_and_all_finish(
    make_service: Make, held_ufs: HeldUfs, data_dir: Path
) -> None:
    service = make_service("dora.worker.load.threads=1")
    first, *others = make_dirs(data_dir, "a", "b", "c")
    running = held_job(service, held_ufs, first)
    queued = [service.loads.submit(uri(d), True, [], []) for d in others]
    assert running.state is JobState.RUNNING
    assert [job.state for job in queued] == [JobState.QUEUED, JobState.QUEUED]
    assert service.loads.states()["queued"] == 2
    assert len(load_runners()) == 1
    held_ufs.release(uri(first))
    for job in (running, *queued):
        assert finished(service, job).state is JobState.DONE
        assert job.to_dict()["files_done"] == 2


def test_a_full_queue_refuses_a_job(make_service: Make, held_ufs: HeldUfs, data_dir: Path) -> None:
    service = make_service("dora.worker.load.threads=1", "dora.worker.load.queue.size=1")
    first, second, third = make_dirs(data_dir, "a", "b", "c")
    held_job(service, held_ufs, first)
    service.loads.submit(uri(second), True, [], [])
    with pytest.raises(LoadRejected, match="queue.size"):
        service.loads.submit(uri(third), True, [], [])


def test_cancel_ends_a_queued_job_at_once_and_a_running_one_at_its_next_step(
    make_service: Make, held_ufs: HeldUfs, data_dir: Path
) -> None:
    service = make_service("dora.worker.load.threads=1")
    first, second = make_dirs(data_dir, "a", "b")
    running = held_job(service, held_ufs, first)
    queued = service.loads.submit(uri(second), True, [], [])
    service.loads.cancel(queued.id)
    assert queued.finished.is_set() and queued.state is JobState.CANCELLED
    service.loads.cancel(running.id)
    held_ufs.release(uri(first))
    assert finished(service, running).state is JobState.CANCELLED
    assert running.to_dict()["files_done"] == 0
    assert service.loads.cancel("load-999") is None


def test_a_job_whose_work_fails_unexpectedly_ends_failed_with_the_error(
    make_service: Make, held_ufs: HeldUfs, data_dir: Path
) -> None:
    service = make_service()
    (directory,) = make_dirs(data_dir, "a")
    job = held_job(service, held_ufs, directory)
    # The metastore closes under the job (as at shutdown): storing the listing fails with a
    # MetastoreError, which is not a UFS error.
    service.meta.close()
    held_ufs.release(uri(directory))
    done = finished(service, job)
    assert done.state is JobState.FAILED
    assert "closed" in done.to_dict()["errors"][0]


def test_a_file_or_directory_that_fails_is_counted_and_the_job_goes_on(
    make_service: Make, held_ufs: HeldUfs, data_dir: Path
) -> None:
    service = make_service()
    (directory,) = make_dirs(data_dir, "a", files=3)
    (directory / "sub").mkdir()
    (directory / "f1.bin").unlink()
    job = held_job(service, held_ufs, directory)
    # Listed, then gone before the job reads or lists them.
    (directory / "f2.bin").unlink()
    (directory / "sub").rmdir()
    held_ufs.release(uri(directory))
    progress = finished(service, job).to_dict()
    assert progress["state"] == "done"
    assert (progress["files_total"], progress["files_done"], progress["files_failed"]) == (2, 1, 1)
    assert progress["dirs_failed"] == 1
    assert len(progress["errors"]) == 2


def test_finished_jobs_are_kept_only_up_to_the_history_size(
    make_service: Make, data_dir: Path
) -> None:
    service = make_service("dora.worker.load.history.size=2", "dora.worker.load.threads=1")
    jobs = [service.loads.submit(uri(d), True, [], []) for d in make_dirs(data_dir, *"abcd")]
    for job in jobs:
        finished(service, job)
    assert [service.loads.get(job.id) is not None for job in jobs] == [False, False, True, True]
    assert service.loads.states()["done"] == 2


def test_finished_jobs_leave_the_history_after_its_ttl(make_service: Make, data_dir: Path) -> None:
    service = make_service("dora.worker.load.history.ttl=0")
    job = service.loads.submit(uri(make_dirs(data_dir, "a")[0]), True, [], [])
    finished(service, job)
    assert service.loads.get(job.id) is None


def test_close_returns_while_a_job_is_stuck_and_the_job_still_ends(
    make_service: Make, held_ufs: HeldUfs, data_dir: Path
) -> None:
    service = make_service("dora.worker.load.stop.timeout=50ms")
    first, second = make_dirs(data_dir, "a", "b")
    stuck = held_job(service, held_ufs, first)
    closer = threading.Thread(target=service.loads.close)
    closer.start()
    closer.join(WAIT_S)
    assert not closer.is_alive(), "close() hung on a stuck job"
    with pytest.raises(LoadRejected, match="stopping"):
        service.loads.submit(uri(second), True, [], [])
    held_ufs.release(uri(first))
    assert finished(service, stuck).state is JobState.CANCELLED
