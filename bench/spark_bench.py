"""Spark through the cache against the machine's limit, at several object-store latencies.

Two queries over the demo's taxi dataset on SeaweedFS, reached by the worker through a proxy
that adds the latency and counts what the store sees: the demo's aggregation (compute-heavy)
and a scan summing every numeric column (I/O-bound: every column chunk of every row group is
read). Contenders, each warmed up once and then timed ``--repeats`` times in turn (the median
shown):

- native warm: ``spark.read.parquet("webhdfs://...")`` through the cache (metadata rule -1);
- native pass-through: the same reader and HTTP hop on a copy the path rules do not cache;
- python source warm: ``format("dora")`` through the same worker;
- local copy: Spark reading the dataset from local disk (the machine's limit).

    .venv/bin/python -m bench.spark_bench [--files 16] [--latencies 0,20,50] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.devlab.demo import pipeline
from worker.devlab.demo.contenders import CACHED, PASSTHROUGH, Contender, contenders
from worker.devlab.demo.dataset import data_files, ensure_dataset
from worker.devlab.demo.link import cost
from worker.devlab.demo.run import DemoOptions, start_spark, start_worker
from worker.devlab.demo.spec import DatasetSpec, default_work_dir
from worker.devlab.demo.stage import S3Stage
from worker.spark.sidecar import stop_worker

SCAN_SKIP = ("pickup_at", "dropoff_at", "payment_type")


def aggregation(df: Any) -> Any:
    return pipeline.checksum(pipeline.spark_aggregate(df))


def scan(df: Any) -> Any:
    """Sum every numeric column: all of each file is read, little is computed."""
    from pyspark.sql import functions as F

    columns = [c for c in df.columns if c not in SCAN_SKIP]
    return tuple(round(v, 2) for v in df.agg(*(F.sum(c) for c in columns)).first())


QUERIES: dict[str, Callable[[Any], Any]] = {"aggregation": aggregation, "scan": scan}


@dataclass(frozen=True)
class Figure:
    latency_ms: int
    query: str
    contender: str
    median_s: float
    min_s: float
    max_s: float
    requests: float
    megabytes: float
    answer: Any


def measure(
    spark: Any,
    runners: list[Contender],
    query: Callable[[Any], Any],
    repeats: int,
    stage: S3Stage,
) -> dict[str, tuple[list[float], float, float, Any]]:
    """Per contender: seconds of each timed run, UFS requests and MB per run, and the answer.
    Each contender runs once untimed, then the timed runs go round the contenders in turn, so
    that the JVM's warming up over the runs (code generation, JIT) favours none of them."""
    answers = {c.name: query(c.load(spark, "warm")) for c in runners}
    seconds: dict[str, list[float]] = {c.name: [] for c in runners}
    seen = {c.name: [0, 0] for c in runners}
    for _ in range(repeats):
        for contender in runners:
            cost(stage.link)
            started = time.perf_counter()
            answer = query(contender.load(spark, "warm"))
            seconds[contender.name].append(time.perf_counter() - started)
            assert answer == answers[contender.name], f"{contender.name} changed answer"
            counted = cost(stage.link)
            seen[contender.name][0] += counted.requests or 0
            seen[contender.name][1] += counted.bytes or 0
    return {
        c.name: (
            seconds[c.name],
            seen[c.name][0] / repeats,
            seen[c.name][1] / repeats / 2**20,
            answers[c.name],
        )
        for c in runners
    }


def report(figures: list[Figure]) -> None:
    print(f"\n{'latency':>7}  {'query':<11}  {'contender':<22}  {'median (min-max)':>20}  "
          f"{'UFS req/run':>11}  {'UFS MB/run':>10}")  # fmt: skip
    for f in figures:
        spread = f"{f.median_s:.2f}s ({f.min_s:.2f}-{f.max_s:.2f})"
        print(f"{f.latency_ms:>5}ms  {f.query:<11}  {f.contender:<22}  {spread:>20}  "
              f"{f.requests:>11.0f}  {f.megabytes:>10.1f}")  # fmt: skip
    print()
    by_key = {(f.latency_ms, f.query, f.contender): f for f in figures}
    for latency, query in dict.fromkeys((f.latency_ms, f.query) for f in figures):

        def t(name: str, latency: int = latency, query: str = query) -> float:
            return by_key[(latency, query, name)].median_s

        native, local = t("native (webhdfs)"), t("spark on a local copy")
        print(f"{latency:>3}ms {query:<11}: native/local {native / local:.2f}x, "
              f"pass-through/native {t('native, pass-through') / native:.2f}x, "
              f"python/native {t('python dora source') / native:.2f}x")  # fmt: skip


def run(args: argparse.Namespace, run_dir: Path, cleanup: contextlib.ExitStack) -> list[Figure]:
    spec = DatasetSpec(files=args.files, rows_per_file=args.rows_per_file)
    options = DemoOptions(spec=spec, work_dir=args.work_dir, max_partition_bytes="32MB")
    dataset = ensure_dataset(spec, args.work_dir / "datasets", lambda done, total: None)
    paths = data_files(dataset)
    stage = S3Stage(run_dir / "seaweedfs").start()
    cleanup.callback(stage.close)
    if stage.link is None:
        raise SystemExit(
            "the benchmark needs worker.devlab.local.netproxy to add latency and count"
        )
    stage.upload(CACHED, paths, lambda done, total: None)
    stage.copy(CACHED, PASSTHROUGH)
    local = run_dir / "local"
    shutil.copytree(dataset, local, ignore=shutil.ignore_patterns("_*"))
    cleanup.callback(stop_worker, run_dir / "sidecar")
    worker = start_worker(options, stage, run_dir / "sidecar", sync_rule="-1")
    spark = start_spark(options, worker, paths[0], cleanup)
    runners = contenders(worker, stage.base, local, options.max_partition_bytes, rule="-1")
    figures: list[Figure] = []
    for latency in (int(text) for text in args.latencies.split(",")):
        stage.link.latency = latency / 1000
        for name, query in QUERIES.items():
            round_figures = []
            measured = measure(spark, runners, query, args.repeats, stage)
            for contender, (seconds, requests, mb, answer) in measured.items():
                median = statistics.median(seconds)
                figure = Figure(
                    latency, name, contender, median, min(seconds), max(seconds),
                    requests, mb, answer,
                )  # fmt: skip
                print(f"{latency}ms {name} {contender}: {median:.2f}s, "
                      f"{requests:.0f} UFS requests, {mb:.1f} MB", flush=True)  # fmt: skip
                round_figures.append(figure)
            answers = {f.answer for f in round_figures}
            assert len(answers) == 1, f"contenders disagree on {name}: {answers}"
            figures.extend(round_figures)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--rows-per-file", type=int, default=DatasetSpec().rows_per_file)
    parser.add_argument("--latencies", default="0,20,50", help="ms, comma separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work-dir", type=Path, default=default_work_dir())
    args = parser.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="dora-spark-bench-"))
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, run_dir, ignore_errors=True)
        figures = run(args, run_dir, cleanup)
    print(f"\n{args.files} files x {args.rows_per_file:,} rows, {os.cpu_count()} cores")
    report(figures)


if __name__ == "__main__":
    main()
