"""Concurrent misses share one UFS call; a write landing during a load is never undone."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.worker.meta.support import (
    WAIT_S,
    CountingUfs,
    FakeClock,
    Outside,
    cache_options,
    listen,
    rocks_options,
    run,
    wait_until,
)
from ufs.adapter import Ufs
from ufs.errors import UfsNotFound
from worker.meta.entry import MetaEntry, Operation
from worker.meta.manager import MetadataManager
from worker.meta.rocks import RocksMetastore


@pytest.mark.parametrize("store_kind", ["rocks"], indirect=True)
def test_concurrent_misses_make_one_ufs_call(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("a", b"one")
    ufs.gate = threading.Event()
    uri = outside.uri("a")
    leader = run(lambda: manager.reads.get_status(uri, sync_interval=0))
    ufs.answered.wait()
    followers = [run(lambda: manager.reads.get_status(uri, sync_interval=0)) for _ in range(7)]
    wait_until(lambda: manager.counters()["flights_merged"] == 7)
    ufs.gate.set()
    for thread, _ in [leader, *followers]:
        thread.join()
    results = [outcome[0] for _, outcome in [leader, *followers]]
    assert len(ufs.status_calls) == 1
    assert all(r == results[0] for r in results)


def hold_a_sync(manager: MetadataManager, ufs: CountingUfs, uri: str) -> threading.Thread:
    """Start a sync of ``uri`` whose UFS answer is taken now but stored only on release."""
    ufs.gate = threading.Event()
    ufs.answered.clear()
    thread, _ = run(lambda: manager.reads.get_status(uri, sync_interval=0))
    ufs.answered.wait()
    return thread


def release(ufs: CountingUfs, thread: threading.Thread) -> None:
    assert ufs.gate is not None
    ufs.gate.set()
    thread.join()
    ufs.gate = None


@pytest.mark.parametrize("store_kind", ["rocks"], indirect=True)
def test_a_write_during_a_load_is_not_undone_by_its_older_answer(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("a", b"one")
    uri = outside.uri("a")
    manager.reads.get_status(uri)
    slow = hold_a_sync(manager, ufs, uri)
    outside.write("a", b"written")
    written = Ufs().status(uri)
    manager.writes.record_write(uri, written, Operation.UPDATED)
    release(ufs, slow)
    calls = ufs.calls
    assert manager.reads.get_status(uri) == written
    assert ufs.calls == calls


@pytest.mark.parametrize("store_kind", ["rocks"], indirect=True)
def test_a_delete_during_a_load_is_not_undone_by_its_older_answer(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("a", b"one")
    uri = outside.uri("a")
    manager.reads.get_status(uri)
    slow = hold_a_sync(manager, ufs, uri)
    outside.delete("a")
    manager.writes.record_write(uri, None, Operation.DELETED)
    release(ufs, slow)
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(uri)


@pytest.mark.parametrize("store_kind", ["rocks"], indirect=True)
def test_an_invalidation_during_a_load_is_not_undone(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("d/a", b"one")
    uri = outside.uri("d/a")
    old = manager.reads.get_status(uri)
    slow = hold_a_sync(manager, ufs, uri)
    outside.write("d/a", b"changed")
    manager.writes.invalidate(outside.uri("d"), recursive=True)
    release(ufs, slow)
    assert manager.reads.get_status(uri).version != old.version


class SlowStore(RocksMetastore):
    """The real metastore; the next read of URI ``held`` (alone or among others) takes its
    answer, then waits for the test's go-ahead before returning it."""

    held: str | None = None
    entered: threading.Event
    go: threading.Event

    def hold(self, uri: str) -> None:
        self.held, self.entered, self.go = uri, threading.Event(), threading.Event()

    def peek(self, uri: str) -> MetaEntry | None:
        answer = super().peek(uri)
        self._pause([uri])
        return answer

    def peek_many(self, uris: list[str]) -> list[MetaEntry | None]:
        answer = super().peek_many(uris)
        self._pause(uris)
        return answer

    def _pause(self, uris: list[str]) -> None:
        if self.held in uris:
            self.held = None
            self.entered.set()
            self.go.wait()


@pytest.fixture
def slow_store(tmp_path: Path, clock: FakeClock) -> Iterator[SlowStore]:
    store = SlowStore.open(rocks_options(tmp_path / "slow"), clock)
    yield store
    store.close()


def in_metastore_only(manager: MetadataManager, outside: Outside, *names: str) -> None:
    """Cache ``names``, then push them out of memory (the status cache holds two entries)."""
    for name in (*names, "fill-1", "fill-2"):
        if not (outside.root / name).exists():
            outside.write(name, b"one")
        manager.reads.get_status(outside.uri(name))


def test_a_slow_metastore_read_does_not_hold_up_other_lookups(
    slow_store: SlowStore, clock: FakeClock, outside: Outside, ufs: CountingUfs
) -> None:
    manager = MetadataManager(cache_options(status_cache_size=2), slow_store, ufs, clock)
    in_metastore_only(manager, outside, "a", "x")
    slow_store.hold(outside.uri("a"))
    outside.write("a", b"written")
    written = Ufs().status(outside.uri("a"))
    writer, _ = run(
        lambda: manager.writes.record_write(outside.uri("a"), written, Operation.UPDATED)
    )
    try:
        assert slow_store.entered.wait(WAIT_S)
        # A sync of another file, and a lookup that reads the metastore, while "a" is read.
        other, outcome = run(
            lambda: (
                manager.reads.get_status(outside.uri("fill-2"), sync_interval=0),
                manager.reads.get_status(outside.uri("x")),
            )
        )
        other.join(WAIT_S)
        assert not other.is_alive(), "lookups waited for another URI's metastore read"
        assert not isinstance(outcome[0], Exception)
        assert writer.is_alive()
    finally:
        slow_store.go.set()
        writer.join()
    assert manager.reads.get_status(outside.uri("a")) == written


def test_an_invalidation_during_a_metastore_read_is_not_undone_by_it(
    slow_store: SlowStore, clock: FakeClock, outside: Outside, ufs: CountingUfs
) -> None:
    manager = MetadataManager(cache_options(status_cache_size=2), slow_store, ufs, clock)
    in_metastore_only(manager, outside, "d/a")
    slow_store.hold(outside.uri("d/a"))
    reader, _ = run(lambda: manager.reads.get_status(outside.uri("d/a")))
    assert slow_store.entered.wait(WAIT_S)  # it has read the old status
    outside.write("d/a", b"changed")
    manager.writes.invalidate(outside.uri("d"), recursive=True)
    slow_store.go.set()
    reader.join()
    assert manager.reads.get_status(outside.uri("d/a")) == Ufs().status(outside.uri("d/a"))


def test_a_write_that_overtakes_another_is_what_the_other_replaces(
    slow_store: SlowStore, clock: FakeClock, outside: Outside, ufs: CountingUfs
) -> None:
    manager = MetadataManager(cache_options(status_cache_size=2), slow_store, ufs, clock)
    outside.write("a", b"first")
    first = Ufs().status(outside.uri("a"))
    in_metastore_only(manager, outside, "a")
    heard = listen(manager)
    outside.write("a", b"second")
    second = Ufs().status(outside.uri("a"))
    outside.write("a", b"third")
    third = Ufs().status(outside.uri("a"))
    slow_store.hold(outside.uri("a"))
    slow, _ = run(lambda: manager.writes.record_write(outside.uri("a"), third, Operation.UPDATED))
    assert slow_store.entered.wait(WAIT_S)  # it has read "first" as the version it replaces
    manager.writes.record_write(outside.uri("a"), second, Operation.UPDATED)
    slow_store.go.set()
    slow.join()
    assert manager.reads.get_status(outside.uri("a")) == third
    # Each version's pages go exactly once: "second" was replaced too, not "first" twice.
    assert heard == [(outside.uri("a"), first.version), (outside.uri("a"), second.version)]
