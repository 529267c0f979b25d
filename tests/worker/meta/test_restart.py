"""Statuses persisted in RocksDB survive a restart and keep their true age (wall-clock
``loaded_at``): sync intervals and TTLs still apply after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.worker.meta.support import (
    MINUTE,
    SECOND,
    CountingUfs,
    FakeClock,
    Outside,
    cache_options,
    rocks_store,
)
from ufs.errors import UfsNotFound
from worker.meta.entry import Operation
from worker.meta.manager import MetadataManager

FILES = [f"d/f{i:02d}" for i in range(20)]


@pytest.fixture
def start(
    tmp_path: Path, clock: FakeClock, ufs: CountingUfs
) -> Iterator[Callable[[], MetadataManager]]:
    """Starts a worker's manager over the same metastore directory each time."""
    running: list[MetadataManager] = []

    def started() -> MetadataManager:
        running.append(
            MetadataManager(cache_options(), rocks_store(tmp_path / "ms", clock), ufs, clock)
        )
        return running[-1]

    yield started
    for manager in running:
        manager.close()


def fill(manager: MetadataManager, outside: Outside) -> dict[str, str]:
    for name in FILES:
        outside.write(name, name.encode())
    versions = {name: manager.reads.get_status(outside.uri(name)).version for name in FILES}
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("missing"))
    manager.close()
    return versions


def test_lookups_after_a_restart_hit_the_metastore(
    start: Callable[[], MetadataManager], outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    versions = fill(start(), outside)
    clock.advance(10 * MINUTE)
    manager = start()
    calls = ufs.calls
    assert {n: manager.reads.get_status(outside.uri(n)).version for n in FILES} == versions
    assert ufs.calls == calls
    assert manager.counters()["metastore_hits"] == len(FILES)


def test_sync_intervals_count_the_age_from_before_the_restart(
    start: Callable[[], MetadataManager], outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    fill(start(), outside)
    clock.advance(10 * MINUTE)
    manager = start()
    calls = ufs.calls
    manager.reads.get_status(outside.uri(FILES[0]), sync_interval=20 * MINUTE)
    assert ufs.calls == calls
    manager.reads.get_status(outside.uri(FILES[1]), sync_interval=5 * MINUTE)
    assert ufs.calls == calls + 1


def test_the_metastore_ttl_counts_from_before_the_restart(
    start: Callable[[], MetadataManager], outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    fill(start(), outside)
    clock.advance(24 * 60 * MINUTE)
    manager = start()
    calls = ufs.calls
    manager.reads.get_status(outside.uri(FILES[0]))
    assert ufs.calls == calls + 1
    assert manager.counters()["misses"] == 1


def test_negative_entries_survive_a_restart_for_their_short_ttl(
    start: Callable[[], MetadataManager], outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    fill(start(), outside)
    outside.write("missing", b"now here")
    clock.advance(5 * SECOND)
    manager = start()
    calls = ufs.calls
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("missing"))
    assert ufs.calls == calls
    clock.advance(5 * SECOND)
    assert manager.reads.get_status(outside.uri("missing")).size == 8


def test_writes_and_deletes_persist_with_their_operation(
    tmp_path: Path,
    start: Callable[[], MetadataManager],
    outside: Outside,
    clock: FakeClock,
    ufs: CountingUfs,
) -> None:
    manager = start()
    outside.write("new", b"fresh")
    created = ufs.status(outside.uri("new"))
    manager.writes.record_write(outside.uri("new"), created, Operation.CREATED)
    manager.writes.record_write(outside.uri("gone"), None, Operation.DELETED)
    manager.close()
    store = rocks_store(tmp_path / "ms", clock)
    new, gone = store.get(outside.uri("new")), store.get(outside.uri("gone"))
    store.close()
    assert new is not None and (new.status, new.op) == (created, Operation.CREATED)
    assert gone is not None and (gone.status, gone.op) == (None, Operation.DELETED)


def test_listings_are_not_persisted(
    start: Callable[[], MetadataManager], outside: Outside, ufs: CountingUfs
) -> None:
    manager = start()
    outside.write("d/a", b"one")
    manager.reads.list_status(outside.uri("d"))
    manager.close()
    manager = start()
    calls = len(ufs.list_calls)
    manager.reads.list_status(outside.uri("d"))
    assert len(ufs.list_calls) == calls + 1
