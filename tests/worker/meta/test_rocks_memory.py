"""The metastore's memory: RocksDB keeps every write in a memtable until it flushes it to disk,
so the memtable's size is what a worker holds for statuses written over and over (issue 36
item 9: the mixed-load soak rewrote 40 statuses ~100,000 times)."""

from __future__ import annotations

from pathlib import Path

from worker.meta.options import RecoverPolicy
from worker.meta.rocks_open import MEMTABLE_BYTES, open_store

STATUS = 300  # bytes of an encoded status, about


def test_rewriting_a_few_statuses_holds_a_bounded_memtable(tmp_path: Path) -> None:
    db, lock = open_store(str(tmp_path / "ms"), 3_600_000, RecoverPolicy.FAIL)
    try:
        for n in range(4 * MEMTABLE_BYTES // STATUS):
            db[f"s3://b/d{n % 4}/f{n % 40}.bin".encode()] = n.to_bytes(8) * (STATUS // 8)
        held = db.property_int_value("rocksdb.cur-size-all-mem-tables")
    finally:
        db.close()
        lock.release()
    assert held is not None and held <= 2 * MEMTABLE_BYTES
