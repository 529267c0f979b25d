"""Warm reads through the ``dora`` fsspec client with its defaults (short-circuit and near-cache
on) against fsspec's blockcache and a raw read of the same local file, in one run: a whole file
read cold, then three times warm (the first warm read right after the fill, as the side-by-side
bench measures it, and the steady state after it), and random 64 KiB reads through a file held
open.

Run with ``.venv/bin/python -m bench.warm_bench`` (``--size-mb``, ``--reads``, ``--repeats``).
The worker is a real ``dora worker start`` process over a local-directory UFS. Each figure is
the median of the repetitions with their min-max.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec

from bench.side.services import WorkerProcess
from worker.client.filesystem import DoraFileSystem

MB = 1 << 20
READ = 64 << 10


def seconds(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def random_p50_us(handle: Any, offsets: list[int]) -> float:
    times = []
    for offset in offsets:
        started = time.perf_counter()
        handle.seek(offset)
        handle.read(READ)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def one_run(root: Path, size: int, reads: int) -> dict[str, float]:
    data = root / "data"
    data.mkdir()
    local = data / "big.bin"
    local.write_bytes(os.urandom(size))
    worker = WorkerProcess(
        root / "work", [f"dora.worker.ufs.roots=file://{data}", "dora.worker.page.store.sizes=4GB"]
    )
    try:
        uri = f"file://{local}"
        dora = DoraFileSystem(workers=[worker.address], skip_instance_cache=True)
        block = fsspec.filesystem(
            "blockcache",
            target_protocol="file",
            cache_storage=str(root / "blockcache"),
            skip_instance_cache=True,
        )
        figures: dict[str, float] = {}
        for name, read in (
            ("dora", lambda: dora.cat_file(uri)),
            ("blockcache", lambda: block.cat_file(str(local))),
            ("raw", local.read_bytes),
        ):
            passes = [seconds(read) for _ in range(4)]
            figures[f"{name} cold MB/s"] = size / passes[0] / MB
            figures[f"{name} first warm MB/s"] = size / passes[1] / MB
            figures[f"{name} warm MB/s"] = size / statistics.median(passes[2:]) / MB
        rng = random.Random(7)
        offsets = [rng.randrange(0, size - READ) for _ in range(reads)]
        for name, handle in (
            ("dora", dora.open(uri, "rb", cache_type="none")),
            ("blockcache", block.open(str(local), "rb")),
            ("raw", local.open("rb")),
        ):
            with handle:
                figures[f"{name} random 64 KiB p50 us"] = random_p50_us(handle, offsets)
        return figures
    finally:
        worker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=64)
    parser.add_argument("--reads", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeats):
        root = Path(tempfile.mkdtemp(prefix="warm-bench-"))
        try:
            runs.append(one_run(root, args.size_mb * MB, args.reads))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    for name in runs[0]:
        values = [run[name] for run in runs]
        print(
            f"{name:32s} {statistics.median(values):10.1f}  ({min(values):.1f}-{max(values):.1f})"
        )


if __name__ == "__main__":
    main()
