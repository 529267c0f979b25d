"""Figures of the demo's pipeline across the lab's hosts (issue 24): Spark standalone with a
worker and a one-core executor on each of 1 host vs 3 hosts (the Master and the driver on w1,
Spark's Parquet reader over ``webhdfs://`` through the workers), **cold** (files never read:
every byte comes from S3 through the workers) and **warm** (the same files again: from the
workers' caches), at 0 and 20 ms of object-store latency (the delaying proxy between the
workers and S3). Every answer is checked against the reference computed from the files.

After an unmeasured cold and warm pass (the JVMs' first reads over WebHDFS), each round reads
a fresh copy of the dataset cold, then again warm; the figure is the median of ``--rounds``
with its min-max. Also shown per run: what crossed the proxy from S3 and the
share of input tasks Spark ran node-local.

    .venv/bin/python -m bench.lab_pipeline_bench [--rounds 3] [--files 12] [--rows 50000]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from worker.demo import pipeline
from worker.demo.dataset import data_files, ensure_dataset
from worker.demo.spec import DatasetSpec
from worker.lab.lab import guard
from worker.lab.netns import unavailable_reason
from worker.lab.sparklab import ProxiedLab, SparkLab, start_spark_lab

LATENCIES_MS = (0, 20)
HOSTS = (1, 3)


@dataclass(frozen=True)
class Run:
    """One query: its wall time, bytes from S3 (through the proxy), node-local task share."""

    hosts: int
    latency_ms: int
    state: str
    seconds: float
    ufs_bytes: int
    local_share: float


def _query(spark: SparkLab, proxy: Any, prefix: str, reference: str) -> tuple[float, int, float]:
    proxy.reset_counts()
    answer = spark.driver.query(spark.url(prefix))
    if answer["checksum"] != reference:
        raise RuntimeError(f"{prefix}: the answer differs from the reference")
    counts: dict[str, int] = answer["locality"]
    local = counts.get("NODE_LOCAL", 0) + counts.get("PROCESS_LOCAL", 0)
    return answer["seconds"], proxy.stats().bytes_down, local / max(1, sum(counts.values()))


def measure(hosts: int, paths: list[Path], reference: str, rounds: int) -> list[Run]:
    """Both latencies on one lab of ``hosts`` worker hosts, ``rounds`` cold/warm pairs each."""
    runs = []
    with contextlib.ExitStack() as cleanup:
        root = Path(cleanup.enter_context(tempfile.TemporaryDirectory()))
        lab = ProxiedLab(root, hosts)
        spark = start_spark_lab(lab, paths[0], cleanup)
        assert lab.proxy is not None
        # Unmeasured: the first reads over WebHDFS load and compile the JVMs' client classes.
        spark.upload(paths, "bench-warm-up")
        for _ in range(2):
            _query(spark, lab.proxy, "bench-warm-up", reference)
        for latency in LATENCIES_MS:
            lab.proxy.latency = latency / 1000
            for round_ in range(rounds):
                prefix = f"bench-{latency}ms-{round_}"
                spark.upload(paths, prefix)
                for state in ("cold", "warm"):
                    figures = _query(spark, lab.proxy, prefix, reference)
                    runs.append(Run(hosts, latency, state, *figures))
                    print(f"  {runs[-1]}", flush=True)
    return runs


def _summary(runs: list[Run], hosts: int, latency: int, state: str) -> tuple[float, str]:
    chosen = [r for r in runs if (r.hosts, r.latency_ms, r.state) == (hosts, latency, state)]
    times = sorted(r.seconds for r in chosen)
    mb = statistics.median(r.ufs_bytes for r in chosen) / 1e6
    local = statistics.median(r.local_share for r in chosen) * 100
    median = statistics.median(times)
    text = (
        f"{median:6.2f} s ({times[0]:.2f}-{times[-1]:.2f})  S3 {mb:6.1f} MB  "
        f"node-local {local:3.0f}%"
    )
    return median, text


def report(runs: list[Run]) -> None:
    print("\nhosts latency state   median (min-max), bytes from S3, node-local input tasks")
    medians = {}
    for latency in LATENCIES_MS:
        for state in ("cold", "warm"):
            for hosts in HOSTS:
                medians[hosts, latency, state], text = _summary(runs, hosts, latency, state)
                print(f"{hosts:5} {latency:4} ms {state:5}  {text}")
    print("\nratios (median over median):")
    for latency in LATENCIES_MS:
        for state in ("cold", "warm"):
            one, three = medians[1, latency, state], medians[3, latency, state]
            print(f"  {latency:2} ms {state}: 1 host / 3 hosts = {one / three:.2f}")
        for hosts in HOSTS:
            cold, warm = medians[hosts, latency, "cold"], medians[hosts, latency, "warm"]
            print(f"  {latency:2} ms {hosts} host(s): cold / warm = {cold / warm:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--hosts", type=int, nargs="+", default=list(HOSTS), choices=HOSTS)
    args = parser.parse_args()
    reason = unavailable_reason()
    if reason is not None:
        print(f"lab_pipeline_bench skipped: {reason}")
        return 0
    spec = DatasetSpec(files=args.files, rows_per_file=args.rows)
    with guard(), tempfile.TemporaryDirectory() as data:
        paths = data_files(ensure_dataset(spec, Path(data), lambda done, total: None))
        tables = [pq.read_table(path, columns=list(pipeline.NEEDED)) for path in paths]
        reference = pipeline.checksum(pipeline.arrow_aggregate(tables))
        size = sum(path.stat().st_size for path in paths) / 1e6
        print(f"dataset: {spec.files} files x {spec.rows_per_file:,} trips, {size:.1f} MB")
        runs = [
            run for hosts in args.hosts for run in measure(hosts, paths, reference, args.rounds)
        ]
    if set(args.hosts) == set(HOSTS):
        report(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
