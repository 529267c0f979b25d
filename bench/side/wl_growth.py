"""Cost growth, in this process on the worker's own components (no contenders: only dora keeps
these structures): what a status costs in memory and to look up as the cache grows from 10k to
1M statuses (memory tier and RocksDB tier), and what a page costs as the page store grows from
100 MB to 1 GB (index memory per page, a random 64 KB read, fill rate, restore time).

Memory is what ``tracemalloc`` sees retained by the structure: a count of bytes, the same on
every fill, so the status tiers are filled once per size (filling 1M statuses under
``tracemalloc`` takes a minute) and the repetitions are of the lookups on that fill. Lookups are
timed in batches of ``BATCH`` (one microsecond call is below the clock's resolution) and
reported per lookup, each repetition over other random keys.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from bench.meta_bench import LIFETIMES, filled_cache, status, uri
from bench.side.core import MB, Bench, Metric
from bench.side.results import percentile
from pagestore.cache import PageCache
from pagestore.factory import on_disk
from pagestore.options import PageDirOptions, PageStoreOptions
from pagestore.page import PageId
from worker.meta.entry import MetaEntry, Operation, wall_clock_ms
from worker.meta.options import MetastoreOptions
from worker.meta.rocks import RocksMetastore

BATCH = 1000
LOOKUPS = 20_000
PAGE_READS = 2000
FILE_ID = "cd" * 32
MEM_STATUS = Metric("memory/status", "B", "lower")
LOOKUP = Metric("lookup", "us", "lower")
DISK_STATUS = Metric("disk/status", "B", "lower")
MEM_PAGE = Metric("index memory/page", "B", "lower")
READ_P50 = Metric("64KB read p50", "us", "lower")
FILL = Metric("fill", "MiB/s", "higher")
RESTORE = Metric("restore", "s", "lower")
METRICS = (MEM_STATUS, LOOKUP, DISK_STATUS, MEM_PAGE, READ_P50, FILL, RESTORE)


def _batched(lookup: Callable[[str], object], keys: list[str]) -> list[float]:
    """Seconds per lookup, one value per batch of ``BATCH`` keys."""
    per_call = []
    clock = time.perf_counter
    for start in range(0, len(keys) - BATCH + 1, BATCH):
        batch = keys[start : start + BATCH]
        t0 = clock()
        for key in batch:
            lookup(key)
        per_call.append((clock() - t0) / BATCH)
    return per_call


def _lookup_reps(lookup: Callable[[str], object], n: int, reps: int) -> list[float]:
    """Per-lookup microseconds (the median batch) of ``reps`` repetitions."""
    return [
        percentile(_batched(lookup, [uri(random.randrange(n)) for _ in range(LOOKUPS)]), 50) * 1e6
        for _ in range(reps)
    ]


def _memory_tier(bench: Bench, n: int) -> None:
    tracemalloc.start()
    cache = filled_cache(n)
    traced, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    lookups = _lookup_reps(cache.get, n, bench.settings.reps)
    row, params = "dora memory tier", {"statuses": n}
    bench.emit("growth-status", row, MEM_STATUS, None, [traced / n], params=params)
    bench.emit("growth-status", row, LOOKUP, None, lookups, params=params)


def _rocks_tier(bench: Bench, n: int, root: Path) -> None:
    options = MetastoreOptions(str(root / f"metastore-{n}"), LIFETIMES, flush_interval_ms=100)
    store = RocksMetastore.open(options)
    now = wall_clock_ms()
    for index in range(n):
        store.put(uri(index), MetaEntry(status(index), now, Operation.LOADED))
    store.flush()
    store.close()
    store = RocksMetastore.open(options)  # lookups then come from the files, not write buffers
    try:
        lookups = _lookup_reps(store.get, n, bench.settings.reps)
    finally:
        store.close()
    size = sum(f.stat().st_size for f in Path(options.path).iterdir() if f.is_file())
    shutil.rmtree(options.path)
    row, params = "dora rocksdb tier", {"statuses": n}
    bench.emit("growth-status", row, LOOKUP, None, lookups, params=params)
    bench.emit("growth-status", row, DISK_STATUS, None, [size / n], params=params)


def _open_store(root: Path, capacity: int) -> PageCache:
    store = on_disk(PageStoreOptions((PageDirOptions(root, capacity),), MB))
    store.start()
    store.wait_ready()
    return store


def _page_store(size_mb: int, root: Path) -> dict[str, float]:
    data = [os.urandom(MB) for _ in range(16)]
    ids = [PageId(FILE_ID, "v1", n) for n in range(size_mb)]
    capacity = (size_mb + size_mb // 4 + 4) * MB
    store = _open_store(root, capacity)
    tracemalloc.start()  # after the start: what an empty store holds is not per page
    before, _ = tracemalloc.get_traced_memory()
    started = time.perf_counter()
    for page_id in ids:
        store.put(page_id, data[page_id.index % len(data)], "s3://bench/growth")
    fill_s = time.perf_counter() - started
    retained, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rng = random.Random(5)
    latencies = []
    for _ in range(PAGE_READS):
        page_id = ids[rng.randrange(len(ids))]
        t0 = time.perf_counter()
        store.read(page_id, rng.randrange(0, MB - (64 << 10)), 64 << 10)
        latencies.append(time.perf_counter() - t0)
    store.close()
    started = time.perf_counter()
    store = _open_store(root, capacity)
    restore_s = time.perf_counter() - started
    if store.page_count != size_mb:
        raise AssertionError(f"restored {store.page_count} pages, expected {size_mb}")
    store.close()
    return {
        MEM_PAGE.name: (retained - before) / size_mb,
        READ_P50.name: percentile(latencies, 50) * 1e6,
        FILL.name: size_mb / fill_s,
        RESTORE.name: restore_s,
    }


def _emit(
    bench: Bench, workload: str, row: str, reps: list[dict[str, float]], params: dict[str, int]
) -> None:
    for name in reps[0]:
        metric = next(m for m in METRICS if m.name == name)
        bench.emit(workload, row, metric, None, [r[name] for r in reps], params=params)


def _pages_rep(size_mb: int, root: Path) -> dict[str, float]:
    try:
        return _page_store(size_mb, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_growth_status(bench: Bench) -> None:
    root = Path(tempfile.mkdtemp(prefix="dora-growth-"))
    random.seed(7)
    try:
        for n in bench.settings.growth_statuses:
            _memory_tier(bench, n)
            _rocks_tier(bench, n, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_growth_pages(bench: Bench) -> None:
    root = Path(tempfile.mkdtemp(prefix="dora-growth-"))
    try:
        for size_mb in bench.settings.growth_pages_mb:
            pages = [
                _pages_rep(size_mb, root / f"pages-{size_mb}-{rep}")
                for rep in range(bench.settings.reps)
            ]
            _emit(bench, "growth-pages", "dora page store", pages, {"pages_mb": size_mb})
    finally:
        shutil.rmtree(root, ignore_errors=True)
