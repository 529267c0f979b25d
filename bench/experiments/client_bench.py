"""Client benchmark: the ``dora`` fsspec client against a real ``dora worker start`` process on
loopback (local-directory UFS, every file already cached: warm), this tree side by side with a
baseline commit in the same run.

    .venv/bin/python -m bench.experiments.client_bench [--baseline REV] [--repeat 3]

Each repetition runs the baseline client (from ``git archive REV``) and this tree's client, each in
a fresh process, one after the other against the same worker; every figure is the median over the
repetitions with the min-max. Measured: sync ``info()`` p50/p99, sync ``cat_file`` of 64 KB
(p50/p99) and of 64 MB (MiB/s), 100 files of 1 MB read by 100 threads with the sync API, and
(this tree only: the baseline has no async API) the same 100 reads as concurrent ``_cat_file``
coroutines on one event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
SMALL = 64 << 10
BIG = 64 << 20
MANY = 100
ONE_MB = 1 << 20


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def latencies(fn: Callable[[], object], warmup: int, count: int) -> tuple[float, float]:
    """p50 and p99 of ``fn`` in ms."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def wall_ms(fn: Callable[[], object], times: int) -> float:
    """Median wall time of ``fn`` in ms, after one warm-up call."""
    fn()
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def measure(address: str, root: str) -> dict[str, float]:
    """One side's figures (runs in a child process, with ``worker`` from the tree under test)."""
    from worker.client import DoraFileSystem

    fs = DoraFileSystem(workers=[address], skip_instance_cache=True)
    small, big = f"{root}/small.bin", f"{root}/big.bin"
    many = [f"{root}/many/{i:03d}.bin" for i in range(MANY)]
    out: dict[str, float] = {}
    out["info p50 ms"], out["info p99 ms"] = latencies(lambda: fs.info(small), 300, 3000)
    out["cat 64KB p50 ms"], out["cat 64KB p99 ms"] = latencies(
        lambda: fs.cat_file(small), 100, 1500
    )
    big_ms = wall_ms(lambda: fs.cat_file(big), 7)
    out["cat 64MB MiB/s"] = (BIG / 2**20) / (big_ms / 1000)

    def threads() -> None:
        with ThreadPoolExecutor(MANY) as pool:
            assert sum(len(b) for b in pool.map(fs.cat_file, many)) == MANY * ONE_MB

    out["100x1MB threads ms"] = wall_ms(threads, 5)
    try:
        afs = DoraFileSystem(workers=[address], skip_instance_cache=True, asynchronous=True)
    except TypeError:
        return out  # a client without the async API

    async def gathered() -> None:
        parts = await asyncio.gather(*(afs._cat_file(path) for path in many))
        assert sum(len(b) for b in parts) == MANY * ONE_MB

    out["100x1MB async ms"] = asyncio.run(_async_wall(gathered, 5))
    return out


async def _async_wall(fn: Callable[[], Any], times: int) -> float:
    await fn()
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def start_worker(work: Path, data: Path) -> tuple[subprocess.Popen[bytes], str]:
    state = work / "state.json"
    dora = str(Path(sys.executable).with_name("dora"))
    args = [dora, "worker", "start", "-Ddora.worker.http.port=0", f"-Ddora.work.dir={work}",
            f"-Ddora.worker.ufs.roots=file://{data}", "-Ddora.worker.page.store.sizes=2GB",
            "--state-file", str(state)]  # fmt: skip
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not state.exists():
        time.sleep(0.05)
    return process, f"127.0.0.1:{json.loads(state.read_text())['port']}"


def warm(address: str, uris: list[str]) -> None:
    """Read every file once through the worker and wait until all of it is cached."""
    with httpx.Client(base_url=f"http://{address}", timeout=120) as client:
        for uri in uris:
            client.get("/v1/read", params={"path": uri}).raise_for_status()
        for uri in uris:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                status = client.get("/v1/status", params={"path": uri}).json()
                if status["cached_bytes"] >= status["size"]:
                    break
                time.sleep(0.05)


def make_data(data: Path) -> list[str]:
    (data / "many").mkdir(parents=True)
    (data / "small.bin").write_bytes(os.urandom(SMALL))
    (data / "big.bin").write_bytes(os.urandom(BIG))
    for i in range(MANY):
        (data / "many" / f"{i:03d}.bin").write_bytes(os.urandom(ONE_MB))
    names = ["small.bin", "big.bin", *(f"many/{i:03d}.bin" for i in range(MANY))]
    return [f"file://{data}/{name}" for name in names]


def run_side(tree: Path, address: str, root: str) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORA_")}
    # The tree under test comes first on the path (before the editable install's finder).
    env["PYTHONPATH"] = str(tree)
    script = [sys.executable, str(Path(__file__).resolve()), "--measure", address, root]
    done = subprocess.run(script, env=env, cwd=tree, check=True, capture_output=True, text=True)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def report(sides: dict[str, list[dict[str, float]]]) -> None:
    metrics = list(dict.fromkeys(m for runs in sides.values() for run in runs for m in run))
    print(f"\n{'metric':<22}" + "".join(f"{name:>34}" for name in sides))
    for metric in metrics:
        cells = []
        for runs in sides.values():
            values = [run[metric] for run in runs if metric in run]
            if not values:
                cells.append(f"{'n/a':>34}")
                continue
            text = f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"
            cells.append(f"{text:>34}")
        print(f"{metric:<22}" + "".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default="HEAD", help="git revision to compare with")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--measure", nargs=2, metavar=("ADDRESS", "ROOT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return
    root = Path(tempfile.mkdtemp(prefix="dora-client-bench-"))
    baseline = root / "baseline"
    baseline.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", args.baseline], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive.stdout, check=True)
    uris = make_data(root / "data")
    worker, address = start_worker(root / "work", root / "data")
    try:
        warm(address, uris)
        sides: dict[str, list[dict[str, float]]] = {
            f"baseline {args.baseline}": [],
            "this tree": [],
        }
        for rep in range(args.repeat):
            for name, tree in zip(sides, (baseline, REPO), strict=True):
                sides[name].append(run_side(tree, address, f"file://{root}/data"))
                print(f"repetition {rep + 1}, {name}: {sides[name][-1]}", flush=True)
        report(sides)
    finally:
        worker.terminate()
        worker.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
