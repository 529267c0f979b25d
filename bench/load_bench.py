"""Load-job (prewarm) benchmark: many small files in partition directories on a local-dir UFS.

Run with ``.venv/bin/python -m bench.load_bench`` (issue 11's case: ``--files 100000 --dirs
1000``; ``--files 20000 --dirs 200`` for a quick run). It writes the dataset under a temporary
directory, then for each mode times, ``--repeat`` times over a cold cache (a fresh worker each
time), a load job from submit to its final state, through an in-process ``WorkerService``:
- ``data``: statuses, listings and every file's bytes into the page store;
- ``metadata``: statuses and listings only (``metadata_only``).

Hive-style prewarm is not runnable here, so the peers are the machine's limit for the same work
in plain Python: a walk that reads every file, and one that also writes each into a scratch tree
as a page store would (``data``); a walk that stats every file (``metadata``).
Figures are the median of the repetitions with min-max.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from config import load_config
from worker import assembly
from worker.keys import build_registry
from worker.load import JobState
from worker.server import tune_gc
from worker.service import WorkerService


def make_dataset(root: Path, files: int, dirs: int, size: int) -> None:
    payload = os.urandom(size)
    per_dir = -(-files // dirs)
    for index in range(files):
        directory = root / f"part={index // per_dir:05d}"
        if index % per_dir == 0:
            directory.mkdir()
        (directory / f"file-{index:07d}.bin").write_bytes(payload)


def open_worker(work: Path, data: Path, defines: list[str]) -> WorkerService:
    tune_gc()  # as a worker process does
    config = load_config(
        build_registry(),
        environ={},
        defines=[f"dora.work.dir={work}", f"dora.worker.ufs.roots=file://{data}", *defines],
    )
    service = assembly.open_service(config)
    if not service.pages.wait_ready(60):
        raise RuntimeError("page store not ready")
    return service


def time_load(
    scratch: Path, data: Path, metadata_only: bool, expect: int, defines: list[str]
) -> tuple[float, float]:
    work = scratch / "work"
    service = open_worker(work, data, defines)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        job = service.loads.submit(
            f"file://{data}", recursive=True, include=[], exclude=[], metadata_only=metadata_only
        )
        job.finished.wait()
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        progress = job.to_dict()
        if job.state is not JobState.DONE or progress["files_total"] != expect:
            raise RuntimeError(f"load job did not complete: {progress}")
        if not metadata_only and progress["files_done"] != expect:
            raise RuntimeError(f"load job did not load every file: {progress}")
    finally:
        service.close()
        shutil.rmtree(work)
    return elapsed, cpu


def walk_read(data: Path) -> int:
    total = 0
    for directory, _, names in os.walk(data):
        for name in names:
            with open(os.path.join(directory, name), "rb") as handle:
                total += len(handle.read())
    return total


def walk_copy(data: Path) -> int:
    """Read every file and write it into a scratch tree, through a temporary file renamed into
    place, as a page store stores a page: the machine's limit for prewarming onto local disk."""
    target = data.with_name("copy")
    total = 0
    for directory, _, names in os.walk(data):
        into = target / os.path.relpath(directory, data)
        into.mkdir(parents=True, exist_ok=True)
        for name in names:
            with open(os.path.join(directory, name), "rb") as handle:
                payload = handle.read()
            temp = into / (name + ".tmp")
            temp.write_bytes(payload)
            temp.rename(into / name)
            total += len(payload)
    return total


def walk_stat(data: Path) -> int:
    total = 0
    for directory, _, names in os.walk(data):
        for name in names:
            total += os.stat(os.path.join(directory, name)).st_size
    return total


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - started, time.process_time() - cpu


def summary(label: str, runs: list[tuple[float, float]], files: int) -> str:
    """Wall time (median, min-max), files/s, and the process's CPU seconds (median): on a
    shared machine the CPU figure shows the work done, the wall figure what it cost here."""
    walls = [wall for wall, _ in runs]
    median = statistics.median(walls)
    cpu = statistics.median(cpu for _, cpu in runs)
    return (
        f"{label:<34} {median:7.2f} s  ({min(walls):.2f}-{max(walls):.2f})  "
        f"{files / median:>9,.0f} files/s  cpu {cpu:6.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--dirs", type=int, default=1000)
    parser.add_argument("--size", type=int, default=1024, help="bytes per file")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mode", choices=("data", "metadata", "both"), default="both")
    parser.add_argument(
        "-D", dest="defines", action="append", default=[], help="a worker property, key=value"
    )
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="load-bench-"))
    try:
        data = scratch / "data"
        data.mkdir()
        make_dataset(data, args.files, args.dirs, args.size)
        walk_read(data)  # the dataset's pages in the OS cache for every contender alike
        print(f"{args.files:,} files of {args.size} B in {args.dirs:,} dirs, local UFS")
        modes = ("data", "metadata") if args.mode == "both" else (args.mode,)
        for mode in modes:
            peers = (walk_read, walk_copy) if mode == "data" else (walk_stat,)
            loads = [
                time_load(scratch, data, mode == "metadata", args.files, args.defines)
                for _ in range(args.repeat)
            ]
            print(summary(f"{mode}: load job", loads, args.files))
            for peer in peers:
                runs = []
                for _ in range(args.repeat):
                    runs.append(timed(partial(peer, data)))
                    shutil.rmtree(data.with_name("copy"), ignore_errors=True)
                print(summary(f"{mode}: plain Python {peer.__name__}", runs, args.files))
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
