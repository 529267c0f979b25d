"""A worker-like process for the crash test: fills a metastore as fast as it can and SIGKILLs
itself at a chosen commit, either right after the buffer swap ("before" the commit) or while
the commit runs ("during"). Prints "commit END" before and "committed END" after each commit,
END being one past the highest key index in the batch.

Run: python -m tests.worker.meta.crash_child DIR before|during COMMIT_NUMBER
"""

from __future__ import annotations

import os
import signal
import sys
import threading

from ufs.status import UfsStatus
from worker.meta.entry import Lifetimes, MetaEntry, Operation
from worker.meta.options import MetastoreOptions
from worker.meta.rocks import RocksMetastore
from worker.meta.rocks_open import open_store

LOADED_AT = 1_700_000_000_000
LIFETIMES = Lifetimes(ttl_ms=24 * 3_600_000, negative_ttl_ms=10_000)
PREFIX = "file:///nonexistent-doracache-crash/k"


def uri(index: int) -> str:
    return f"{PREFIX}{index:08d}"


def entry(index: int) -> MetaEntry:
    status = UfsStatus(
        uri(index), f"k{index:08d}", False, index, index * 7, f"{index}-{index * 7}", None
    )
    return MetaEntry(status, LOADED_AT, Operation.LOADED)


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class DyingMetastore(RocksMetastore):
    """Announces each commit and kills the process at commit number ``kill_at``."""

    mode = "before"
    kill_at = 0
    commits = 0

    def _commit_flushing(self) -> None:
        if not self._flushing:
            return
        end = max(int(key[len(PREFIX) :]) for key in self._flushing) + 1
        self.commits += 1
        print(f"commit {end}", flush=True)
        if self.commits == self.kill_at:
            if self.mode == "before":
                die()
            threading.Thread(target=die).start()
        super()._commit_flushing()
        print(f"committed {end}", flush=True)


def main() -> None:
    path, mode, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    options = MetastoreOptions(path, LIFETIMES, flush_interval_ms=1)
    db, lock = open_store(path, LIFETIMES.ttl_ms, options.recover)
    DyingMetastore.mode, DyingMetastore.kill_at = mode, kill_at
    store = DyingMetastore(db, lock, options, lambda: LOADED_AT)
    index = 0
    while True:
        store.put(uri(index), entry(index))
        index += 1


if __name__ == "__main__":
    main()
