"""The Metastore contract, run against every implementation, and the RocksDB double buffer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rocksdict import AccessType, Options, Rdict

from tests.worker.meta.support import (
    HOUR,
    SECOND,
    FakeClock,
    memory_store,
    rocks_options,
    rocks_store,
)
from ufs.status import UfsStatus
from worker.meta import codec
from worker.meta.entry import MetaEntry, Operation
from worker.meta.errors import CorruptEntry, MetastoreError
from worker.meta.metastore import Metastore
from worker.meta.rocks import RocksMetastore


def entry(uri: str, loaded_at: int, size: int = 1) -> MetaEntry:
    status = UfsStatus(uri, uri.rsplit("/", 1)[-1], False, size, 7, f"{size}-7", None)
    return MetaEntry(status, loaded_at, Operation.LOADED)


@pytest.fixture(params=["memory", "rocks"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Metastore]:
    made: Metastore
    made = rocks_store(tmp_path / "ms", clock) if request.param == "rocks" else memory_store(clock)
    yield made
    made.close()


def test_put_then_get(store: Metastore, clock: FakeClock) -> None:
    stored = entry("s3://b/a", clock.now)
    store.put("s3://b/a", stored)
    assert store.get("s3://b/a") == stored
    assert store.get("s3://b/other") is None
    store.flush()
    assert store.get("s3://b/a") == stored


def test_expiry_is_checked_on_every_read(store: Metastore, clock: FakeClock) -> None:
    store.put("s3://b/a", entry("s3://b/a", clock.now))
    store.put("s3://b/gone", MetaEntry(None, clock.now, Operation.DELETED))
    store.flush()
    clock.advance(10 * SECOND)
    assert store.get("s3://b/gone") is None
    assert store.peek("s3://b/gone") is not None
    clock.advance(24 * HOUR - 10 * SECOND - 1)
    assert store.get("s3://b/a") is not None
    clock.advance(1)
    assert store.get("s3://b/a") is None
    assert store.peek("s3://b/a") == entry("s3://b/a", clock.now - 24 * HOUR)


def test_pop_returns_the_entry_and_removes_it(store: Metastore, clock: FakeClock) -> None:
    store.put("s3://b/a", entry("s3://b/a", clock.now))
    store.flush()
    assert store.pop("s3://b/a") == entry("s3://b/a", clock.now)
    assert store.get("s3://b/a") is None
    assert store.pop("s3://b/a") is None
    store.flush()
    assert store.peek("s3://b/a") is None


def test_many_at_once_reads_and_writes_like_one_at_a_time(
    store: Metastore, clock: FakeClock
) -> None:
    store.put_many([("s3://b/a", entry("s3://b/a", clock.now))])
    store.flush()
    store.put_many([("s3://b/b", entry("s3://b/b", clock.now)), ("s3://b/c", entry("s3://b/c", 1))])
    store.delete("s3://b/c")
    found = store.peek_many(["s3://b/a", "s3://b/b", "s3://b/c", "s3://b/never"])
    assert found == [entry("s3://b/a", clock.now), entry("s3://b/b", clock.now), None, None]
    store.flush()
    assert store.peek_many(["s3://b/b", "s3://b/a"]) == [
        entry("s3://b/b", clock.now),
        entry("s3://b/a", clock.now),
    ]


def test_delete_removes_a_committed_or_pending_entry(store: Metastore, clock: FakeClock) -> None:
    store.put("s3://b/a", entry("s3://b/a", clock.now))
    store.flush()
    store.put("s3://b/p", entry("s3://b/p", clock.now))
    store.delete("s3://b/a")
    store.delete("s3://b/p")
    store.delete("s3://b/never")
    assert (store.peek("s3://b/a"), store.peek("s3://b/p")) == (None, None)
    store.flush()
    assert (store.peek("s3://b/a"), store.peek("s3://b/p")) == (None, None)


def test_pop_under_removes_a_prefix_committed_or_pending(
    store: Metastore, clock: FakeClock
) -> None:
    for uri in ("s3://b/d", "s3://b/d/x", "s3://b/d-x", "s3://b/dd", "s3://b/e"):
        store.put(uri, entry(uri, clock.now))
    store.flush()
    store.put("s3://b/d/y/z", entry("s3://b/d/y/z", clock.now))
    store.put("s3://b/d/x", entry("s3://b/d/x", clock.now, size=2))
    popped = dict(store.pop_under("s3://b/d"))
    assert sorted(popped) == ["s3://b/d", "s3://b/d/x", "s3://b/d/y/z"]
    assert popped["s3://b/d/x"].status is not None and popped["s3://b/d/x"].status.size == 2
    store.flush()
    assert [u for u in ("s3://b/d", "s3://b/d/x", "s3://b/d-x", "s3://b/dd") if store.get(u)] == [
        "s3://b/d-x",
        "s3://b/dd",
    ]


def test_a_file_root_prefix_covers_everything(store: Metastore, clock: FakeClock) -> None:
    store.put("file:///a", entry("file:///a", clock.now))
    store.put("file:///b/c", entry("file:///b/c", clock.now))
    assert sorted(u for u, _ in store.pop_under("file:///")) == ["file:///a", "file:///b/c"]


def test_pending_writes_are_readable_and_committed_on_close(
    tmp_path: Path, clock: FakeClock
) -> None:
    store = rocks_store(tmp_path / "ms", clock)
    store.put("s3://b/a", entry("s3://b/a", clock.now))
    store.pop("s3://b/never")
    assert store.stats()["metastore_pending"] == 2
    assert store.get("s3://b/a") == entry("s3://b/a", clock.now)
    store.close()
    store.close()  # idempotent
    with pytest.raises(MetastoreError, match="closed"):
        store.get("s3://b/a")
    reopened = rocks_store(tmp_path / "ms", clock)
    assert reopened.get("s3://b/a") == entry("s3://b/a", clock.now)
    reopened.close()


def test_the_flusher_commits_on_its_own(tmp_path: Path, clock: FakeClock) -> None:
    store = RocksMetastore.open(rocks_options(tmp_path / "ms", flush_interval_ms=1), clock)
    store.put("s3://b/a", entry("s3://b/a", clock.now))
    deadline = time.monotonic() + 30
    while store.stats()["metastore_pending"]:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    assert store.stats()["metastore_flushes"] >= 1
    store.close()


def test_values_on_disk_are_compact_and_rocksdb_ttl_is_on(tmp_path: Path, clock: FakeClock) -> None:
    store = rocks_store(tmp_path / "ms", clock)
    store.put("s3://b/a", entry("s3://b/a", clock.now))
    store.close()
    # Opened without TTL, RocksDB shows the 4-byte write timestamp its TTL mode appends.
    raw = Rdict(str(tmp_path / "ms"), Options(raw_mode=True), access_type=AccessType.read_only())
    value = raw.get(b"s3://b/a")
    raw.close()
    assert value is not None and len(value) == 27 + 4
    assert codec.decode("s3://b/a", value[:-4]) == entry("s3://b/a", clock.now)


def test_an_undecodable_value_is_an_error_on_read_and_dropped_by_pop(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "ms"
    rocks_store(path, clock).close()
    raw = Rdict(str(path), Options(raw_mode=True), access_type=AccessType.with_ttl(86400))
    raw[b"s3://b/bad"] = b"\x63garbage"
    raw[b"s3://b/bad/child"] = b"\x63garbage"
    raw.close()
    store = rocks_store(path, clock)
    with pytest.raises(CorruptEntry):
        store.get("s3://b/bad")
    assert store.pop_under("s3://b/bad/child") == []
    assert store.pop("s3://b/bad") is None
    assert store.get("s3://b/bad") is None
    store.close()
