"""Page store benchmark: read throughput against a plain local file, fill throughput, restore time.

Run with ``.venv/bin/python -m bench.pagestore_bench`` (``--help`` for sizes and sections). Reads
are timed warm (the OS page cache holds the pages, the usual case for a hot cache) and cold
(every file's cached pages dropped with posix_fadvise before each pass, so bytes come from the
disk). The short-circuit section compares, warm and in one thread, a plain ``preadv`` into a
buffer, ``PageCache.get`` and ``shortcircuit.read_into`` (open, check the header, read
into the caller's buffer, verify the blocks read, close) on 64 KiB random and whole-page
sequential reads: the median of the repetitions with their min-max.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import xxhash

from pagestore.api import PutResult
from pagestore.cache import PageCache
from pagestore.factory import on_disk
from pagestore.options import PageDirOptions, PageStoreOptions
from pagestore.page import PageId
from pagestore.pagefile import BLOCK_SIZE
from pagestore.shortcircuit import read_into

MB = 1 << 20
FILE_ID = "ab" * 32
URI = "s3://bench/file"


@dataclass
class Row:
    metric: str
    value: str
    goal: str = ""


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def in_threads(threads: int, jobs: Sequence[Callable[[], object]]) -> float:
    """Seconds to run ``jobs`` split evenly over ``threads`` threads."""
    parts = [jobs[n::threads] for n in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        started = time.perf_counter()
        for future in [pool.submit(_run_all, part) for part in parts]:
            future.result()
        return time.perf_counter() - started


def _run_all(jobs: Sequence[Callable[[], object]]) -> None:
    for job in jobs:
        job()


def drop_cached(paths: Sequence[Path]) -> None:
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def open_store(root: Path, page_size: int, capacity: int) -> PageCache:
    store = on_disk(PageStoreOptions((PageDirOptions(root, capacity),), page_size))
    store.start()
    store.wait_ready()
    return store


@dataclass
class ReadSetup:
    """The same bytes twice: as pages in a store, and as one plain file read page by page."""

    store: PageCache
    ids: list[PageId]
    page_files: list[Path]
    plain: Path
    plain_fd: int
    page_size: int

    def plain_pass(self, threads: int, cold: bool) -> float:
        if cold:
            drop_cached([self.plain])
        size = self.page_size
        jobs = [partial(os.pread, self.plain_fd, size, p.index * size) for p in self.ids]
        return in_threads(threads, jobs)

    def store_pass(self, threads: int, cold: bool) -> float:
        if cold:
            drop_cached(self.page_files)
        return in_threads(threads, [partial(self.store.get, p) for p in self.ids])


def set_up_reads(root: Path, pages: int, page_size: int) -> tuple[ReadSetup, Row]:
    data = [os.urandom(page_size) for _ in range(min(pages, 16))]
    ids = [PageId(FILE_ID, "v", n) for n in range(pages)]
    store = open_store(root / "store", page_size, pages * page_size)
    seconds = timed(
        lambda: [
            store.get_or_fill(p, partial(data.__getitem__, p.index % len(data)), URI) for p in ids
        ]
    )
    assert store.page_count == pages, "every page should have been stored"
    plain = root / "plain.bin"
    with plain.open("wb") as out:
        for page_id in ids:
            out.write(data[page_id.index % len(data)])
    page_files = list((root / "store").rglob(f"{FILE_ID}.*"))
    setup = ReadSetup(store, ids, page_files, plain, os.open(plain, os.O_RDONLY), page_size)
    fill = Row("fill (get_or_fill, 1 thread)", f"{pages * page_size / seconds / MB:,.0f} MB/s")
    return setup, fill


def bench_reads(root: Path, pages: int, page_size: int, passes: int, threads: int) -> list[Row]:
    setup, fill_row = set_up_reads(root, pages, page_size)
    total = pages * page_size * passes
    rows = [fill_row]
    try:
        for cold in (False, True):
            for n in sorted({1, threads}):
                setup.plain_pass(n, cold), setup.store_pass(n, cold)  # warm up alike
                plain_s = sum(setup.plain_pass(n, cold) for _ in range(passes))
                store_s = sum(setup.store_pass(n, cold) for _ in range(passes))
                label = f"{'cold' if cold else 'warm'}, {n} thread{'s' if n > 1 else ''}"
                ratio = f"({plain_s / store_s:.0%} of plain)"
                rows.append(Row(f"plain file read ({label})", f"{total / plain_s / MB:,.0f} MB/s"))
                rows.append(
                    Row(
                        f"store read ({label})",
                        f"{total / store_s / MB:,.0f} MB/s {ratio}",
                        ">= 80%",
                    )
                )
    finally:
        os.close(setup.plain_fd)
        setup.store.close()
    page = os.urandom(page_size)
    checksum = timed(lambda: [xxhash.xxh3_64_intdigest(page) for _ in range(200)])
    rows.append(
        Row(
            "xxh3-64 page checksum alone (1 thread)", f"{200 * page_size / checksum / MB:,.0f} MB/s"
        )
    )
    return rows


def spread(values: Sequence[float], unit: str, digits: int = 0) -> str:
    """The median and the min-max of ``values``."""
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:,.{digits}f} {unit} [{low:,.{digits}f}-{high:,.{digits}f}]"


def bench_shortcircuit(setup: ReadSetup, reads: int, repeats: int) -> list[Row]:
    """Warm reads, one thread: plain file vs store.get vs short-circuit read_into."""
    size, fd, store = setup.page_size, setup.plain_fd, setup.store
    locations = store.locate(FILE_ID, "v")
    located = {page.index: page for page in locations.pages}
    rng = random.Random(7)
    spots = [
        (rng.randrange(len(setup.ids)), rng.randrange(size // BLOCK_SIZE) * BLOCK_SIZE)
        for _ in range(reads)
    ]
    block, page = memoryview(bytearray(BLOCK_SIZE)), memoryview(bytearray(size))
    random_ways: dict[str, Callable[[int, int], object]] = {
        "plain preadv": lambda i, at: os.preadv(fd, [block], i * size + at),
        "store.get": lambda i, at: store.get(setup.ids[i], at, BLOCK_SIZE),
        "short-circuit read_into": lambda i, at: read_into(locations, located[i], at, block),
    }
    sequential_ways: dict[str, Callable[[int], object]] = {
        "plain preadv": lambda i: os.preadv(fd, [page], i * size),
        "store.get": lambda i: store.get(setup.ids[i]),
        "short-circuit read_into": lambda i: read_into(locations, located[i], 0, page),
    }
    rows = []
    for name, read in random_ways.items():
        p50s, rates = [], []
        for _ in range(repeats + 1):  # the first pass warms up
            latencies = []
            for index, at in spots:
                started = time.perf_counter()
                read(index, at)
                latencies.append(time.perf_counter() - started)
            p50s.append(statistics.median(latencies) * 1e6)
            rates.append(reads * BLOCK_SIZE / sum(latencies) / MB)
        rows.append(
            Row(
                f"64 KiB random, {name}",
                f"p50 {spread(p50s[1:], 'us', 1)}; {spread(rates[1:], 'MB/s')}",
            )
        )
    for name, sequential in sequential_ways.items():
        rates = []
        for _ in range(repeats + 1):
            seconds = timed(lambda: [sequential(p.index) for p in setup.ids])  # noqa: B023
            rates.append(len(setup.ids) * size / seconds / MB)
        rows.append(Row(f"{size >> 10} KiB sequential, {name}", spread(rates[1:], "MB/s")))
    return rows


def bench_restore(root: Path, pages: int, drop_caches: bool) -> list[Row]:
    page_size = 4096
    store = open_store(root, page_size, pages * page_size)
    payload = b"p" * 256
    files = max(1, pages // 100)
    fill_seconds = timed(
        lambda: [
            store.put(PageId(f"{n:064x}", "v", i), payload, f"s3://bench/{n}") is PutResult.OK
            for n in range(files)
            for i in range(pages // files)
        ]
    )
    store.close()
    if drop_caches:
        Path("/proc/sys/vm/drop_caches").write_text("2\n")  # dentries and inodes: a reboot's view
    started = time.perf_counter()
    store = on_disk(PageStoreOptions((PageDirOptions(root, pages * page_size),), page_size))
    store.start()
    first_answer = store.get(PageId(FILE_ID, "v", 0))
    serving = time.perf_counter() - started
    ready = store.wait_ready()
    full = time.perf_counter() - started
    restored = store.page_count
    store.close()
    assert first_answer is None and ready
    how = "cold dentries" if drop_caches else "warm dentries"
    return [
        Row(f"puts of 256-byte pages ({pages:,})", f"{pages / fill_seconds:,.0f} pages/s"),
        Row(f"restore: serving after start ({how})", f"{serving * 1000:.1f} ms", "< 1 s"),
        Row(f"restore: full index, {restored:,} pages ({how})", f"{full:.2f} s", "< 10 s"),
    ]


SECTIONS = ("reads", "shortcircuit", "restore")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=256, help="pages read (default 256)")
    parser.add_argument("--page-size", type=int, default=MB, help="bytes per page (default 1MB)")
    parser.add_argument("--passes", type=int, default=5, help="timed read passes (default 5)")
    parser.add_argument("--threads", type=int, default=4, help="reader threads (default 4)")
    parser.add_argument("--random-reads", type=int, default=2000, help="64 KiB reads per pass")
    parser.add_argument("--repeats", type=int, default=3, help="short-circuit repetitions")
    parser.add_argument("--restore-pages", type=int, default=100_000)
    parser.add_argument("--drop-caches", action="store_true", help="drop dentries (root)")
    parser.add_argument("--dir", default=None, help="where to put the pages (default: a temp dir)")
    parser.add_argument(
        "--sections", default=",".join(SECTIONS), help=f"comma separated, of {', '.join(SECTIONS)}"
    )
    args = parser.parse_args(argv)
    sections = set(args.sections.split(","))
    if not sections <= set(SECTIONS):
        parser.error(f"unknown sections: {', '.join(sorted(sections - set(SECTIONS)))}")
    root = Path(tempfile.mkdtemp(prefix="pagestore-bench-", dir=args.dir))
    rows: list[Row] = []
    try:
        if "reads" in sections:
            rows += bench_reads(
                root / "reads", args.pages, args.page_size, args.passes, args.threads
            )
        if "shortcircuit" in sections:
            setup, _ = set_up_reads(root / "shortcircuit", args.pages, args.page_size)
            try:
                rows += bench_shortcircuit(setup, args.random_reads, args.repeats)
            finally:
                os.close(setup.plain_fd)
                setup.store.close()
        if "restore" in sections:
            rows += bench_restore(root / "restore", args.restore_pages, args.drop_caches)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"page store benchmark: {os.cpu_count()} CPUs, {args.page_size:,}-byte pages, "
        "xxh3-64 checksums"
    )
    width = max(len(row.metric) for row in rows)
    for row in rows:
        print(f"  {row.metric:<{width}}  {row.value:<28}  {row.goal}")


if __name__ == "__main__":
    main()
