"""Concurrent misses share one UFS call; a write landing during a load is never undone."""

from __future__ import annotations

import threading

import pytest

from tests.worker.meta.support import CountingUfs, Outside, run, wait_until
from ufs.adapter import Ufs
from ufs.errors import UfsNotFound
from worker.meta.entry import Operation
from worker.meta.manager import MetadataManager


@pytest.mark.parametrize("store_kind", ["rocks"], indirect=True)
def test_concurrent_misses_make_one_ufs_call(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("a", b"one")
    ufs.gate = threading.Event()
    uri = outside.uri("a")
    leader = run(lambda: manager.get_status(uri, sync_interval=0))
    ufs.answered.wait()
    followers = [run(lambda: manager.get_status(uri, sync_interval=0)) for _ in range(7)]
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
    thread, _ = run(lambda: manager.get_status(uri, sync_interval=0))
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
    manager.get_status(uri)
    slow = hold_a_sync(manager, ufs, uri)
    outside.write("a", b"written")
    written = Ufs().status(uri)
    manager.record_write(uri, written, Operation.UPDATED)
    release(ufs, slow)
    calls = ufs.calls
    assert manager.get_status(uri) == written
    assert ufs.calls == calls


@pytest.mark.parametrize("store_kind", ["rocks"], indirect=True)
def test_a_delete_during_a_load_is_not_undone_by_its_older_answer(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("a", b"one")
    uri = outside.uri("a")
    manager.get_status(uri)
    slow = hold_a_sync(manager, ufs, uri)
    outside.delete("a")
    manager.record_write(uri, None, Operation.DELETED)
    release(ufs, slow)
    with pytest.raises(UfsNotFound):
        manager.get_status(uri)


@pytest.mark.parametrize("store_kind", ["rocks"], indirect=True)
def test_an_invalidation_during_a_load_is_not_undone(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("d/a", b"one")
    uri = outside.uri("d/a")
    old = manager.get_status(uri)
    slow = hold_a_sync(manager, ufs, uri)
    outside.write("d/a", b"changed")
    manager.invalidate(outside.uri("d"), recursive=True)
    release(ufs, slow)
    assert manager.get_status(uri).version != old.version
