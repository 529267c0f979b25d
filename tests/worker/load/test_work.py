"""What a load job does: walk the tree (recursive or not) with bounded parallelism, fill every
wanted file (small ones many at a time, into a pack), skip what is cached already, or with
``metadata_only`` cache statuses only; files changed, swapped for links out of the roots or
kept out of the cache by a path rule after the listing are handled as a read handles them."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.worker.load.conftest import WAIT_S, HeldUfs
from ufs.errors import UfsError
from ufs.status import UfsStatus, file_id
from worker.load import JobState, LoadJob
from worker.request import RequestContext
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
    status = service.status(service.request(f"file://{path}"))
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

    def spy(call: RequestContext) -> list[UfsStatus]:
        names.add(threading.current_thread().name)
        return list_status(call)

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
        assert service.status(service.request(f"file://{path}")).size == 1500
        assert cached(service, path) == 0
    assert service.list(service.request(f"file://{data_dir}/t/a"))
    assert service.meta.counters()["ufs_calls"] == calls


def test_small_files_are_read_in_one_request_and_stored_together_in_a_pack(
    make_service: Make, data_dir: Path, tmp_path: Path
) -> None:
    service = make_service()
    files = tree(data_dir)
    requests: list[int] = []
    read_files = service.ufs.read_files

    def counted(statuses: Sequence[UfsStatus]) -> Sequence[bytes | UfsError]:
        requests.append(len(statuses))
        return read_files(statuses)

    service.ufs.read_files = counted  # type: ignore[method-assign]
    progress = run(service, data_dir / "t").to_dict()
    assert (progress["files_done"], progress["bytes_done"]) == (8, 8 * 1500)
    # A local UFS reads a whole batch in one request (the files found by then).
    assert sum(requests) == 8 and len(requests) < 8
    assert [p.name for p in (tmp_path / "work").rglob("*.pack")] == ["0.pack"]
    reads = service.reader.counters.snapshot()
    for n, path in enumerate(files):
        assert (
            b"".join(service.read(service.request(f"file://{path}")).chunks)
            == bytes([n % 2]) * 1500
        )
    after = service.reader.counters.snapshot()
    assert after["bytes_from_ufs"] == reads["bytes_from_ufs"]  # all from the cache
    assert after["bytes_from_cache"] - reads.get("bytes_from_cache", 0) == 8 * 1500


def test_files_of_every_size_are_loaded_and_counted_as_reads_count_them(
    make_service: Make, data_dir: Path
) -> None:
    """Files up to a page (the last exactly one) go through the batch, a larger and an empty
    one the usual way: the job's counters and the worker's read statistics come out as if
    every file had been read, and every file is then served from the cache."""
    service = make_service()
    (data_dir / "s").mkdir()
    sizes = [n * 100 for n in range(1, 41)] + [service.page_size, service.page_size + 10, 0]
    files = {data_dir / "s" / f"f{n:02}": os.urandom(size) for n, size in enumerate(sizes)}
    for path, data in files.items():
        path.write_bytes(data)
    progress = run(service, data_dir / "s").to_dict()
    counts = (progress["files_total"], progress["files_done"], progress["files_failed"])
    assert counts == (43, 43, 0)
    assert progress["bytes_done"] == progress["bytes_total"] == sum(sizes)
    loaded = service.reader.counters.snapshot()
    assert (loaded["bytes_from_ufs"], loaded["page_misses"]) == (sum(sizes), 41 + 2)
    for path, data in files.items():
        assert b"".join(service.read(service.request(f"file://{path}")).chunks) == data
    assert service.reader.counters.snapshot()["bytes_from_ufs"] == sum(sizes)


def held(service: WorkerService, ufs: HeldUfs, top: Path, directory: Path) -> LoadJob:
    """A job on ``top`` stuck in the listing of ``directory`` (under it), that listing's answer
    taken: the files listed before it are not read yet (a local job lists on one thread, and
    fills once the directories are listed)."""
    ufs.hold(f"file://{directory}")
    job = service.loads.submit(f"file://{top}", True, [], [])
    assert ufs.entered[f"file://{directory}"].wait(WAIT_S)
    return job


def test_a_file_changed_after_its_listing_is_loaded_at_its_new_version(
    make_service: Make, held_ufs: HeldUfs, data_dir: Path
) -> None:
    service = make_service()
    tree(data_dir)
    job = held(service, held_ufs, data_dir / "t", data_dir / "t" / "a")
    (data_dir / "t" / "f1.bin").write_bytes(b"rewritten, longer than before" * 100)
    held_ufs.release_all()
    done = service.loads.wait(job.id, timeout=WAIT_S)
    assert done is not None and done.to_dict()["files_done"] == 8
    assert cached(service, data_dir / "t" / "f1.bin") == 2900
    data = b"".join(service.read(service.request(f"file://{data_dir}/t/f1.bin")).chunks)
    assert data == b"rewritten, longer than before" * 100


def test_a_file_swapped_for_a_link_out_of_the_roots_is_not_loaded(
    make_service: Make, held_ufs: HeldUfs, data_dir: Path, tmp_path: Path
) -> None:
    service = make_service()
    tree(data_dir)
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 1500)  # as long as the file it stands in for
    job = held(service, held_ufs, data_dir / "t", data_dir / "t" / "a")
    (data_dir / "t" / "f0.bin").unlink()
    (data_dir / "t" / "f0.bin").symlink_to(secret)
    held_ufs.release_all()
    done = service.loads.wait(job.id, timeout=WAIT_S)
    assert done is not None
    progress = done.to_dict()
    assert (progress["files_done"], progress["files_failed"]) == (7, 1)
    assert "outside the mount roots" in progress["errors"][0]
    assert service.pages.page_count == 7
    packs = (tmp_path / "work").rglob("*.pack")
    assert all(b"s" * 100 not in pack.read_bytes() for pack in packs)


def test_files_a_path_rule_keeps_out_of_the_cache_are_read_but_not_cached(
    make_service: Make, data_dir: Path
) -> None:
    rule = f"dora.worker.path.conf=file://{data_dir}/t/a dora.user.file.readtype.default=NO_CACHE"
    service = make_service(rule)
    files = tree(data_dir)
    progress = run(service, data_dir / "t").to_dict()
    assert progress["files_done"] == 8
    assert [cached(service, path) for path in files] == [1500, 1500] + [0] * 4 + [1500, 1500]
