"""The near-cache against a real worker: kept answers are served while the worker's generation
counters are unchanged and the caller's sync interval allows, and never across a change made
through the worker."""

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.worker.conftest import open_service
from worker.client.nearcache import NearCache
from worker.common.generations import GenerationView
from worker.meta.generations import GenerationFile
from worker.service import WorkerService


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def view(service: WorkerService) -> Iterator[GenerationView]:
    assert service.generations is not None
    opened = GenerationView(service.generations.path)
    yield opened
    opened.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def near(view: GenerationView, clock: Clock) -> NearCache:
    return NearCache(view, default_sync_interval_ms=-1, max_entries=100, ttl_ms=5000, clock=clock)


@pytest.fixture
def uri(data_dir: Path) -> str:
    (data_dir / "d").mkdir()
    for name in ("a", "b"):
        (data_dir / "d" / name).write_bytes(b"x" * 10)
    return f"file://{data_dir}/d/a"


def fill_status(near: NearCache, service: WorkerService, path: str) -> dict[str, Any]:
    """What a client does on a near-cache miss: stamp, ask, keep."""
    key = near.key(path)
    assert key is not None
    stamp, asked_at = near.stamp(key), near.now()
    status = service.status(service.request(path))
    answer = service.describe(status)
    near.put_status(
        key, stamp, asked_at, answer, service.meta.reads.status_age(path, status.version)
    )
    return answer


def fill_listing(near: NearCache, service: WorkerService, path: str) -> list[dict[str, Any]]:
    key = near.key(path)
    assert key is not None
    stamp, asked_at = near.stamp(key), near.now()
    children = service.list(service.request(path))
    entries = [service.describe(s) for s in children]
    age = service.meta.reads.listing_age(path, children)
    near.put_listing(key, stamp, asked_at, [(e["uri"], e) for e in entries], age)
    return entries


def test_a_kept_status_is_served_until_a_write_through_the_worker(
    near: NearCache, service: WorkerService, uri: str
) -> None:
    answer = fill_status(near, service, uri)
    assert near.status(uri) is answer
    assert near.status(uri, sync_interval_ms=0) is None  # always re-check: ask the worker
    assert near.status(uri, version=answer["version"]) is answer
    assert near.status(uri, version="another") is None
    service.write(service.request(uri), b"changed")  # any process, through the worker
    assert near.status(uri) is None


def test_a_change_a_sync_finds_drops_the_entry(
    near: NearCache, service: WorkerService, uri: str, data_dir: Path
) -> None:
    fill_status(near, service, uri)
    (data_dir / "d" / "a").write_bytes(b"outside writer, longer")
    os.utime(data_dir / "d" / "a", ns=(1, 1))
    assert near.status(uri) is not None  # the worker has not looked yet
    service.status(service.request(uri, 0))
    assert near.status(uri) is None


def test_a_sync_that_finds_nothing_new_keeps_the_entry(
    near: NearCache, service: WorkerService, uri: str
) -> None:
    fill_status(near, service, uri)
    service.status(service.request(uri, 0))
    assert near.status(uri) is not None


def test_listings_and_their_children(
    near: NearCache, service: WorkerService, uri: str, data_dir: Path
) -> None:
    directory = f"file://{data_dir}/d"
    entries = fill_listing(near, service, directory)
    assert near.listing(directory) == entries
    assert near.status(uri) == entries[0]  # filled from the listing
    service.delete(service.request(f"file://{data_dir}/d/b"))
    assert near.listing(directory) is None
    assert near.status(uri) is None  # covered by the directory's counter


def test_an_invalidation_of_a_prefix_drops_everything(
    near: NearCache, service: WorkerService, uri: str, data_dir: Path
) -> None:
    fill_status(near, service, uri)
    service.invalidate(service.request(f"file://{data_dir}"), recursive=True)
    assert near.status(uri) is None


def test_time_to_live_and_bound(
    near: NearCache, service: WorkerService, uri: str, data_dir: Path, clock: Clock
) -> None:
    fill_status(near, service, uri)
    clock.now = 5.0
    assert near.status(uri) is not None
    clock.now = 5.001
    assert near.status(uri) is None
    small = NearCache(near._generations, -1, max_entries=1, clock=clock)
    for name in ("a", "b"):
        fill_status(small, service, f"file://{data_dir}/d/{name}")
    assert small.status(uri) is None and small.status(f"file://{data_dir}/d/b") is not None


def test_a_positive_interval_counts_the_workers_age_and_the_time_kept(
    view: GenerationView, service: WorkerService, uri: str, clock: Clock
) -> None:
    near = NearCache(view, default_sync_interval_ms=30_000, clock=clock)
    key = near.key(uri)
    assert key is not None
    near.put_status(key, near.stamp(key), clock.now, {"uri": key}, age_ms=20_000)
    clock.now = 10.0
    assert near.status(uri) is not None  # 20 s old at the worker, 10 s kept: within 30 s
    assert near.status(uri, sync_interval_ms=29_999) is None
    assert near.status(uri, sync_interval_ms=0) is None
    clock.now = 10.001
    assert near.status(uri) is None
    unknown = f"{key}-unknown"
    near.put_status(unknown, near.stamp(unknown), clock.now, {"uri": unknown}, age_ms=None)
    assert near.status(unknown) is None and near.status(unknown, sync_interval_ms=-1) is not None


def test_nothing_is_trusted_once_the_worker_is_gone(
    tmp_path: Path, data_dir: Path, uri: str
) -> None:
    first = open_service(tmp_path / "w", f"file://{data_dir}")
    assert first.generations is not None
    view = GenerationView(first.generations.path)
    near = NearCache(view, -1)
    fill_status(near, first, uri)
    first.close()
    assert near.status(uri) is None  # no worker counts changes now
    second = open_service(tmp_path / "w", f"file://{data_dir}")
    try:
        assert near.status(uri) is None  # a new worker: counts moved on
        fill_status(near, second, uri)
        assert near.status(uri) is not None  # the same mapping still works
    finally:
        second.close()
        view.close()


def test_a_file_of_another_layout_is_refused_and_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "generations"
    path.write_bytes(b"not a generation file")
    with pytest.raises(ValueError, match="not a generation file"):
        GenerationView(path)
    counters = GenerationFile(path, buckets=8)
    view = GenerationView(path)
    before = view.stamp("s3://b/k")
    counters.bump("s3://b/k")
    assert view.stamp("s3://b/k") != before
    counters.close()
    assert view.stamp("s3://b/k") is None
    view.close()


def test_a_path_the_worker_refuses_is_not_kept(near: NearCache) -> None:
    assert near.key("s3://bucket/../etc") is None
