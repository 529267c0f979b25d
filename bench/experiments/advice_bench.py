"""The cache advice (issue 34 item 7): the miss-ratio curve's predictions against real workers, and
what the curve costs a read.

Accuracy: ``--files`` files of ``--file-mb`` MiB over a local directory, pages of 1 MiB; a
Zipf(1.0) trace of ``--reads`` one-page reads (``/v1/read`` with the page's offset and length,
one client, in order) over all their pages, the popular pages spread over the files at random.
A worker large enough for every page runs the trace and its ``/v1/cache/advice`` curve gives the
predicted hit ratio at each of ``--capacities`` (MiB); then, for each capacity, a fresh worker
with that page-store capacity and the LRU evictor runs the same trace, and its measured hit
ratio (``page_hits / (page_hits + page_misses)`` of ``/v1/stats``) is set beside the
prediction. The curve is LRU's: under a scan-resistant evictor it is a bound, not a prediction.
One trace per ``--seeds`` value.

Sampled: in process, past the pages the curve tracks at rate 1: a page cache over the memory
store (LRU, pages of 1 KiB) at each of ``--sampled-capacities`` (pages) runs one Zipf(1.0)
trace of ``--sampled-reads`` reads over ``--sampled-pages`` pages (the same read-then-fill as
the worker's reader); the prediction is the curve of the first cache, which samples about
``MAX_SAMPLES`` of them.

Cost: in process, a page cache on disk holding ``--pages`` pages of 1 MiB; the median CPU time
(of the calling thread) of a warm whole-page read (``PageCache.read``, which records the page in
the curve) and of a 64 KiB read, against the time of ``MissRatioCurve.record`` alone for a
page that is sampled (every page is, while fewer than ``MAX_SAMPLES`` pages are tracked: the
dearest case) and for one that is not. Medians of ``--repeat`` runs, min-max in brackets.

Run with ``.venv/bin/python -m bench.experiments.advice_bench`` (``--help`` for the sizes).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from pagestore.api import Lookup
from pagestore.factory import in_memory, on_disk
from pagestore.mrc import MissRatioCurve
from pagestore.options import PageDirOptions, PageStoreOptions
from pagestore.page import PageId
from worker.devlab.local.s3 import free_port

MB = 1 << 20


def zipf_trace(pages: int, reads: int, seed: int) -> list[int]:
    """Zipf(1.0) over ``pages`` page numbers, popularity ranks shuffled over them."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, pages + 1)
    ranks = rng.choice(pages, size=reads, p=weights / weights.sum())
    return [int(page) for page in rng.permutation(pages)[ranks]]


def start_worker(work: Path, root: Path, capacity_mb: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    state = work / "state.json"
    dora = str(Path(sys.executable).with_name("dora"))
    args = [dora, "worker", "start", f"-Ddora.work.dir={work}", f"-Ddora.worker.http.port={port}",
            f"-Ddora.worker.ufs.roots=file://{root}", "-Ddora.worker.page.store.page.size=1MB",
            f"-Ddora.worker.page.store.sizes={capacity_mb}MB",
            "-Ddora.worker.page.store.evictor=lru", "--state-file", str(state)]  # fmt: skip
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not state.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the worker did not start")
        time.sleep(0.05)
    return process, f"127.0.0.1:{port}"


def run_trace(
    work: Path, root: Path, capacity_mb: int, uris: Sequence[str], pages_per_file: int,
    trace: Sequence[int],
) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """A fresh worker of ``capacity_mb`` runs ``trace``: its stats and its advice after."""
    process, address = start_worker(work, root, capacity_mb)
    try:
        with httpx.Client(base_url=f"http://{address}", timeout=60) as client:
            for page in trace:
                uri, index = uris[page // pages_per_file], page % pages_per_file
                params = {"path": uri, "offset": str(index * MB), "length": str(MB)}
                answer = client.get("/v1/read", params=params)
                answer.raise_for_status()
            return client.get("/v1/stats").json(), client.get("/v1/cache/advice").json()
    finally:
        process.terminate()
        process.wait(60)


def curve_at(points: Sequence[dict[str, Any]], capacity: int) -> float:
    """The hit ratio the advice's points give at ``capacity`` bytes (linear between points, as
    the curve itself answers)."""
    ratio = 0.0
    for low, high in itertools.pairwise(points):
        if capacity >= high["capacity_bytes"]:
            ratio = high["hit_ratio"]
        elif capacity > low["capacity_bytes"]:
            span = high["capacity_bytes"] - low["capacity_bytes"]
            share = (capacity - low["capacity_bytes"]) / span
            ratio = low["hit_ratio"] + share * (high["hit_ratio"] - low["hit_ratio"])
    return ratio


def accuracy(args: argparse.Namespace) -> None:
    print(
        "| seed | capacity | predicted (LRU curve) | measured (worker, LRU) | difference | pages |"
    )
    print("|---|---|---|---|---|---|")
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="advice-bench-") as temp:
        root = Path(temp) / "data"
        root.mkdir()
        uris = []
        for n in range(args.files):
            (root / f"f{n:03}.bin").write_bytes(os.urandom(args.file_mb * MB))
            uris.append(f"file://{root}/f{n:03}.bin")
        pages = args.files * args.file_mb
        for seed in args.seeds:
            trace = zipf_trace(pages, args.reads, seed)
            _, advice = run_trace(
                Path(temp) / f"work-{seed}-all", root, pages, uris, args.file_mb, trace
            )
            for capacity_mb in args.capacities:
                predicted = curve_at(advice["points"], capacity_mb * MB)
                stats, _ = run_trace(
                    Path(temp) / f"work-{seed}-{capacity_mb}", root, capacity_mb, uris,
                    args.file_mb, trace,
                )  # fmt: skip
                measured = stats["page_hits"] / (stats["page_hits"] + stats["page_misses"])
                worst = max(worst, abs(predicted - measured))
                print(
                    f"| {seed} | {capacity_mb} MiB | {predicted:.4f} | {measured:.4f} | "
                    f"{100 * (predicted - measured):+.2f} points | {stats['pages_cached']} |",
                    flush=True,
                )
    print(f"\nlargest difference: {100 * worst:.2f} points (goal: within 5)")


def sampled(args: argparse.Namespace) -> None:
    trace = zipf_trace(args.sampled_pages, args.sampled_reads, seed=1)
    data = b"x" * 1024

    def fetch(first: int, count: int) -> list[bytes]:
        return [data] * count

    print(
        "| capacity (pages) | predicted (LRU curve, sampled) | measured (LRU store) | difference |"
    )
    print("|---|---|---|---|")
    curve = None
    for capacity in args.sampled_capacities:
        options = PageStoreOptions((PageDirOptions(Path("/nonexistent"), capacity * 1024),), 1024)
        cache = in_memory(options)
        hits = 0
        for page in trace:
            page_id = PageId("cd" * 32, "v1", page)
            if cache.read(page_id).lookup is Lookup.HIT:
                hits += 1
            else:
                cache.fill_run([page_id], fetch, "s3://bench/sampled")
        curve = curve or cache.advice.curve()
        cache.close()
        predicted, measured = curve.hit_ratio(capacity * 1024), hits / len(trace)
        print(
            f"| {capacity} | {predicted:.4f} | {measured:.4f} | "
            f"{100 * (predicted - measured):+.2f} points |",
            flush=True,
        )
    assert curve is not None
    print(
        f"\n{len(set(trace))} distinct pages; the curve tracked {curve.tracked_pages} of them, "
        f"sampling rate {curve.rate:.4f}, {curve.sampled} of {round(curve.references)} reads"
    )


def per_op(fn: Callable[[int], object], count: int) -> float:
    """CPU seconds of this thread per call of ``fn(i % count)``, calls made for at least 0.2 s
    of CPU: CPU time, since what is compared is what each costs the machine (a thread waiting
    for a core counts nothing), and each batch long enough that every operation meets the
    same interruptions."""
    calls, started = 0, time.thread_time()
    while (spent := time.thread_time() - started) < 0.2:
        for i in range(count):
            fn(i)
        calls += count
    return spent / calls


def cost(args: argparse.Namespace) -> None:
    rng = random.Random(1)
    with tempfile.TemporaryDirectory(prefix="advice-cost-") as temp:
        options = PageStoreOptions((PageDirOptions(Path(temp), (args.pages + 8) * MB),), MB)
        cache = on_disk(options)
        cache.start()
        cache.wait_ready(30)
        try:
            ids = [PageId("ab" * 32, "v1", i) for i in range(args.pages)]
            for page in ids:
                cache.put(page, os.urandom(MB), "s3://bench/file")
            order = [rng.choice(ids) for _ in range(args.ops)]
            sampled = MissRatioCurve(MB)
            unsampled = MissRatioCurve(MB, rate=1e-7)
            for page in ids:  # tracked already: each reference below is a reuse
                sampled.record(page)
            runs: dict[str, list[float]] = {}
            for _ in range(args.repeat):
                for name, fn in (
                    ("warm page read (1 MiB)", lambda i: cache.read(order[i])),
                    ("warm 64 KiB read", lambda i: cache.read(order[i], 0, 64 << 10)),
                    ("record, page sampled", lambda i: sampled.record(order[i])),
                    ("record, page not sampled", lambda i: unsampled.record(order[i])),
                ):
                    runs.setdefault(name, []).append(per_op(fn, args.ops))
        finally:
            cache.close()
    read = statistics.median(runs["warm page read (1 MiB)"])
    small = statistics.median(runs["warm 64 KiB read"])
    print("| operation | CPU per call (median, min-max) | share of a warm 1 MiB read | of 64 KiB |")
    print("|---|---|---|---|")
    for name, values in runs.items():
        median = statistics.median(values)
        print(
            f"| {name} | {median * 1e6:.2f} µs ({min(values) * 1e6:.2f}-{max(values) * 1e6:.2f}) | "
            f"{100 * median / read:.2f}% | {100 * median / small:.2f}% |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", choices=("accuracy", "sampled", "cost", "all"), default="all")
    parser.add_argument("--files", type=int, default=32)
    parser.add_argument("--file-mb", type=int, default=4)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--capacities", type=lambda s: [int(v) for v in s.split(",")],
                        default=[8, 32, 64])  # fmt: skip
    parser.add_argument("--seeds", type=lambda s: [int(v) for v in s.split(",")],
                        default=[1, 2, 3])  # fmt: skip
    parser.add_argument("--sampled-pages", type=int, default=150_000)
    parser.add_argument("--sampled-reads", type=int, default=300_000)
    parser.add_argument("--sampled-capacities", type=lambda s: [int(v) for v in s.split(",")],
                        default=[2_000, 10_000, 30_000])  # fmt: skip
    parser.add_argument("--pages", type=int, default=256)
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    if args.section in ("cost", "all"):
        cost(args)
        print()
    if args.section in ("sampled", "all"):
        sampled(args)
        print()
    if args.section in ("accuracy", "all"):
        accuracy(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
