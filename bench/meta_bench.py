"""Metadata tier benchmark: memory-tier hits, the RocksDB tier at scale, memory per status.

Run with ``.venv/bin/python -m bench.meta_bench`` (``--n 100000`` for a quick run). Measures:
- memory-tier hit latency and ops/s through ``MetadataReads.get_status`` (one thread);
- RocksDB tier with ``--n`` statuses: batched fill rate (puts plus WriteBatch commits), point
  lookups after a reopen (so they come from RocksDB, not the write buffers), size on disk;
- resident memory per status held in the memory tier with ``--n`` entries (tracemalloc, and
  the RSS delta as a cross-check).

Statuses look like S3's: ``s3://bucket/warehouse/db/table/dt=YYYY-MM-DD/part-NNNNN.parquet``
with a 32-hex ETag as the version.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from ufs.deadline import Deadline
from ufs.status import UfsStatus
from worker.meta.entry import Lifetimes, MetaEntry, Operation, wall_clock_ms
from worker.meta.manager import MetadataManager
from worker.meta.memory import StatusCache
from worker.meta.metastore import MemoryMetastore
from worker.meta.options import CacheOptions, MetastoreOptions
from worker.meta.rocks import RocksMetastore

DAY_MS = 86_400_000
LIFETIMES = Lifetimes(ttl_ms=DAY_MS, negative_ttl_ms=10_000)


def uri(index: int) -> str:
    day = index // 10_000
    partition = f"dt=2024-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}"
    return f"s3://bucket/warehouse/db/table/{partition}/part-{index:08d}.parquet"


def status(index: int) -> UfsStatus:
    etag = f"{random.getrandbits(128):032x}"
    path = uri(index)
    return UfsStatus(
        path,
        path.rsplit("/", 1)[-1],
        False,
        128 << 20,
        1_700_000_000_000_000_000 + index,
        etag,
        etag,
    )


class NoUfs:
    """The benchmark never misses; a UFS call would be a bug in it."""

    def status(self, uri: str, *, deadline: Deadline | None = None) -> UfsStatus:
        raise AssertionError(f"unexpected UFS status call for {uri}")

    def list(self, uri: str, *, deadline: Deadline | None = None) -> list[UfsStatus]:
        raise AssertionError(f"unexpected UFS list call for {uri}")


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s"


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench_memory_hits(lookups: int) -> list[tuple[str, str]]:
    entries = 10_000
    clock = wall_clock_ms
    store = MemoryMetastore(LIFETIMES, clock)
    manager = MetadataManager(CacheOptions(status_cache_size=entries), store, NoUfs(), clock)
    now = clock()
    for index in range(entries):
        manager.writes.record_write(uri(index), status(index), Operation.LOADED)
    keys = [uri(random.randrange(entries)) for _ in range(lookups)]

    def run() -> None:
        get = manager.reads.get_status
        for key in keys:
            get(key)

    seconds = timed(run)
    cache = StatusCache(entries, DAY_MS, LIFETIMES, clock)
    for index in range(entries):
        cache.put(uri(index), MetaEntry(status(index), now, Operation.LOADED))
    raw = timed(lambda: [cache.get(key) for key in keys])
    manager.close()
    return [
        ("memory hit, get_status (latency)", f"{seconds / lookups * 1e6:.2f} us"),
        ("memory hit, get_status (1 thread)", rate(lookups, seconds)),
        ("memory hit, StatusCache.get alone", f"{raw / lookups * 1e6:.2f} us"),
    ]


def bench_rocks(n: int, lookups: int, workdir: Path) -> list[tuple[str, str]]:
    options = MetastoreOptions(str(workdir / "metastore"), LIFETIMES, flush_interval_ms=100)
    store = RocksMetastore.open(options)
    now = wall_clock_ms()
    entries = [MetaEntry(status(i), now, Operation.LOADED) for i in range(n)]

    def fill() -> None:
        for index, entry in enumerate(entries):
            store.put(uri(index), entry)
        store.flush()

    fill_s = timed(fill)
    store.close()
    entries.clear()
    store = RocksMetastore.open(options)
    keys = [uri(random.randrange(n)) for _ in range(lookups)]
    hit_s = timed(lambda: [store.get(key) for key in keys])
    misses = [uri(n + i) for i in range(lookups)]
    miss_s = timed(lambda: [store.get(key) for key in misses])
    store.close()
    size = sum(f.stat().st_size for f in Path(options.path).iterdir() if f.is_file())
    return [
        (f"rocksdb fill, {n:,} statuses (batched)", rate(n, fill_s)),
        ("rocksdb point lookup, hit", f"{rate(lookups, hit_s)} ({hit_s / lookups * 1e6:.1f} us)"),
        (
            "rocksdb point lookup, miss",
            f"{rate(lookups, miss_s)} ({miss_s / lookups * 1e6:.1f} us)",
        ),
        ("rocksdb size on disk", f"{size / 1e6:.1f} MB ({size / n:.0f} B/status)"),
    ]


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def filled_cache(n: int) -> StatusCache:
    now = wall_clock_ms()
    cache = StatusCache(n, DAY_MS, LIFETIMES, wall_clock_ms)
    for index in range(n):
        cache.put(uri(index), MetaEntry(status(index), now, Operation.LOADED))
    return cache


def bench_memory_per_status(n: int) -> list[tuple[str, str]]:
    # RSS first, without tracemalloc (whose own bookkeeping would inflate it).
    gc.collect()
    rss_before = rss_bytes()
    cache = filled_cache(n)
    rss_delta = rss_bytes() - rss_before
    assert len(cache) == n
    del cache
    gc.collect()
    tracemalloc.start()
    cache = filled_cache(n)
    traced, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(cache) == n
    return [
        (f"memory per status at {n:,} (tracemalloc)", f"{traced / n:.0f} B (goal <= 1024 B)"),
        (f"memory per status at {n:,} (RSS delta)", f"{rss_delta / n:.0f} B"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="statuses for the scale runs")
    parser.add_argument("--lookups", type=int, default=200_000, help="lookups per measurement")
    args = parser.parse_args()
    random.seed(7)
    workdir = Path(tempfile.mkdtemp(prefix="meta-bench-"))
    runs: list[Callable[[], list[tuple[str, str]]]] = [
        lambda: bench_memory_hits(args.lookups),
        lambda: bench_rocks(args.n, args.lookups, workdir),
        lambda: bench_memory_per_status(args.n),
    ]
    try:
        for run in runs:
            for name, value in run():
                print(f"{name:<44}  {value}", flush=True)
    finally:
        shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
