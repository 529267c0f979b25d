"""The worker service over a local directory: the invalidation chain, restart, faults."""

import logging
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from config import ConfigError
from tests.worker.chain import TTL_DEFINES, InvalidationChain, read_all
from tests.worker.conftest import open_service, page_files
from tests.worker.meta.support import wait_until
from ufs.errors import UfsOutsideRoots
from ufs.status import UfsStatus
from worker.meta.entry import Operation
from worker.service import WorkerService

PAGE = 64 * 1024


class LocalOutside:
    def write(self, uri: str, data: bytes) -> None:
        path = Path(uri.removeprefix("file://"))
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(path.name + ".tmp")
        temp.write_bytes(data)
        temp.replace(path)  # a new inode and mtime, as real writers do

    def delete(self, uri: str) -> None:
        Path(uri.removeprefix("file://")).unlink()


class TestLocalChain(InvalidationChain):
    @pytest.fixture
    def work(self, tmp_path: Path) -> Path:
        return tmp_path / "work"

    @pytest.fixture
    def root(self, data_dir: Path) -> str:
        return f"file://{data_dir}"

    @pytest.fixture
    def service(self, make_service: Callable[..., WorkerService]) -> WorkerService:
        return make_service(*TTL_DEFINES)

    @pytest.fixture
    def outside(self) -> LocalOutside:
        return LocalOutside()


def test_restart_keeps_metadata_and_pages(tmp_path: Path, data_dir: Path) -> None:
    content = os.urandom(5 * PAGE)
    (data_dir / "keep.bin").write_bytes(content)
    uri = f"file://{data_dir}/keep.bin"
    first = open_service(
        tmp_path / "work", f"file://{data_dir}", "dora.worker.page.store.page.size=64KB"
    )
    assert read_all(first, uri) == content
    first.close()
    second = open_service(
        tmp_path / "work", f"file://{data_dir}", "dora.worker.page.store.page.size=64KB"
    )
    try:
        assert read_all(second, uri, sync_interval=-1) == content
        stats = second.stats()
        assert stats["bytes_from_cache"] == len(content)
        assert stats["bytes_from_ufs"] == 0
        assert second.meta.counters()["metastore_hits"] >= 1
    finally:
        second.close()


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs for the page store (tests run as root, as CI does)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def test_full_disk_still_serves_reads_from_the_ufs(
    make_service: Callable[..., WorkerService], data_dir: Path, tiny_disk: Path
) -> None:
    service = make_service(
        "dora.worker.page.store.page.size=64KB",
        f"dora.worker.page.store.dirs={tiny_disk}",
        "dora.worker.page.store.sizes=100MB",  # more than the disk holds: puts meet ENOSPC
    )
    content = os.urandom(40 * PAGE)  # 2.5 MiB: cannot fit in 1 MiB
    (data_dir / "big.bin").write_bytes(content)
    uri = f"file://{data_dir}/big.bin"
    assert read_all(service, uri) == content
    assert read_all(service, uri) == content
    failures = service.pages.stats().put_failures
    assert sum(failures.values()) > 0
    assert "dora_page_put_failures_total" in service.metrics.render().decode()


def test_pages_of_other_versions_are_never_served(
    make_service: Callable[..., WorkerService], tmp_path: Path, data_dir: Path
) -> None:
    service = make_service("dora.worker.page.store.page.size=64KB")
    uri = f"file://{data_dir}/v.bin"
    LocalOutside().write(uri, b"1" * PAGE)
    assert read_all(service, uri) == b"1" * PAGE
    LocalOutside().write(uri, b"2" * PAGE)
    assert read_all(service, uri, sync_interval=0) == b"2" * PAGE
    # The old version's page file goes in the store's janitor thread, not before the read ends
    # (a loaded machine made this check race it).
    wait_until(lambda: len(page_files(tmp_path / "work", uri)) == 1)


def test_a_bad_mount_root_is_refused_before_anything_opens(tmp_path: Path, data_dir: Path) -> None:
    threads = set(threading.enumerate())
    with pytest.raises(ConfigError, match=r"'dora\.worker\.ufs\.roots'.*'data'"):
        open_service(tmp_path / "work", "data")
    assert set(threading.enumerate()) == threads
    assert not (tmp_path / "work").exists()
    open_service(tmp_path / "work", f"file://{data_dir}").close()  # no lock was left held


def test_a_starting_service_logs_where_its_configuration_came_from(
    tmp_path: Path, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="worker.assembly"):
        service = open_service(tmp_path / "work", f"file://{data_dir}")
    service.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "worker.assembly"]
    assert lines == [f"configuration: {service.config.sources()}"]
    assert "-D dora.work.dir, dora.worker.ufs.roots" in lines[0]


def test_readiness_reports_a_metastore_that_stopped_persisting(
    make_service: Callable[..., WorkerService], data_dir: Path, tiny_disk: Path
) -> None:
    service = make_service(
        f"dora.worker.metastore.rocksdb.dir={tiny_disk / 'metastore'}",
        "dora.worker.metastore.flush.interval=5ms",
    )
    assert service.readiness()["metastore"] == "persisting"
    with (tiny_disk / "filler").open("ab", buffering=0) as out:
        for size in (65536, 4096, 1):  # take every free byte, big writes first
            try:
                while True:
                    out.write(b"\0" * size)
            except OSError:
                continue
    for n in range(200):  # statuses to persist: their commits fail on the full disk
        (data_dir / f"s{n}.bin").write_bytes(b"x")
        service.status(service.request(f"file://{data_dir}/s{n}.bin"))
    wait_until(lambda: service.readiness()["metastore"] == "memory-only")
    assert service.readiness() == {"ready": True, "metastore": "memory-only", "pages": "ready"}


def test_status_cached_answers_a_memory_hit_and_leaves_the_rest_to_status(
    tmp_path: Path, data_dir: Path
) -> None:
    # No object store runs: the answers below come from memory or not at all.
    service = open_service(
        tmp_path / "work", f"s3://bucket/data,file://{data_dir}",
        "dora.ufs.s3.endpoint=http://127.0.0.1:9",
    )  # fmt: skip
    try:
        status = UfsStatus("s3://bucket/data/a", "a", False, 3, 1, '"etag"', '"etag"')
        assert service.status_cached(service.request(status.uri)) is None
        service.meta.writes.record_write(status.uri, status, Operation.CREATED)
        assert service.status_cached(service.request("s3://bucket/data/a/")) == status
        assert service.status_cached(service.request(status.uri, 0)) is None
        with pytest.raises(UfsOutsideRoots):
            service.status_cached(service.request("s3://bucket/other"))
        (data_dir / "b").write_bytes(b"b")
        service.status(service.request(f"file://{data_dir}/b"))
        assert (
            service.status_cached(service.request(f"file://{data_dir}/b")) is None
        )  # resolved on disk
    finally:
        service.close()


def test_a_damaged_page_dir_marker_does_not_keep_the_worker_from_starting(
    tmp_path: Path, data_dir: Path
) -> None:
    """Issue 22 item 7: the worker served on with the directory out of service, and deleted
    nothing in it."""
    content = os.urandom(2 * PAGE)
    (data_dir / "f").write_bytes(content)
    uri, work = f"file://{data_dir}/f", tmp_path / "work"
    service = open_service(work, f"file://{data_dir}", f"dora.worker.page.store.page.size={PAGE}")
    assert read_all(service, uri) == content
    service.close()
    marker = next((work / "pages").rglob("DORACACHE"))
    marker.write_bytes(marker.read_bytes().replace(b"doracache", b"doracachf"))
    cached = page_files(work, uri)
    service = open_service(work, f"file://{data_dir}", f"dora.worker.page.store.page.size={PAGE}")
    try:
        assert read_all(service, uri) == content  # from the UFS
        assert service.stats()["bytes_from_cache"] == 0
        assert "dora_page_store_dirs_in_service 0.0" in service.metrics.render().decode()
    finally:
        service.close()
    assert page_files(work, uri) == cached and len(cached) == 2
