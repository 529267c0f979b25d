"""What a load job does: walk the tree (recursive or not) with bounded parallelism, fill every
wanted file, skip what is cached already, or with ``metadata_only`` cache statuses only."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from tests.worker.load.conftest import WAIT_S
from ufs.status import UfsStatus, file_id
from worker.load import JobState, LoadJob
from worker.service import WorkerService

Make = Callable[..., WorkerService]


def tree(data_dir: Path) -> list[Path]:
    """Three levels of files, 2 per directory, 1,500 bytes each."""
    files = []
    for directory in ("t", "t/a", "t/a/b", "t/c"):
        (data_dir / directory).mkdir()
        for n in range(2):
            path = data_dir / directory / f"f{n}.bin"
            path.write_bytes(bytes([n]) * 1500)
            files.append(path)
    return files


def run(service: WorkerService, path: Path, recursive: bool = True, **options: bool) -> LoadJob:
    job = service.loads.submit(f"file://{path}", recursive, [], [], **options)
    done = service.loads.wait(job.id, timeout=WAIT_S)
    assert done is not None and done.state is JobState.DONE, job.to_dict()
    return done


def cached(service: WorkerService, path: Path) -> int:
    status = service.status(f"file://{path}")
    return service.pages.cached_bytes(file_id(status.uri), status.version)


def test_a_recursive_job_fills_every_file_with_a_small_pool(
    make_service: Make, data_dir: Path
) -> None:
    service = make_service("dora.worker.load.parallelism.local=2")
    files = tree(data_dir)
    progress = run(service, data_dir / "t").to_dict()
    assert (progress["files_total"], progress["files_done"]) == (8, 8)
    assert progress["bytes_done"] == progress["bytes_total"] == 8 * 1500
    assert all(cached(service, path) == 1500 for path in files)


def listing_threads(service: WorkerService) -> set[str]:
    """The names of the threads that list for ``service`` from now on."""
    names: set[str] = set()
    list_status = service.list

    def spy(uri: str, sync_interval: int | None = None) -> list[UfsStatus]:
        names.add(threading.current_thread().name)
        return list_status(uri, sync_interval)

    service.list = spy  # type: ignore[method-assign]
    return names


def test_a_job_on_a_local_ufs_lists_on_one_thread_by_default(
    make_service: Make, data_dir: Path
) -> None:
    service = make_service("dora.worker.load.parallelism=8")
    tree(data_dir)
    names = listing_threads(service)
    job = run(service, data_dir / "t", metadata_only=True)
    assert job.to_dict()["files_done"] == 8
    assert len(names) == 1 and names.pop().startswith(job.id)


def test_a_job_that_is_not_recursive_loads_only_the_top_directory(
    make_service: Make, data_dir: Path
) -> None:
    service = make_service()
    files = tree(data_dir)
    assert run(service, data_dir / "t", recursive=False).to_dict()["files_done"] == 2
    assert [cached(service, path) for path in files[:3]] == [1500, 1500, 0]


def test_a_job_run_again_reads_no_page(make_service: Make, data_dir: Path) -> None:
    service = make_service()
    tree(data_dir)
    run(service, data_dir / "t")
    reads = service.reader.counters.snapshot()
    progress = run(service, data_dir / "t").to_dict()
    assert (progress["files_done"], progress["bytes_done"]) == (8, 8 * 1500)
    assert service.reader.counters.snapshot() == reads


def test_a_metadata_only_job_caches_statuses_and_listings_but_no_data(
    make_service: Make, data_dir: Path
) -> None:
    service = make_service()
    files = tree(data_dir)
    progress = run(service, data_dir / "t", metadata_only=True).to_dict()
    assert progress["metadata_only"] is True
    assert (progress["files_total"], progress["files_done"], progress["bytes_total"]) == (8, 8, 0)
    calls = service.meta.counters()["ufs_calls"]
    for path in files:
        assert service.status(f"file://{path}").size == 1500
        assert cached(service, path) == 0
    assert service.list(f"file://{data_dir}/t/a")
    assert service.meta.counters()["ufs_calls"] == calls
