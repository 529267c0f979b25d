"""The metastore on a disk that fills up (a real tmpfs): the first failed commit stops persisting,
so memory stays bounded; the worker keeps answering from memory and the UFS, and the next start
does not serve what the store missed."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.worker.meta.support import (
    LIFETIMES,
    MANUAL_FLUSH_MS,
    CountingUfs,
    FakeClock,
    Outside,
    cache_options,
    rocks_options,
    wait_until,
)
from ufs.status import UfsStatus
from worker.meta.entry import MetaEntry, Operation
from worker.meta.errors import MetastoreError
from worker.meta.manager import MetadataManager
from worker.meta.metastore import PersistenceState
from worker.meta.rocks import RocksMetastore
from worker.meta.rocks_open import UNCOMMITTED


class Disk:
    """A small tmpfs that a test fills and frees."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._filler = path / "filler"

    def fill(self) -> None:
        """Take every free byte (big writes first, then smaller ones for what is left)."""
        with self._filler.open("ab", buffering=0) as out:
            for size in (65536, 4096, 1):
                try:
                    while True:
                        out.write(b"\0" * size)
                except OSError:
                    continue  # ENOSPC at this size: try a smaller one

    def free(self) -> None:
        self._filler.unlink()


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    """A 4 MB tmpfs (root only), unmounted after the stores on it are closed (fixtures requested
    later are torn down first)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    path = tmp_path / "disk"
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(path)], check=True)
    yield Disk(path)
    subprocess.run(["umount", "-l", str(path)], check=False)


def entry(uri: str, clock: FakeClock) -> MetaEntry:
    status = UfsStatus(uri, uri.rsplit("/", 1)[-1], False, 1, 1, "1-1", None)
    return MetaEntry(status, clock.now, Operation.LOADED)


def open_store(
    path: Path, clock: FakeClock, flush_interval_ms: int = MANUAL_FLUSH_MS
) -> RocksMetastore:
    return RocksMetastore.open(
        rocks_options(path, LIFETIMES, flush_interval_ms=flush_interval_ms), clock
    )


def test_a_failed_commit_stops_persisting_and_the_next_start_discards_the_store(
    disk: Disk, clock: FakeClock
) -> None:
    store = open_store(disk.path / "ms", clock)
    store.put("s3://b/kept", entry("s3://b/kept", clock))
    store.flush()
    disk.fill()
    big = "s3://b/" + "a" * 8192  # more than the slack of the log's last page
    store.put(big, entry(big, clock))
    with pytest.raises(MetastoreError, match="cannot commit"):
        store.flush()
    assert store.persistence_state() is PersistenceState.MEMORY_ONLY
    assert (disk.path / "ms" / UNCOMMITTED).exists()
    # Nothing is buffered any more, however much is written.
    for n in range(100):
        store.put(f"s3://b/{n}", entry(f"s3://b/{n}", clock))
    stats = store.stats()
    assert (stats["metastore_pending"], stats["metastore_memory_only"]) == (0, 1)
    assert stats["metastore_dropped_writes"] == 1
    # RocksDB now lacks writes the worker made: it is read no more.
    assert store.get("s3://b/kept") is None
    store.close()  # logs, does not raise
    disk.free()
    reopened = open_store(disk.path / "ms", clock)
    assert reopened.persistence_state() is PersistenceState.PERSISTING
    assert reopened.get("s3://b/kept") is None  # discarded at start, not served stale
    reopened.close()


def test_the_manager_keeps_answering_from_memory_and_the_ufs(
    disk: Disk, clock: FakeClock, outside: Outside
) -> None:
    ufs = CountingUfs()
    store = open_store(disk.path / "ms", clock, flush_interval_ms=1)
    manager = MetadataManager(cache_options(status_cache_size=10), store, ufs, clock)
    outside.write("old", b"1")
    old = manager.reads.get_status(outside.uri("old"))
    wait_until(lambda: store.stats()["metastore_pending"] == 0)
    disk.fill()
    names = [f"f{n}" for n in range(200)]
    for name in names:
        outside.write(name, b"x")
        assert manager.reads.get_status(outside.uri(name)).uri == outside.uri(name)
    wait_until(lambda: manager.persistence_state() is PersistenceState.MEMORY_ONLY)
    assert manager.counters()["metastore_memory_only"] == 1
    # Statuses still come from memory (the last ones) and the UFS (the rest), and are right.
    calls = ufs.calls
    assert manager.reads.get_status(outside.uri(names[-1])).uri == outside.uri(names[-1])
    assert ufs.calls == calls
    outside.write("old", b"changed")
    written = ufs.status(outside.uri("old"))
    manager.writes.record_write(outside.uri("old"), written, Operation.UPDATED)
    assert manager.reads.get_status(outside.uri("old")) == written != old
    manager.close()
