"""A cached listing answers "not found" for a name it lacks (issue 36 item 5), and every change
that can make a name appear in a directory drops that directory's cached listing: a write, a
sync or a listing that finds a path under it, a directory listed in flight while one lands."""

from __future__ import annotations

import threading

import pytest

from tests.worker.meta.support import SECOND, CountingUfs, FakeClock, Outside, run
from ufs.adapter import Ufs
from ufs.deadline import Deadline
from ufs.errors import UfsNotFound
from ufs.status import UfsStatus
from worker.meta.entry import Operation
from worker.meta.manager import MetadataManager

# Past dora.worker.ufs.negative.cache.ttl in the tests' lifetimes (10 s).
PAST_NEGATIVE_TTL = 11 * SECOND


def test_a_cached_listing_answers_not_found_for_a_name_it_lacks_past_the_negative_ttl(
    manager: MetadataManager, outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    """A warm Spark job probes ``<table>/_spark_metadata`` (FileStreamSink.hasMetadata) beside
    the table it lists; its negative entry lived 10 s, so a warm run more than 10 s after the
    cold one asked the store again (the lab's 750 bytes: a HEAD and a one-key listing)."""
    outside.write("table/part-0", b"rows")
    manager.reads.list_status(outside.uri("table"))
    calls = ufs.calls
    for advance in (0, PAST_NEGATIVE_TTL, PAST_NEGATIVE_TTL):
        clock.advance(advance)
        with pytest.raises(UfsNotFound):
            manager.reads.get_status(outside.uri("table/_spark_metadata"), sync_interval=-1)
    assert ufs.calls == calls
    assert manager.counters()["listing_negatives"] == 3


def test_a_listing_answers_not_found_only_as_fresh_as_the_caller_asks(
    manager: MetadataManager, outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    outside.write("table/part-0", b"rows")
    manager.reads.list_status(outside.uri("table"))
    outside.write("table/new", b"outside")
    clock.advance(5 * SECOND)
    assert manager.reads.get_status(outside.uri("table/new"), sync_interval=1000).size == 7
    with pytest.raises(UfsNotFound):
        manager.reads.get_status(outside.uri("table/other"), sync_interval=0)
    assert manager.counters()["listing_negatives"] == 0


def test_a_write_through_the_worker_is_seen_despite_the_parents_old_listing(
    manager: MetadataManager, outside: Outside
) -> None:
    outside.write("table/part-0", b"rows")
    manager.reads.list_status(outside.uri("table"))
    written = write(outside, manager, "table/part-1", b"more", Operation.CREATED)
    assert manager.reads.get_status(outside.uri("table/part-1"), sync_interval=-1) == written


def test_a_nested_write_drops_the_listings_of_the_directories_it_makes_appear(
    manager: MetadataManager, outside: Outside, clock: FakeClock, ufs: CountingUfs
) -> None:
    """fsspec's directory copy: ``ls target``, then write ``target/subdir/nesteddir/file``;
    ``target`` lists ``subdir`` and ``isdir(target/subdir)`` holds, past the negative TTL."""
    outside.write("target/dummy", b"d")
    manager.reads.list_status(outside.uri("target"))
    manager.reads.list_status(outside.uri(""))
    write(outside, manager, "target/subdir/nesteddir/file", b"f", Operation.CREATED)
    clock.advance(PAST_NEGATIVE_TTL)
    names = [s.name for s in manager.reads.list_status(outside.uri("target"))]
    assert names == ["dummy", "subdir"]
    assert manager.reads.get_status(outside.uri("target/subdir")).is_dir
    assert manager.reads.get_status(outside.uri("target/subdir/nesteddir")).is_dir
    # The root's listing named ``target`` already: the write left it cached.
    calls = len(ufs.list_calls)
    assert "target" in [s.name for s in manager.reads.list_status(outside.uri(""))]
    assert len(ufs.list_calls) == calls


def test_a_delete_drops_the_listings_of_the_directories_it_may_empty(
    manager: MetadataManager, outside: Outside
) -> None:
    """In an object store a directory exists while something is under it: deleting its last
    file makes it vanish from its parent's listing."""
    outside.write("t/d/only", b"x")
    outside.write("t/keep", b"k")
    manager.reads.list_status(outside.uri("t"))
    outside.delete("t/d/only")
    (outside.root / "t" / "d").rmdir()
    manager.writes.record_write(outside.uri("t/d/only"), None, Operation.DELETED)
    assert [s.name for s in manager.reads.list_status(outside.uri("t"))] == ["keep"]


def test_a_sync_that_finds_a_path_drops_the_listings_that_lack_its_directories(
    manager: MetadataManager, outside: Outside, clock: FakeClock
) -> None:
    outside.write("t/keep", b"k")
    manager.reads.list_status(outside.uri("t"))
    outside.write("t/new/file", b"outside")
    assert manager.reads.get_status(outside.uri("t/new/file"), sync_interval=0).size == 7
    assert manager.reads.get_status(outside.uri("t/new")).is_dir
    outside.write("t/listed/file", b"outside")
    assert len(manager.reads.list_status(outside.uri("t/listed"), sync_interval=0)) == 1
    clock.advance(PAST_NEGATIVE_TTL)
    assert manager.reads.get_status(outside.uri("t/listed")).is_dir


class GatedListUfs(CountingUfs):
    """A UFS whose listings, once ``list_gate`` is set, answer at once but return only when
    the gate opens: a listing held in flight while a write lands."""

    def __init__(self) -> None:
        super().__init__()
        self.list_gate: threading.Event | None = None
        self.listed = threading.Event()

    def list(self, uri: str, *, deadline: Deadline | None = None) -> list[UfsStatus]:
        children = super().list(uri, deadline=deadline)
        if self.list_gate is not None:
            self.listed.set()
            self.list_gate.wait()
        return children


@pytest.fixture
def ufs() -> CountingUfs:
    return GatedListUfs()


def test_a_listing_in_flight_when_a_nested_write_lands_is_not_kept(
    manager: MetadataManager, outside: Outside, ufs: GatedListUfs, clock: FakeClock
) -> None:
    outside.write("t/keep", b"k")
    ufs.list_gate = threading.Event()
    thread, _ = run(lambda: manager.reads.list_status(outside.uri("t")))
    ufs.listed.wait()
    write(outside, manager, "t/new/file", b"f", Operation.CREATED)
    ufs.list_gate.set()
    thread.join()
    ufs.list_gate = None
    clock.advance(PAST_NEGATIVE_TTL)
    assert [s.name for s in manager.reads.list_status(outside.uri("t"))] == ["keep", "new"]
    assert manager.reads.get_status(outside.uri("t/new")).is_dir


def write(
    outside: Outside, manager: MetadataManager, name: str, data: bytes, op: Operation
) -> UfsStatus:
    """Write ``name`` as a write through the worker does: the UFS, then the metadata."""
    outside.write(name, data)
    status = Ufs().status(outside.uri(name))
    manager.writes.record_write(outside.uri(name), status, op)
    return status
