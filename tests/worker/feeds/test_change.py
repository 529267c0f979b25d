"""Applying change-feed events to a worker's cache (worker.feeds.change.CacheSink): only what
an event names, only if the version differs, never outside the mount roots; a gap re-checks."""

import time
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
    service.changes.apply("test", [Change(uri, version), Change(uri, version)])
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
    service.changes.apply("test", [Change(uri, "a later version")])
    assert read(service, uri) == b"two, longer"
    # A late duplicate of an older event only costs a re-check that finds the same version.
    service.changes.apply("test", [Change(uri, "an older version")])
    assert read(service, uri) == b"two, longer"


def test_a_deleted_prefix_drops_everything_under_it(service: WorkerService, data_dir: Path) -> None:
    (data_dir / "d").mkdir()
    (data_dir / "d" / "x").write_bytes(b"x")
    uri = f"file://{data_dir}/d/x"
    assert read(service, uri) == b"x"
    (data_dir / "d" / "x").write_bytes(b"y")
    service.changes.apply("test", [Change(f"file://{data_dir}/d", deleted=True, prefix=True)])
    assert read(service, uri) == b"y"


def test_events_outside_the_mount_roots_are_ignored(service: WorkerService) -> None:
    service.changes.apply("test", [Change("file:///etc/passwd"), Change("s3://other/key")])
    assert service.changes.counters.snapshot()["outside_roots"] == 2


def test_a_gap_rechecks_everything_cached_before_it(service: WorkerService, data_dir: Path) -> None:
    (data_dir / "a").write_bytes(b"one")
    uri = f"file://{data_dir}/a"
    assert read(service, uri) == b"one"
    (data_dir / "a").write_bytes(b"two, longer")
    service.changes.gap("test", "a lost subscription")
    assert read(service, uri) == b"two, longer"


def test_each_source_s_lag_is_measured_from_the_event_s_own_time(
    service: WorkerService, data_dir: Path
) -> None:
    uri = f"file://{data_dir}/a"
    now_ms = int(time.time() * 1000)
    service.changes.apply("sqs://q", [Change(uri, "v1", at_ms=now_ms - 2_000)])
    service.changes.apply("sqs://q", [Change(uri, "v2", at_ms=now_ms - 4_000)])
    service.changes.apply("webhook", [Change(uri, "v3")])  # no time of its own: not measured
    lag = service.changes.lag.describe()
    assert list(lag) == ["sqs://q"]
    assert lag["sqs://q"]["events"] == 2
    assert 4_000 <= lag["sqs://q"]["last_ms"] < 60_000
    assert 2_000 <= lag["sqs://q"]["p50_ms"] <= lag["sqs://q"]["p99_ms"] <= 5_000
    scrape = service.metrics.render().decode()
    assert 'dora_ufs_change_lag_seconds_count{source="sqs://q"} 2.0' in scrape
    assert 'dora_ufs_change_last_lag_seconds{source="sqs://q"}' in scrape


def test_a_store_clock_ahead_of_the_worker_s_counts_as_no_lag(service: WorkerService) -> None:
    service.changes.lag.applied("s", [int(time.time() * 1000) + 60_000])
    assert service.changes.lag.describe()["s"]["last_ms"] == 0
