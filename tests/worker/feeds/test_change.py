"""Applying change-feed events to a worker's cache (worker.feeds.change.CacheSink): only what
an event names, only if the version differs, never outside the mount roots; a gap re-checks."""

from collections.abc import Callable
from pathlib import Path

import pytest

from worker.feeds.change import Change
from worker.service import WorkerService


@pytest.fixture
def service(make_service: Callable[..., WorkerService]) -> WorkerService:
    return make_service("dora.user.file.metadata.sync.interval=-1")


def read(service: WorkerService, uri: str) -> bytes:
    return b"".join(service.read(service.request(uri, -1)).chunks)


def test_an_event_naming_the_cached_version_costs_nothing(
    service: WorkerService, data_dir: Path
) -> None:
    (data_dir / "a").write_bytes(b"one")
    uri = f"file://{data_dir}/a"
    version = service.status(service.request(uri)).version
    calls = service.stats()["metadata_ufs_calls"]
    service.changes.apply([Change(uri, version), Change(uri, version)])
    assert read(service, uri) == b"one"
    assert service.stats()["metadata_ufs_calls"] == calls
    assert service.changes.counters.snapshot()["unchanged"] == 2


def test_an_event_naming_another_version_drops_the_entry(
    service: WorkerService, data_dir: Path
) -> None:
    (data_dir / "a").write_bytes(b"one")
    uri = f"file://{data_dir}/a"
    assert read(service, uri) == b"one"
    (data_dir / "a").write_bytes(b"two, longer")
    assert read(service, uri) == b"one"  # -1: the cache does not look
    service.changes.apply([Change(uri, "a later version")])
    assert read(service, uri) == b"two, longer"
    # A late duplicate of an older event only costs a re-check that finds the same version.
    service.changes.apply([Change(uri, "an older version")])
    assert read(service, uri) == b"two, longer"


def test_a_deleted_prefix_drops_everything_under_it(service: WorkerService, data_dir: Path) -> None:
    (data_dir / "d").mkdir()
    (data_dir / "d" / "x").write_bytes(b"x")
    uri = f"file://{data_dir}/d/x"
    assert read(service, uri) == b"x"
    (data_dir / "d" / "x").write_bytes(b"y")
    service.changes.apply([Change(f"file://{data_dir}/d", deleted=True, prefix=True)])
    assert read(service, uri) == b"y"


def test_events_outside_the_mount_roots_are_ignored(service: WorkerService) -> None:
    service.changes.apply([Change("file:///etc/passwd"), Change("s3://other/key")])
    assert service.changes.counters.snapshot()["outside_roots"] == 2


def test_a_gap_rechecks_everything_cached_before_it(service: WorkerService, data_dir: Path) -> None:
    (data_dir / "a").write_bytes(b"one")
    uri = f"file://{data_dir}/a"
    assert read(service, uri) == b"one"
    (data_dir / "a").write_bytes(b"two, longer")
    service.changes.gap("test", "a lost subscription")
    assert read(service, uri) == b"two, longer"
