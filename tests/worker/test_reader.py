"""The read path: right bytes whatever the page store does, and every read that went to the UFS
because the page store failed counted in ``dora_cache_failures`` (real faults: a corrupt page
file, a read-only or vanished page directory on a real tmpfs)."""

import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.worker.chain import read_all
from ufs.status import file_id
from worker.reader import READ_AHEAD_PAGES
from worker.service import WorkerService

PAGE = 64 * 1024
PAGES = 5


def cache_failures(service: WorkerService) -> float:
    value = service.metrics.registry.get_sample_value("dora_cache_failures_total")
    assert value is not None
    return value


@pytest.fixture
def page_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of its own for the page store (tests run as root, as CI does)."""
    mount = tmp_path / "pages-disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.fixture
def worker(make_service: Callable[..., WorkerService], page_disk: Path) -> WorkerService:
    return make_service(
        "dora.worker.page.store.page.size=64KB", f"dora.worker.page.store.dirs={page_disk}"
    )


@pytest.fixture
def data(data_dir: Path) -> tuple[str, bytes]:
    content = os.urandom(PAGES * PAGE - 100)
    (data_dir / "f.bin").write_bytes(content)
    return f"file://{data_dir}/f.bin", content


def test_a_healthy_store_counts_no_failures(worker: WorkerService, data: tuple[str, bytes]) -> None:
    uri, content = data
    assert read_all(worker, uri) == content  # cold
    assert read_all(worker, uri) == content  # warm
    assert cache_failures(worker) == 0


def test_a_corrupt_page_is_read_from_the_ufs_and_counted(
    worker: WorkerService, data: tuple[str, bytes], page_disk: Path
) -> None:
    uri, content = data
    read_all(worker, uri)
    (victim,) = page_disk.rglob(f"{file_id(uri)}.*.2")
    corrupt = bytearray(victim.read_bytes())
    corrupt[-1] ^= 0xFF
    victim.write_bytes(bytes(corrupt))
    assert read_all(worker, uri) == content
    assert cache_failures(worker) == 1
    assert read_all(worker, uri) == content  # stored again
    assert cache_failures(worker) == 1


def test_a_read_only_page_dir_sends_every_page_to_the_ufs_and_each_is_counted(
    worker: WorkerService, data: tuple[str, bytes], page_disk: Path
) -> None:
    uri, content = data
    # Not a remount of the page disk: the worker's generation counters are open for writing
    # on it, so the kernel refuses (EBUSY). A read-only file system over the pages' folder.
    (pages,) = [p for p in page_disk.iterdir() if p.is_dir()]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(pages)], check=True)
    try:
        assert read_all(worker, uri) == content
        assert cache_failures(worker) == PAGES
        assert b"".join(worker.read(worker.request(uri), 0, PAGE).chunks) == content[:PAGE]
        assert cache_failures(worker) == PAGES + 1
    finally:
        subprocess.run(["umount", "-l", str(pages)], check=True)


def test_a_vanished_page_dir_is_counted_on_every_page_it_cannot_serve(
    worker: WorkerService, data: tuple[str, bytes], page_disk: Path
) -> None:
    uri, content = data
    read_all(worker, uri)
    for child in page_disk.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    assert read_all(worker, uri) == content
    assert cache_failures(worker) == PAGES


def test_a_read_one_batch_covers_is_filled_on_the_callers_thread(
    service: WorkerService, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, large = os.urandom(2 * PAGE), os.urandom(3 * READ_AHEAD_PAGES * PAGE)
    (data_dir / "small.bin").write_bytes(small)
    (data_dir / "large.bin").write_bytes(large)
    filled_on: list[str] = []
    fill_run = service.pages.fill_run

    def spy(*args: Any, **kwargs: Any) -> Any:
        filled_on.append(threading.current_thread().name)
        return fill_run(*args, **kwargs)

    monkeypatch.setattr(service.pages, "fill_run", spy)
    assert read_all(service, f"file://{data_dir}/small.bin") == small
    assert filled_on == [threading.current_thread().name]
    filled_on.clear()
    # Batches that later ones overlap go to the read-ahead pool.
    assert read_all(service, f"file://{data_dir}/large.bin") == large
    assert len(filled_on) > 1
    assert all(name.startswith("read-ahead") for name in filled_on)


def _admissions(service: WorkerService) -> dict[str, float]:
    registry = service.metrics.registry
    names = ("admitted", "passed_through", "deferred")
    return {
        n: registry.get_sample_value("dora_admission_reads_total", {"decision": n}) or 0
        for n in names
    }


def _cached(service: WorkerService, uri: str) -> int:
    cached: int = service.describe(service.status(service.request(uri)))["cached_bytes"]
    return cached


def test_admission_is_decided_once_per_read_by_the_paths_rule(
    make_service: Callable[..., WorkerService], data_dir: Path, tmp_path: Path
) -> None:
    rules = tmp_path / "rules"
    rules.write_text(
        f"file://{data_dir}/pass/** admission=pass\n"
        f"file://{data_dir}/scan/** admission=second-read\n"
    )
    for name in ("pass", "scan"):
        (data_dir / name).mkdir()
        (data_dir / name / "f").write_bytes(os.urandom(3 * PAGE))
    service = make_service(
        "dora.worker.page.store.page.size=64KB", f"dora.worker.path.rules.file={rules}"
    )
    passed, scanned = f"file://{data_dir}/pass/f", f"file://{data_dir}/scan/f"
    assert read_all(service, passed) == (data_dir / "pass" / "f").read_bytes()
    assert _cached(service, passed) == 0
    call = service.request(scanned)
    first = b"".join(service.read(call, 0, PAGE + 1).chunks)
    assert first == (data_dir / "scan" / "f").read_bytes()[: PAGE + 1]
    assert _cached(service, scanned) == 0
    assert b"".join(service.read(call, 0, PAGE + 1).chunks) == first
    assert _cached(service, scanned) == PAGE + PAGE  # the two pages read twice
    assert _admissions(service) == {"admitted": 1, "passed_through": 1, "deferred": 1}
    assert service.stats()["passthrough_reads"] == 2


def test_a_load_batch_stores_only_what_its_rules_cache_at_once(
    make_service: Callable[..., WorkerService], data_dir: Path, tmp_path: Path
) -> None:
    rules = tmp_path / "rules"
    rules.write_text(f"file://{data_dir}/scan/** admission=second-read\n")
    (data_dir / "scan").mkdir()
    for name in ("a", "b.tmp", "scan/c"):
        (data_dir / name).write_bytes(name.encode())
    service = make_service(
        "dora.worker.cache.exclude=*.tmp", f"dora.worker.path.rules.file={rules}"
    )
    statuses = [
        service.status(service.request(f"file://{data_dir}/{n}")) for n in ("a", "b.tmp", "scan/c")
    ]
    left = service.cache_whole(statuses)
    assert sorted(status.name for status in left) == ["b.tmp", "c"]  # read the ordinary way
    assert [service.describe(status)["cached_bytes"] for status in statuses] == [1, 0, 0]
    assert _admissions(service)["admitted"] == 1
