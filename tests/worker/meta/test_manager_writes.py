"""MetadataManager listings, writes through the worker and invalidation (fake clock)."""

from __future__ import annotations

import pytest

from tests.worker.meta.conftest import ManagerFactory
from tests.worker.meta.support import HOUR, CountingUfs, FakeClock, Outside, listen
from ufs.adapter import Ufs
from ufs.errors import UfsNotFound
from worker.meta.entry import Operation
from worker.meta.manager import MetadataManager


def test_a_listing_is_cached_and_fills_the_status_cache(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    outside.write("d/a", b"one")
    outside.write("d/b", b"three")
    names = [s.name for s in manager.reads.list_status(outside.uri("d"))]
    assert names == ["a", "b"]
    assert manager.reads.get_status(outside.uri("d/b")).size == 5
    assert [s.name for s in manager.reads.list_status(outside.uri("d"))] == names
    assert (ufs.calls, manager.counters()["listing_hits"]) == (1, 1)


def test_a_listing_sync_notices_changed_and_vanished_children(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    heard = listen(manager)
    outside.write("d/a", b"one")
    outside.write("d/b", b"three")
    before = {s.name: s.version for s in manager.reads.list_status(outside.uri("d"))}
    outside.write("d/a", b"changed")
    outside.delete("d/b")
    after = manager.reads.list_status(outside.uri("d"), sync_interval=0)
    assert [s.name for s in after] == ["a"]
    assert sorted(heard) == sorted((outside.uri(f"d/{n}"), v) for n, v in before.items())
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("d/b"))


def test_a_listing_of_a_vanished_directory_drops_what_was_under_it(
    manager: MetadataManager, outside: Outside
) -> None:
    heard = listen(manager)
    outside.write("d/a", b"one")
    manager.reads.list_status(outside.uri("d"))
    old = manager.reads.get_status(outside.uri("d/a"))
    outside.delete("d/a")
    (outside.root / "d").rmdir()
    with pytest.raises(UfsNotFound):
        manager.reads.list_status(outside.uri("d"), sync_interval=0)
    assert heard == [(outside.uri("d/a"), old.version)]
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("d"))


def test_a_listing_expires_after_its_ttl(
    make_manager: ManagerFactory, outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    manager = make_manager(list_ttl_ms=HOUR)
    outside.write("d/a", b"one")
    manager.reads.list_status(outside.uri("d"))
    clock.advance(HOUR - 1)
    manager.reads.list_status(outside.uri("d"))
    assert len(ufs.list_calls) == 1
    clock.advance(1)
    manager.reads.list_status(outside.uri("d"))
    assert len(ufs.list_calls) == 2


def test_writes_through_the_manager_are_read_back_and_evict_the_old_version(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    heard = listen(manager)
    outside.write("d/a", b"one")
    manager.reads.list_status(outside.uri("d"))
    old = manager.reads.get_status(outside.uri("d/a"))
    outside.write("d/a", b"updated")
    new = ufs.status(outside.uri("d/a"))
    calls = ufs.calls
    manager.writes.record_write(outside.uri("d/a"), new, Operation.UPDATED)
    assert manager.reads.get_status(outside.uri("d/a")) == new
    assert heard == [(outside.uri("d/a"), old.version)]
    manager.reads.list_status(outside.uri("d"))
    assert ufs.calls == calls + 1, "the parent's listing was dropped"


def test_a_create_replaces_a_negative_entry(manager: MetadataManager, outside: Outside) -> None:
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("a"))
    outside.write("a", b"one")
    status = Ufs().status(outside.uri("a"))
    manager.writes.record_write(outside.uri("a"), status, Operation.CREATED)
    assert manager.reads.get_status(outside.uri("a")) == status


def test_a_listing_never_shows_a_file_deleted_through_the_manager(
    manager: MetadataManager, outside: Outside
) -> None:
    heard = listen(manager)
    outside.write("d/a", b"one")
    outside.write("d/b", b"two")
    manager.reads.list_status(outside.uri("d"))
    old = manager.reads.get_status(outside.uri("d/a"))
    outside.delete("d/a")
    manager.writes.record_write(outside.uri("d/a"), None, Operation.DELETED)
    assert [s.name for s in manager.reads.list_status(outside.uri("d"))] == ["b"]
    assert heard == [(outside.uri("d/a"), old.version)]
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("d/a"))


def test_deleting_a_directory_drops_everything_under_it(
    manager: MetadataManager, outside: Outside
) -> None:
    heard = listen(manager)
    outside.write("d/x/a", b"one")
    a = manager.reads.get_status(outside.uri("d/x/a"))
    manager.reads.list_status(outside.uri("d/x"))
    outside.delete("d/x/a")
    manager.writes.record_write(outside.uri("d"), None, Operation.DELETED)
    assert heard == [(outside.uri("d/x/a"), a.version)]
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("d/x/a"))


def test_record_write_refuses_inconsistent_arguments(
    manager: MetadataManager, outside: Outside
) -> None:
    outside.write("a", b"one")
    status = manager.reads.get_status(outside.uri("a"))
    with pytest.raises(ValueError, match="DELETED"):
        manager.writes.record_write(outside.uri("a"), status, Operation.DELETED)
    with pytest.raises(ValueError, match="DELETED"):
        manager.writes.record_write(outside.uri("a"), None, Operation.CREATED)
    with pytest.raises(ValueError, match="names"):
        manager.writes.record_write(outside.uri("b"), status, Operation.CREATED)


def test_invalidate_drops_one_status_and_notifies(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    heard = listen(manager)
    outside.write("d/a", b"one")
    outside.write("d/b", b"two")
    manager.reads.list_status(outside.uri("d"))
    a = manager.reads.get_status(outside.uri("d/a"))
    assert manager.writes.invalidate(outside.uri("d/a")) == 1
    assert heard == [(outside.uri("d/a"), a.version)]
    calls = ufs.calls
    manager.reads.get_status(outside.uri("d/b"))
    assert ufs.calls == calls
    manager.reads.get_status(outside.uri("d/a"))
    manager.reads.list_status(outside.uri("d"))
    assert ufs.calls == calls + 2
    assert manager.counters()["invalidations"] == 1


def test_recursive_invalidate_drops_a_prefix_on_segment_boundaries(
    manager: MetadataManager, outside: Outside, ufs: CountingUfs
) -> None:
    heard = listen(manager)
    for name in ("d/a", "d/sub/b", "d-x", "dd"):
        outside.write(name, b"data")
    versions = {
        n: manager.reads.get_status(outside.uri(n)).version for n in ("d/a", "d/sub/b", "d-x", "dd")
    }
    manager.reads.list_status(outside.uri("d"))
    manager.reads.get_status(outside.uri("d"))
    dropped = manager.writes.invalidate(outside.uri("d"), recursive=True)
    assert dropped == 4  # d, d/a, d/sub, d/sub/b (d/sub came with d's listing)
    assert sorted(heard) == sorted((outside.uri(n), versions[n]) for n in ("d/a", "d/sub/b"))
    calls = ufs.calls
    manager.reads.get_status(outside.uri("d-x"))
    manager.reads.get_status(outside.uri("dd"))
    assert ufs.calls == calls
    manager.reads.get_status(outside.uri("d/sub/b"))
    assert ufs.calls == calls + 1


def test_a_write_forgets_missing_ancestors(manager: MetadataManager, outside: Outside) -> None:
    """``isdir(d)`` is False; ``d/e/x`` is written through the worker: ``d`` and ``d/e`` exist."""
    for missing in ("d", "d/e"):
        with pytest.raises(UfsNotFound):
            manager.reads.get_status(outside.uri(missing))
    outside.write("d/e/x", b"x")
    written = manager.reads.get_status(outside.uri("d/e/x"), sync_interval=0)
    manager.writes.record_write(written.uri, written, Operation.CREATED)
    assert manager.reads.get_status(outside.uri("d")).is_dir
    assert manager.reads.get_status(outside.uri("d/e")).is_dir
