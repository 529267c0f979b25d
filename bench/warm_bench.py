"""Warm reads through the ``dora`` fsspec client with its defaults (short-circuit and near-cache
on) against fsspec's blockcache and a raw read of the same local file, in one run: a whole file
read cold, then three times warm (the first warm read right after the fill, as the side-by-side
bench measures it, and the steady state after it), and random 64 KiB reads through a file held
open. Then (issue 27) random 64 KiB ``fs.cat_file(path, start, end)`` p50 and
``fs.open(path).read(8 MiB)`` streamed, through the client with its defaults and over HTTP only
(``short_circuit=False``: the reads the worker's page cache serves), against ``cat_file`` of the
local filesystem and, streamed, a raw 8 MiB read loop, the local filesystem's file and fsspec's
simplecache and blockcache.

Run with ``.venv/bin/python -m bench.warm_bench`` (``--size-mb``, ``--reads``, ``--repeats``;
``--profile`` adds py-spy summaries, in the last repetition, of this process under the default
client's streamed reads and of the worker under the HTTP client's reads).
The worker is a real ``dora worker start`` process over a local-directory UFS. Each figure is
the median of the repetitions with their min-max.
"""

from __future__ import annotations

import argparse
import functools
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

from bench.side.profiling import Recording, format_top, summarize
from bench.side.services import WorkerProcess
from worker.client.filesystem import DoraFileSystem

MB = 1 << 20
READ = 64 << 10
CHUNK = 8 << 20
PROFILE_S = 3.0


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


def cat_p50_us(fs: Any, path: str, offsets: list[int]) -> float:
    times = []
    for offset in offsets:
        started = time.perf_counter()
        fs.cat_file(path, offset, offset + READ)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def streamed(open_file: Callable[[], Any], size: int) -> tuple[float, float]:
    """MB/s of reading a whole file in CHUNK reads (the best of three passes, all warm), and
    MB per second of this process's CPU time (all its threads, not a worker's) over the
    three."""
    best = 0.0
    cpu = time.process_time()
    for _ in range(3):
        started = time.perf_counter()
        with open_file() as handle:
            while handle.read(CHUNK):
                pass
        best = max(best, size / (time.perf_counter() - started) / MB)
    return best, 3 * size / (time.process_time() - cpu) / MB


def profile(pid: int, work: Callable[[], object], name: str) -> None:
    """Print where process ``pid`` (a worker, or this one) spends extra, untimed runs of
    ``work``, repeated for at least PROFILE_S (py-spy, :mod:`bench.side.profiling`)."""
    recording = Recording(pid, Path(tempfile.mkdtemp(prefix="warm-profile-")) / "raw")
    started = time.perf_counter()
    while time.perf_counter() - started < PROFILE_S:
        work()
    summary = summarize(recording.stop())
    print(f"profile, {name}: {summary.samples} samples, {summary.waiting:.0%} waiting")
    print(f"  self:  {format_top(summary.top_self, 8)}")
    print(f"  total: {format_top(summary.top_total, 8)}")


def stream_peers(root: Path, local: Path, size: int) -> dict[str, float]:
    """8 MiB streamed reads of the local file: a raw read loop, the local filesystem's file,
    and fsspec's simplecache and blockcache over it (warm: the first pass fills them)."""
    target = {"target_protocol": "file", "skip_instance_cache": True}
    simple = fsspec.filesystem("simplecache", cache_storage=str(root / "simple"), **target)
    block = fsspec.filesystem("blockcache", cache_storage=str(root / "blocks"), **target)
    plain = fsspec.filesystem("file", skip_instance_cache=True)
    figures: dict[str, float] = {}
    for name, open_file in (
        ("raw", lambda: local.open("rb")),
        ("local fsspec", lambda: plain.open(str(local), "rb")),
        ("simplecache", lambda: simple.open(str(local), "rb")),
        ("blockcache", lambda: block.open(str(local), "rb")),
    ):
        wall, cpu = streamed(open_file, size)
        figures[f"{name} 8 MiB stream MB/s"] = wall
        if name == "raw":
            figures["raw 8 MiB stream MB per CPU-s"] = cpu
    return figures


def ranged_and_streamed(
    worker: WorkerProcess, local: Path, size: int, offsets: list[int], profiled: bool
) -> dict[str, float]:
    """Ranged ``cat_file`` and 8 MiB streamed reads through the default client and over HTTP
    only (the peers: the local filesystem's ``cat_file``, :func:`stream_peers`); ``profiled``:
    py-spy passes of this process under the default client's streamed reads, and of the worker
    under the HTTP client's ranged and streamed reads."""
    uri = f"file://{local}"
    plain = fsspec.filesystem("file", skip_instance_cache=True)
    figures = {"raw cat_file 64 KiB p50 us": cat_p50_us(plain, str(local), offsets)}
    figures |= stream_peers(local.parent.parent, local, size)
    for client, short_circuit in (("defaults", True), ("HTTP", False)):
        fs = DoraFileSystem(
            workers=[worker.address], skip_instance_cache=True, short_circuit=short_circuit
        )
        fs.cat_file(uri)  # warm
        name = f"dora {client}"
        figures[f"{name} cat_file 64 KiB p50 us"] = cat_p50_us(fs, uri, offsets)
        open_file = functools.partial(fs.open, uri, "rb")
        stream, cpu = streamed(open_file, size)
        figures[f"{name} 8 MiB stream MB/s"] = stream
        figures[f"{name} 8 MiB stream MB per CPU-s"] = cpu
        figures[f"{name} stream / raw"] = stream / figures["raw 8 MiB stream MB/s"]
        if profiled:
            pid = os.getpid() if short_circuit else worker.pid
            where = "this process" if short_circuit else "the worker"
            profile(pid, functools.partial(streamed, open_file, size), f"{where}, {name} streamed")
            if not short_circuit:
                ranged = functools.partial(cat_p50_us, fs, uri, offsets)
                profile(pid, ranged, f"{where}, {name} cat_file")
    return figures


def local_worker(root: Path, size: int) -> tuple[Path, WorkerProcess]:
    """A file of ``size`` random bytes under ``root``, and a worker over its directory (the
    caller stops it)."""
    data = root / "data"
    data.mkdir()
    local = data / "big.bin"
    local.write_bytes(os.urandom(size))
    worker = WorkerProcess(
        root / "work", [f"dora.worker.ufs.roots=file://{data}", "dora.worker.page.store.sizes=4GB"]
    )
    return local, worker


def one_run(root: Path, size: int, reads: int, profiled: bool = False) -> dict[str, float]:
    local, worker = local_worker(root, size)
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
        figures["blockcache cat_file 64 KiB p50 us"] = cat_p50_us(block, str(local), offsets)
        return figures | ranged_and_streamed(worker, local, size, offsets, profiled)
    finally:
        worker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=64)
    parser.add_argument("--reads", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--profile", action="store_true", help="py-spy client and worker in the last repetition"
    )
    args = parser.parse_args()
    runs: list[dict[str, float]] = []
    for _ in range(args.repeats):
        root = Path(tempfile.mkdtemp(prefix="warm-bench-"))
        try:
            last = len(runs) == args.repeats - 1
            runs.append(one_run(root, args.size_mb * MB, args.reads, args.profile and last))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    for name in runs[0]:
        values = [run[name] for run in runs]
        digits = 3 if name.endswith("/ raw") else 1
        low, mid, high = min(values), statistics.median(values), max(values)
        print(f"{name:44s} {mid:10.{digits}f}  ({low:.{digits}f}-{high:.{digits}f})")


if __name__ == "__main__":
    main()
