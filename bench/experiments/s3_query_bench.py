"""A Parquet query through the S3 endpoint, warm, against the same tool straight to the store,
with the store 20 ms away (issue 33's goal: 3x faster or better), for pyarrow's and Polars'
own S3 readers and DuckDB's ``httpfs``, side by side in one run.

Run with ``PYTHONPATH=$PWD .venv/bin/python -m bench.experiments.s3_query_bench`` (``--reps``,
``--files``, ``--rows``, ``--latency-ms``, ``--profile``). Starts SeaweedFS behind
``worker.devlab.local.netproxy``'s proxy (``--latency-ms`` of round trip), uploads the demo's
taxi dataset (``--files`` Parquet files), starts ``dora worker start`` over the proxied store
with its S3 endpoint on, runs each tool once through the endpoint (the cache is then warm), then
per round, the contenders interleaved, the demo's query (group by hour and zone, five sums) by
each tool through the endpoint and straight to the store (through the same proxy). DuckDB runs
in the interpreter ``tests/integration/s3endpoint/duckdb_support.py`` builds (``.venv-duckdb``:
its httpfs wheel matches an older DuckDB), each time in a fresh process, timed inside it after a
first run that warms DuckDB itself. Prints each figure's median and min-max over the rounds, and
the ratios; every answer is checked against the direct read's rows. ``--profile TOOL`` records
the worker under that tool's warm queries with py-spy (``--profile-out``)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.experiments.s3_endpoint_bench import KEY_ID, SECRET, _free_port
from tests.integration import duckdb_support
from worker.devlab.demo import s3query
from worker.devlab.demo.dataset import ensure_dataset
from worker.devlab.demo.pipeline import Row
from worker.devlab.demo.spec import DatasetSpec
from worker.devlab.local.netproxy import TcpProxy
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3

BUCKET, PREFIX = "lake", "taxi"
TOOLS = ("pyarrow", "polars", "duckdb")


def start_worker(base: Path, store: str) -> tuple[subprocess.Popen[bytes], str]:
    """A worker over bucket ``lake`` of the store at ``store`` (the proxy); its S3 URL."""
    state, s3_port = base / "state.json", _free_port()
    args = [sys.executable, "-m", "worker.cli.main", "worker", "start",
            f"-Ddora.work.dir={base / 'work'}", "-Ddora.worker.http.port=0",
            f"-Ddora.worker.ufs.roots=s3://{BUCKET}", "-Ddora.worker.page.store.sizes=2GB",
            f"-Ddora.ufs.s3.endpoint={store}", f"-Ddora.ufs.s3.access.key.id={ACCESS_KEY}",
            f"-Ddora.worker.s3.port={s3_port}", f"-Ddora.worker.s3.access.key.id={KEY_ID}",
            "--state-file", str(state)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORA_")}
    env["DORA_WORKER_S3_SECRET_ACCESS_KEY"] = SECRET
    env["DORA_UFS_S3_SECRET_ACCESS_KEY"] = SECRET_KEY
    worker = subprocess.Popen(args, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not state.exists():
        if worker.poll() is not None or time.monotonic() > deadline:
            worker.kill()
            raise RuntimeError("the worker did not start")
        time.sleep(0.05)
    return worker, f"http://127.0.0.1:{s3_port}"


def duckdb(target: s3query.S3Target) -> tuple[float, list[Row]]:
    """Seconds of a warm DuckDB query (its second run in a fresh process) and its rows."""
    done = subprocess.run([duckdb_support.python(), "-c", s3query.DUCKDB_DRIVER],
                          input=s3query.duckdb_request(target, 2).encode(), capture_output=True,
                          timeout=600, check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode()[-2000:])
    answer = json.loads(done.stdout)
    return float(answer["seconds"][-1]), s3query.duckdb_rows(answer)


def timed(query: Callable[[s3query.S3Target], list[Row]]) -> Callable[..., tuple[float, Any]]:
    """``query`` as a runner: its seconds and rows."""

    def run(target: s3query.S3Target) -> tuple[float, list[Row]]:
        started = time.perf_counter()
        rows = query(target)
        return time.perf_counter() - started, rows

    return run


RUNNERS = {
    "pyarrow": timed(s3query.pyarrow_rows),
    "polars": timed(s3query.polars_rows),
    "duckdb": duckdb,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--rows", type=int, default=52_000)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--profile", choices=TOOLS, help="py-spy the worker under this tool")
    parser.add_argument("--profile-out", default="bench/out/s3_query_worker.txt")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        base = Path(temp)
        spec = DatasetSpec(files=options.files, rows_per_file=options.rows)
        dataset = ensure_dataset(spec, base / "datasets", lambda done, total: None)
        store = LocalS3(base / "seaweedfs", buckets=(BUCKET,)).start()
        proxy = TcpProxy.to_url(store.endpoint, options.latency_ms / 1000).start()
        worker: subprocess.Popen[bytes] | None = None
        try:
            client = store.client()
            for path in sorted(dataset.glob("*.parquet")):
                client.put_file(str(path), f"{BUCKET}/{PREFIX}/{path.name}")
            worker, s3 = start_worker(base, proxy.url)
            through = s3query.S3Target(s3, KEY_ID, SECRET, BUCKET, PREFIX)
            straight = s3query.S3Target(proxy.url, ACCESS_KEY, SECRET_KEY, BUCKET, PREFIX)
            run(options, through, straight, worker.pid)
        finally:
            if worker is not None:
                worker.send_signal(signal.SIGTERM)
                worker.wait(timeout=60)
            proxy.stop()
            store.stop()


def run(
    options: argparse.Namespace,
    through: s3query.S3Target,
    straight: s3query.S3Target,
    worker_pid: int,
) -> None:
    reference = s3query.pyarrow_rows(straight)
    for tool in TOOLS:  # warm the cache (and each tool's first use)
        RUNNERS[tool](through)
    figures: dict[str, list[float]] = {}
    for _ in range(options.reps):
        for tool in TOOLS:
            for where, target in (("endpoint", through), ("store", straight)):
                seconds, rows = RUNNERS[tool](target)
                if rows != reference:
                    raise RuntimeError(f"{tool} via {where}: rows differ from the direct read")
                figures.setdefault(f"{tool} {where}", []).append(seconds)
    for name, values in figures.items():
        print(f"{name:20s} {statistics.median(values):8.3f} s  "
              f"[{min(values):.3f}-{max(values):.3f}]")  # fmt: skip
    for tool in TOOLS:
        store = statistics.median(figures[f"{tool} store"])
        endpoint = statistics.median(figures[f"{tool} endpoint"])
        print(f"{tool}: straight to the store / through the endpoint = {store / endpoint:.2f}x")
    if options.profile:
        profile(options.profile_out, worker_pid, options.profile, through)


def profile(out: str, pid: int, tool: str, target: s3query.S3Target) -> None:
    """py-spy's raw profile of the worker while ``tool`` queries it warm, into ``out``."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    spy = Path(sys.executable).with_name("py-spy")
    recorder = subprocess.Popen([str(spy), "record", "-p", str(pid), "-f", "raw", "-o", out,
                                 "-r", "200", "-d", "30"])  # fmt: skip
    time.sleep(1)
    deadline = time.monotonic() + 25
    while time.monotonic() < deadline:
        RUNNERS[tool](target)
    recorder.wait()
    print(f"py-spy: {out}")


if __name__ == "__main__":
    main()
