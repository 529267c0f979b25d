"""The memory tier (``dora.worker.page.store.memory.size``) off and on, side by side in one run:
random 64 KiB ``fs.cat_file(path, start, end)`` over HTTP (``short_circuit=False``: the reads the
worker's page cache serves; a client on the worker's host reads page files itself and never
asks it) and whole 8 MiB reads, against the same workers, warm, on the same local file.

Run with ``.venv/bin/python -m bench.experiments.tier_bench`` (``--size-mb``, ``--reads``,
``--repeats``;
``--profile`` adds, after the timed runs, a py-spy summary of each worker under 8 MiB reads).
Each figure is the median of the repetitions with their min-max; the two workers take turns.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

from bench.side.services import WorkerProcess
from bench.warm_bench import profile
from worker.client.filesystem import DoraFileSystem

MB = 1 << 20
READ = 64 << 10
TIERS = {
    "disk": [],
    "memory over disk": [
        "dora.worker.page.store.memory.size=256MB",
        "dora.worker.page.store.memory.page.limit=1MB",
    ],
}


def p50_us(fs: DoraFileSystem, path: str, offsets: list[int], length: int) -> float:
    times = []
    for offset in offsets:
        started = time.perf_counter()
        fs.cat_file(path, start=offset, end=offset + length)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def figure(values: list[float]) -> str:
    return f"{statistics.median(values):8.1f} ({min(values):.1f}-{max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=64)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    size = args.size_mb * MB
    with tempfile.TemporaryDirectory(prefix="tier-bench-") as tmp:
        root = Path(tmp)
        (root / "data").mkdir()
        local = root / "data" / "file.bin"
        local.write_bytes(os.urandom(size))
        path = f"file://{local}"
        rng = random.Random(7)
        small = [rng.randrange(0, size - READ) for _ in range(args.reads)]
        large = [rng.randrange(0, size - 8 * MB) for _ in range(max(10, args.reads // 100))]
        workers = {
            name: WorkerProcess(
                root / name.replace(" ", "-"),
                [f"dora.worker.ufs.roots=file://{root / 'data'}", *defines],
            )
            for name, defines in TIERS.items()
        }
        results: dict[str, dict[str, list[float]]] = {n: {"64k": [], "8m": []} for n in TIERS}
        try:
            clients = {
                name: DoraFileSystem(
                    workers=[w.address], skip_instance_cache=True, short_circuit=False
                )
                for name, w in workers.items()
            }
            for fs in clients.values():
                fs.cat_file(path)  # fill
            for _ in range(args.repeats):
                for name, fs in clients.items():
                    results[name]["64k"].append(p50_us(fs, path, small, READ))
                    results[name]["8m"].append(p50_us(fs, path, large, 8 * MB))
            for name, fs in clients.items() if args.profile else ():
                reads = partial(p50_us, fs, path, large[:5], 8 * MB)
                profile(workers[name].pid, reads, f"8 MiB reads, {name}")
        finally:
            for worker in workers.values():
                worker.stop()
    print(f"{args.size_mb} MB file, {args.reads} reads, {args.repeats} repetitions, warm, HTTP")
    print(f"{'tier':<18}{'64 KiB p50 us':>28}{'8 MiB p50 us':>28}")
    for name, rows in results.items():
        print(f"{name:<18}{figure(rows['64k']):>28}{figure(rows['8m']):>28}")
    off, on = results["disk"], results["memory over disk"]
    for what in ("64k", "8m"):
        ratio = statistics.median(on[what]) / statistics.median(off[what])
        print(f"memory tier / disk, {what}: {ratio:.2f}x the time")


if __name__ == "__main__":
    main()
