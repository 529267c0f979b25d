"""Serve while revalidating (issue 26 item 5): an expired status answered at once while one
background re-check runs, never past the status cache TTL, never for a caller that did not
opt in (fake clock, a local UFS changed from outside)."""

from __future__ import annotations

import threading

import pytest

from tests.worker.meta.support import HOUR, CountingUfs, FakeClock, Outside, listen, wait_until
from ufs.deadline import Deadline
from ufs.errors import StorageUnavailable
from ufs.status import UfsStatus
from worker.meta.manager import MetadataManager


def _changed(manager: MetadataManager, outside: Outside) -> tuple[str, UfsStatus]:
    """``a`` cached at its first version, then rewritten outside; its URI and old status."""
    outside.write("a", b"one")
    old = manager.reads.get_status(outside.uri("a"))
    outside.write("a", b"three")
    return outside.uri("a"), old


def test_an_expired_status_is_served_at_once_while_one_recheck_runs(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    uri, old = _changed(manager, outside)
    heard = listen(manager)
    ufs.gate = threading.Event()  # the background re-check waits here, holding its flight
    try:
        assert manager.reads.get_status(uri, sync_interval=0, serve_stale=True) == old
        assert manager.reads.get_status(uri, sync_interval=0, serve_stale=True) == old
        assert manager.reads.cached_status(uri, sync_interval=0, serve_stale=True) == old
        wait_until(ufs.answered.is_set)
        counts = manager.counters()
        assert (counts["revalidations"], counts["stale_served"]) == (1, 3)
        assert ufs.status_calls == [uri, uri]  # the first load, then one re-check
    finally:
        ufs.gate.set()
    wait_until(lambda: manager.counters()["syncs_changed"] == 1)
    new = manager.reads.get_status(uri, sync_interval=-1)
    assert new.size == 5
    assert heard == [(uri, old.version)]  # the old version's pages go, as for any sync
    assert manager.counters()["revalidations_failed"] == 0


def test_not_opted_in_an_expired_status_is_rechecked_first(
    manager: MetadataManager, outside: Outside
) -> None:
    uri, _ = _changed(manager, outside)
    assert manager.reads.get_status(uri, sync_interval=0).size == 5
    assert manager.reads.cached_status(uri, sync_interval=0) is None
    assert manager.counters()["revalidations"] == 0


def test_past_the_status_cache_ttl_no_stale_answer(
    manager: MetadataManager, outside: Outside, clock: FakeClock
) -> None:
    uri, _ = _changed(manager, outside)
    clock.advance(HOUR)  # the status cache TTL of these managers
    assert manager.reads.get_status(uri, sync_interval=0, serve_stale=True).size == 5
    assert manager.counters()["revalidations"] == 0


def test_a_pinned_version_or_a_feed_gap_is_never_served_stale(
    manager: MetadataManager, outside: Outside, clock: FakeClock
) -> None:
    uri, old = _changed(manager, outside)
    new_version = manager.reads.get_status(uri, sync_interval=0).version
    outside.write("a", b"seven!!")
    assert manager.reads.get_status(uri, 0, version=new_version, serve_stale=True).size == 5
    clock.advance(1)
    manager.writes.require_sync_before(clock())
    assert manager.reads.get_status(uri, sync_interval=-1, serve_stale=True).size == 7
    assert manager.counters()["revalidations"] == 0
    assert old.version != new_version


def test_a_failed_recheck_leaves_the_entry_expired_for_the_next_call(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, old = _changed(manager, outside)
    real = ufs.status

    def unavailable(uri: str, *, deadline: Deadline | None = None) -> UfsStatus:
        raise StorageUnavailable(f"no answer for {uri}", retry_after=1)

    monkeypatch.setattr(ufs, "status", unavailable)
    assert manager.reads.get_status(uri, sync_interval=0, serve_stale=True) == old
    wait_until(lambda: manager.counters()["revalidations_failed"] == 1)
    # The next call re-checks synchronously and gets the failure itself.
    with pytest.raises(StorageUnavailable):
        manager.reads.get_status(uri, sync_interval=0, serve_stale=True)
    monkeypatch.setattr(ufs, "status", real)
    assert manager.reads.get_status(uri, sync_interval=0, serve_stale=True).size == 5
    assert manager.counters()["revalidations"] == 1
