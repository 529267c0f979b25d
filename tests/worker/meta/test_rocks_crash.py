"""A process killed between the buffer swap and the commit (or during the commit) leaves a
metastore that opens, holds only whole entries from whole batches, and answers lookups
correctly: what was lost is a miss."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from rocksdict import AccessType, Options, Rdict

from tests.worker.meta import crash_child
from tests.worker.meta.support import CountingUfs, FakeClock, cache_options, rocks_store
from ufs.errors import UfsNotFound
from worker.meta import codec
from worker.meta.manager import MetadataManager

REPO = Path(__file__).resolve().parents[3]
KILL_AT_COMMIT = 4


def run_child(path: Path, mode: str) -> tuple[list[int], list[int]]:
    """Run the child until it kills itself; the batch ends it started and finished."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.worker.meta.crash_child",
            str(path),
            mode,
            str(KILL_AT_COMMIT),
        ],
        cwd=REPO,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    started: list[int] = []
    finished: list[int] = []
    for line in proc.stdout.decode().splitlines():
        word, end = line.split()
        (started if word == "commit" else finished).append(int(end))
    return started, finished


def stored_indexes(path: Path) -> list[int]:
    """Every key's index, after checking every value decodes to exactly what was written."""
    db = Rdict(str(path), Options(raw_mode=True), access_type=AccessType.with_ttl(86400))
    indexes = []
    try:
        for key, value in db.items():
            assert isinstance(key, bytes) and isinstance(value, bytes)
            uri = key.decode()
            index = int(uri[len(crash_child.PREFIX) :])
            assert codec.decode(uri, value) == crash_child.entry(index)
            indexes.append(index)
    finally:
        db.close()
    return indexes


@pytest.mark.parametrize("mode", ["before", "during"])
def test_a_killed_writer_leaves_whole_batches_and_correct_lookups(
    tmp_path: Path, mode: str
) -> None:
    path = tmp_path / "ms"
    started, finished = run_child(path, mode)
    assert len(started) == KILL_AT_COMMIT
    assert len(finished) >= KILL_AT_COMMIT - 1

    clock = FakeClock(crash_child.LOADED_AT + 1000)
    rocks_store(path, clock).close()  # opens cleanly (recovering RocksDB's WAL)
    indexes = stored_indexes(path)
    kept = len(indexes)
    assert indexes == list(range(kept)), "only whole batches, in order"
    if mode == "before":
        assert kept == finished[-1]
    else:
        assert kept in (finished[KILL_AT_COMMIT - 2], started[-1])

    ufs = CountingUfs()
    manager = MetadataManager(cache_options(), rocks_store(path, clock), ufs, clock)
    try:
        first = crash_child.entry(0).status
        assert first is not None
        assert manager.reads.get_status(first.uri) == first
        last = crash_child.entry(kept - 1).status
        assert last is not None
        assert manager.reads.get_status(last.uri) == last
        assert ufs.calls == 0
        with pytest.raises(UfsNotFound):
            manager.reads.get_status(crash_child.uri(kept))
        assert (ufs.calls, manager.counters()["misses"]) == (1, 1)
    finally:
        manager.close()
