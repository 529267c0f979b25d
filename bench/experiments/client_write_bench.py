"""Client writes from many threads: one httpx client per thread (what the client does, so no
pool pass of one thread closes a connection another was just handed, encode/httpcore#1110)
against one client shared by the threads (what it did), side by side in one run.

    .venv/bin/python -m bench.experiments.client_write_bench [--threads 16] [--files 800]
    [--repeats 4]

A real ``dora worker start`` process on loopback over a local directory; each repetition writes
``--files`` files of 64 KiB with ``fs.pipe_file`` from ``--threads`` threads, once per way, the
order alternating. Prints the median writes per second with min-max, and the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.integration.harness import WorkerProcess
from worker.client import drivers
from worker.client.filesystem import DoraFileSystem

PAYLOAD = os.urandom(64 << 10)
PER_THREAD: Callable[[drivers.SyncDriver], httpx.Client] = drivers.SyncDriver._client


def shared(driver: drivers.SyncDriver) -> httpx.Client:
    """One client for every thread of the process, as before."""
    client: httpx.Client | None = getattr(driver, "_bench_shared", None)
    if client is None:
        client = driver._bench_shared = driver._http()  # type: ignore[attr-defined]
    return client


WAYS = {"a client per thread": PER_THREAD, "one shared client": shared}


def writes_per_second(address: str, root: Path, way: str, files: int, threads: int) -> float:
    drivers.SyncDriver._client = WAYS[way]  # type: ignore[method-assign]
    fs = DoraFileSystem(workers=address, skip_instance_cache=True, fallback_to_ufs=False)
    uris = [
        f"file://{root}/{way.replace(' ', '-')}-{time.monotonic_ns()}-{i}" for i in range(files)
    ]
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda uri: fs.pipe_file(uri, PAYLOAD), uris))
    return files / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--files", type=int, default=800)
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root, work = Path(tmp) / "data", Path(tmp) / "work"
        root.mkdir()
        work.mkdir()
        worker = WorkerProcess(work, f"dora.worker.ufs.roots=file://{root}")
        rates: dict[str, list[float]] = {way: [] for way in WAYS}
        try:
            for rep in range(args.repeats):
                for way in list(WAYS) if rep % 2 == 0 else list(WAYS)[::-1]:
                    rate = writes_per_second(worker.address, root, way, args.files, args.threads)
                    rates[way].append(rate)
        finally:
            drivers.SyncDriver._client = PER_THREAD  # type: ignore[method-assign]
            worker.stop()
    for way, values in rates.items():
        print(f"{way}: {statistics.median(values):,.0f} writes/s "
              f"({min(values):,.0f}-{max(values):,.0f})")  # fmt: skip
    ratio = statistics.median(rates["a client per thread"]) / statistics.median(
        rates["one shared client"]
    )
    print(f"per thread / shared: {ratio:.2f}x")


if __name__ == "__main__":
    main()
