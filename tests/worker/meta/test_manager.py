"""MetadataManager reads: tiers, sync intervals, versions, negative entries (fake clock)."""

from __future__ import annotations

import pytest

from tests.worker.meta.conftest import ManagerFactory
from tests.worker.meta.support import HOUR, SECOND, CountingUfs, FakeClock, Outside, listen
from ufs.adapter import Ufs
from ufs.errors import UfsInvalidPath, UfsNotFound
from worker.meta.entry import Lifetimes, Operation
from worker.meta.errors import MetaVersionMismatch
from worker.meta.manager import MetadataManager


def test_a_miss_loads_from_the_ufs_once_then_memory_serves(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("a", b"one")
    first = manager.reads.get_status(outside.uri("a"))
    again = manager.reads.get_status(outside.uri("a"))
    assert first == again
    assert first.size == 3
    assert ufs.calls == 1
    counts = manager.counters()
    assert (counts["misses"], counts["memory_hits"], counts["ufs_calls"]) == (1, 1, 1)


def test_uris_are_normalized_and_traversal_is_refused(
    manager: MetadataManager, outside: Outside
) -> None:
    outside.write("a", b"one")
    assert manager.reads.get_status(outside.uri("a") + "/").uri == outside.uri("a")
    with pytest.raises(UfsInvalidPath):
        manager.reads.get_status(outside.uri("x/../a"))


def test_sync_never_serves_the_cached_status_after_an_outside_change(
    manager: MetadataManager, outside: Outside, clock: FakeClock
) -> None:
    outside.write("a", b"one")
    old = manager.reads.get_status(outside.uri("a"), sync_interval=-1)
    outside.write("a", b"three")
    clock.advance(30 * 60 * SECOND)
    assert manager.reads.get_status(outside.uri("a"), sync_interval=-1) == old


def test_sync_always_sees_an_outside_change(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    heard = listen(manager)
    outside.write("a", b"one")
    old = manager.reads.get_status(outside.uri("a"))
    outside.write("a", b"three")
    new = manager.reads.get_status(outside.uri("a"), sync_interval=0)
    assert new.size == 5
    assert heard == [(outside.uri("a"), old.version)]
    assert manager.counters()["syncs_changed"] == 1
    assert ufs.calls == 2


def test_sync_interval_re_checks_only_once_the_entry_is_older(
    manager: MetadataManager, outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    outside.write("a", b"one")
    manager.reads.get_status(outside.uri("a"))
    outside.write("a", b"three")
    clock.advance(5 * SECOND)
    assert manager.reads.get_status(outside.uri("a"), sync_interval=5 * SECOND).size == 3
    assert ufs.calls == 1
    clock.advance(1)
    assert manager.reads.get_status(outside.uri("a"), sync_interval=5 * SECOND).size == 5
    assert ufs.calls == 2


def test_a_recheck_with_the_same_version_keeps_pages_and_refreshes_its_age(
    manager: MetadataManager, outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    heard = listen(manager)
    outside.write("a", b"one")
    manager.reads.get_status(outside.uri("a"))
    clock.advance(10 * SECOND)
    manager.reads.get_status(outside.uri("a"), sync_interval=SECOND)
    assert (ufs.calls, heard) == (2, [])
    clock.advance(SECOND)
    manager.reads.get_status(outside.uri("a"), sync_interval=SECOND)
    assert ufs.calls == 2
    assert manager.counters()["syncs"] == 1


def test_the_default_sync_interval_comes_from_the_options(
    make_manager: ManagerFactory, outside: Outside, ufs: CountingUfs
) -> None:
    manager = make_manager(sync_interval_ms=0)
    outside.write("a", b"one")
    manager.reads.get_status(outside.uri("a"))
    manager.reads.get_status(outside.uri("a"))
    assert ufs.calls == 2


def test_a_bad_sync_interval_is_refused(manager: MetadataManager, outside: Outside) -> None:
    with pytest.raises(ValueError, match="sync interval"):
        manager.reads.get_status(outside.uri("a"), sync_interval=-2)


def test_a_disappearance_found_by_a_sync_evicts_and_leaves_a_negative_entry(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    heard = listen(manager)
    outside.write("a", b"one")
    old = manager.reads.get_status(outside.uri("a"))
    outside.delete("a")
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("a"), sync_interval=0)
    assert heard == [(outside.uri("a"), old.version)]
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("a"))
    assert ufs.calls == 2


def test_a_negative_entry_lives_for_the_negative_ttl(
    manager: MetadataManager, outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("a"))
    outside.write("a", b"one")
    clock.advance(10 * SECOND - 1)
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("a"))
    assert ufs.calls == 1
    clock.advance(1)
    assert manager.reads.get_status(outside.uri("a")).size == 3
    assert ufs.calls == 2


def test_a_negative_entry_obeys_sync_intervals_too(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("a"))
    outside.write("a", b"one")
    assert manager.reads.get_status(outside.uri("a"), sync_interval=0).size == 3


def test_with_negative_ttl_zero_nothing_negative_is_kept(
    make_manager: ManagerFactory, outside: Outside, ufs: CountingUfs
) -> None:
    manager = make_manager(lifetimes=Lifetimes(24 * HOUR, 0))
    for _ in range(2):
        with pytest.raises(UfsNotFound):
            manager.reads.get_status(outside.uri("a"))
    assert ufs.calls == 2
    outside.write("a", b"one")
    manager.reads.get_status(outside.uri("a"))
    outside.delete("a")
    manager.writes.record_write(outside.uri("a"), None, Operation.DELETED)
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("a"))
    assert ufs.calls == 4


def test_a_wanted_version_in_cache_needs_no_ufs_call_whatever_the_interval(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("a", b"one")
    version = manager.reads.get_status(outside.uri("a")).version
    outside.write("a", b"three")
    status = manager.reads.get_status(outside.uri("a"), sync_interval=0, version=version)
    assert status.version == version
    assert ufs.calls == 1


def test_another_version_syncs_once_then_mismatches(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("a", b"one")
    manager.reads.get_status(outside.uri("a"))
    with pytest.raises(MetaVersionMismatch) as caught:
        manager.reads.get_status(outside.uri("a"), version="no-such-version")
    assert (caught.value.wanted, caught.value.uri) == ("no-such-version", outside.uri("a"))
    assert ufs.calls == 2


def test_a_wanted_version_the_ufs_now_has_is_served_after_one_sync(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("a", b"one")
    manager.reads.get_status(outside.uri("a"))
    outside.write("a", b"three")
    current = ufs.status(outside.uri("a")).version
    assert manager.reads.get_status(outside.uri("a"), sync_interval=-1, version=current).size == 5
    assert manager.reads.get_status(outside.uri("a")).version == current


def test_a_wanted_version_of_a_file_cached_as_missing_syncs(
    manager: MetadataManager, outside: Outside
) -> None:
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("a"))
    outside.write("a", b"one")
    version = Ufs().status(outside.uri("a")).version
    assert manager.reads.get_status(outside.uri("a"), version=version).version == version


def test_a_wanted_version_of_a_missing_file_is_not_found(
    manager: MetadataManager, outside: Outside
) -> None:
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("a"), version="v1")


def test_a_status_outlives_memory_in_the_metastore_and_is_promoted(
    make_manager: ManagerFactory, outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    manager = make_manager(status_ttl_ms=HOUR)
    outside.write("a", b"one")
    manager.reads.get_status(outside.uri("a"))
    clock.advance(HOUR)
    manager.reads.get_status(outside.uri("a"))
    manager.reads.get_status(outside.uri("a"))
    counts = manager.counters()
    assert (counts["metastore_hits"], counts["memory_hits"], ufs.calls) == (1, 1, 1)


def test_the_metastore_ttl_bounds_a_status_life(
    make_manager: ManagerFactory, outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    manager = make_manager(status_ttl_ms=HOUR, lifetimes=Lifetimes(2 * HOUR, 10 * SECOND))
    outside.write("a", b"one")
    manager.reads.get_status(outside.uri("a"))
    clock.advance(HOUR + 30 * 60 * SECOND)
    manager.reads.get_status(outside.uri("a"))  # promoted, but only until 2h after loaded_at
    assert ufs.calls == 1
    clock.advance(30 * 60 * SECOND)
    manager.reads.get_status(outside.uri("a"))
    assert ufs.calls == 2


def test_a_status_evicted_from_a_full_memory_is_served_from_the_metastore(
    make_manager: ManagerFactory, outside: Outside, ufs: CountingUfs, store_kind: str
) -> None:
    manager = make_manager(status_cache_size=1)
    outside.write("a", b"one")
    outside.write("b", b"two")
    manager.reads.get_status(outside.uri("a"))
    manager.reads.get_status(outside.uri("b"))
    manager.reads.get_status(outside.uri("a"))
    counts = manager.counters()
    assert counts["evictions"] >= 1
    assert (counts["metastore_hits"], ufs.calls) == (1, 2)
    if store_kind == "rocks":
        # Nothing was committed yet: the evicted status was read from the pending batch.
        assert (counts["metastore_pending"], counts["metastore_flushes"]) == (2, 0)


def test_every_listener_hears_even_if_one_fails(manager: MetadataManager, outside: Outside) -> None:
    def broken(uri: str, version: str) -> None:
        raise OSError("page store disk failed")

    manager.writes.add_listener(broken)
    heard = listen(manager)
    outside.write("a", b"one")
    manager.reads.get_status(outside.uri("a"))
    with pytest.raises(OSError, match="page store"):
        manager.writes.invalidate(outside.uri("a"))
    assert len(heard) == 1


def test_cached_status_answers_from_memory_alone_as_get_status_would(
    manager: MetadataManager, outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    outside.write("a", b"one")
    assert manager.reads.cached_status(outside.uri("a")) is None  # not loaded: no UFS call either
    assert ufs.calls == 0
    loaded = manager.reads.get_status(outside.uri("a"))
    assert manager.reads.cached_status(outside.uri("a") + "/") == loaded
    assert manager.reads.cached_status(outside.uri("a"), version=loaded.version) == loaded
    assert manager.reads.cached_status(outside.uri("a"), version="other") is None
    assert manager.reads.cached_status(outside.uri("a"), sync_interval=0) is None
    clock.advance(5 * SECOND + 1)
    assert manager.reads.cached_status(outside.uri("a"), sync_interval=5 * SECOND) is None
    assert manager.reads.cached_status(outside.uri("a"), sync_interval=-1) == loaded
    assert ufs.calls == 1
    assert manager.counters()["memory_hits"] == 3


def test_cached_status_of_a_cached_negative_entry_is_not_found(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("a"))
    with pytest.raises(UfsNotFound):
        manager.reads.cached_status(outside.uri("a"))
    with pytest.raises(ValueError, match="sync interval"):
        manager.reads.cached_status(outside.uri("a"), sync_interval=-2)
    assert ufs.calls == 1


def test_cached_status_leaves_the_metastore_tier_to_get_status(
    make_manager: ManagerFactory, outside: Outside, clock: FakeClock
) -> None:
    manager = make_manager(status_ttl_ms=HOUR)
    outside.write("a", b"one")
    manager.reads.get_status(outside.uri("a"))
    clock.advance(HOUR)  # out of memory, still in the metastore
    assert manager.reads.cached_status(outside.uri("a")) is None
