"""The demo job: a PySpark pipeline over taxi trips read through the cache, cold, warm, and
after the data changed under it, each answer checked against a direct read of the UFS.

Steps: generate (or reuse) the dataset; start a local S3 server (or use a directory) and upload
it; compute the reference answer straight from the UFS; start Spark (``local[2]``); run the
query cold, warm, then overwrite one file in the UFS and run it with ``sync_interval=0``.
Everything it starts (SeaweedFS, the sidecar worker, Spark's JVM) is stopped by PID on the way
out, also on Ctrl-C, SIGTERM or an error.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

from worker.demo import pipeline
from worker.demo.dataset import data_files, ensure_dataset, trips
from worker.demo.report import Progress, RunResult, megabytes
from worker.demo.spec import DatasetSpec, default_work_dir
from worker.demo.stage import DirStage, S3Stage, Stage
from worker.spark import procs
from worker.spark.sidecar import running_worker, stop_worker

STAT_KEYS = (
    "bytes_from_ufs",
    "bytes_from_cache",
    "metadata_hits",
    "metadata_misses",
    "metadata_ufs_calls",
)


@dataclass(frozen=True)
class DemoOptions:
    """The demo's knobs: dataset size, where the UFS is (``s3`` for a local SeaweedFS, or a
    ``file://`` directory), where datasets are cached, and Spark's cores."""

    spec: DatasetSpec = field(default_factory=DatasetSpec)
    ufs: str = "s3"
    work_dir: Path = field(default_factory=default_work_dir)
    cores: int = 2
    max_partition_bytes: str = "32MB"
    defines: tuple[str, ...] = ()
    """Extra worker settings (``key=value``), e.g. from ``dora demo -D...``; they win over the
    stage's."""


@dataclass
class Demo:
    """One demo run's moving parts; :func:`run_demo` drives it."""

    options: DemoOptions
    progress: Progress
    stage: Stage
    state_dir: Path
    spark: Any = None
    results: list[RunResult] = field(default_factory=list)

    def reference(self, files: list[str]) -> str:
        """The query's checksum over the UFS read directly (no cache, no Spark)."""
        columns = list(pipeline.NEEDED)
        tables = (self.stage.read_table(name, columns) for name in files)
        return pipeline.checksum(pipeline.arrow_aggregate(tables))

    def query(self, name: str, sync_interval: str, reference: str) -> RunResult:
        reader = (
            self.spark.read.format("dora")
            .option("format", "parquet")
            .option("sync_interval", sync_interval)
            .option("maxPartitionBytes", self.options.max_partition_bytes)
            .option("state_dir", str(self.state_dir))
        )
        for define in [*self.stage.defines(), *self.options.defines]:
            key, _, value = define.partition("=")
            reader = reader.option(key, value)
        before = worker_stats(self.state_dir)
        started = time.monotonic()
        with self.progress.step(f"{name} run (sync_interval={sync_interval})"):
            rows = pipeline.spark_aggregate(reader.load(self.stage.root))
        seconds = time.monotonic() - started
        after = worker_stats(self.state_dir)
        delta = {key: after[key] - before[key] for key in STAT_KEYS}
        result = RunResult.from_stats(
            name, sync_interval, seconds, delta, pipeline.checksum(rows), reference
        )
        self.results.append(result)
        return result


def worker_stats(state_dir: Path) -> dict[str, int]:
    """The sidecar's counters (all zero while none runs)."""
    info = running_worker(state_dir)
    if info is None:
        return dict.fromkeys(STAT_KEYS, 0)
    headers = {"Authorization": f"Bearer {info.token}"} if info.token else {}
    answer = httpx.get(f"http://{info.address}/v1/stats", headers=headers, timeout=10.0)
    answer.raise_for_status()
    stats = answer.json()
    return {key: int(stats.get(key, 0)) for key in STAT_KEYS}


def open_stage(options: DemoOptions, run_dir: Path) -> Stage:
    if options.ufs == "s3":
        return S3Stage(run_dir / "seaweedfs", prefix="taxi").start()
    if options.ufs.startswith("file://"):
        return DirStage(Path(options.ufs.removeprefix("file://")) / f"taxi-{os.getpid()}")
    raise ValueError(f"--ufs must be s3 or file:///dir, not {options.ufs!r}")


def run_demo(options: DemoOptions, progress: Progress | None = None) -> list[RunResult]:
    """Run every step; the results of the runs. Stops whatever it started before returning
    or raising."""
    progress = progress or Progress()
    spec = options.spec
    run_dir = options.work_dir / f"run-{os.getpid()}"
    with contextlib.ExitStack() as cleanup, _terminate_as_exit():
        cleanup.callback(shutil.rmtree, run_dir, ignore_errors=True)
        with progress.step(f"dataset: {spec.files} files x {spec.rows_per_file:,} trips") as count:
            dataset = ensure_dataset(spec, options.work_dir / "datasets", count)
        paths = data_files(dataset)
        total = sum(path.stat().st_size for path in paths)
        progress.say(f"  {len(paths)} Parquet files, {megabytes(total)}, cached in {dataset}")
        with progress.step("starting the UFS"):
            stage = open_stage(options, run_dir)
            cleanup.callback(stage.close)
        with progress.step(f"upload to {stage.root}") as count:
            stage.upload(paths, count)
        demo = Demo(options, progress, stage, run_dir / "sidecar")
        cleanup.callback(stop_worker, demo.state_dir)
        names = [path.name for path in paths]
        with progress.step("reference answer, read straight from the UFS"):
            reference = demo.reference(names)
        with progress.step(f"starting Spark (local[{options.cores}]) and warming it up"):
            demo.spark = _start_spark(options.cores, cleanup)
        demo.query("cold", "-1", reference)
        demo.query("warm", "-1", reference)
        changed = names[len(names) // 2]
        with progress.step(f"overwriting {changed} in the UFS"):
            stage.overwrite(changed, trips(spec, len(names) // 2, revision=1))
            reference = demo.reference(names)
        demo.query("changed", "0", reference)
        return demo.results


def _start_spark(cores: int, cleanup: contextlib.ExitStack) -> Any:
    from worker.spark.session import local_session

    spark = local_session(cores, "doracache-demo", progress=sys.stderr.isatty())
    cleanup.callback(_stop_spark, spark)
    _warm_up(spark)
    return spark


def _warm_up(spark: Any) -> None:
    """Run the query once over a few rows in memory and start Python workers, so that the cold
    run measures the cache rather than the JVM compiling its first plan."""
    sample = trips(DatasetSpec(files=1, rows_per_file=2000), 0).select(list(pipeline.NEEDED))
    pipeline.spark_aggregate(spark.createDataFrame(sample.to_pandas()))
    spark.range(4, numPartitions=2).mapInArrow(_same, "id long").collect()


def _same(batches: Iterator[Any]) -> Iterator[Any]:
    return batches


def _stop_spark(spark: Any) -> None:
    """Stop the session, then the JVM pyspark launched for it (by its PID)."""
    from py4j.protocol import Py4JError

    gateway_process = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)
    try:
        spark.stop()
    except Py4JError:
        # A signal interrupted a call and left the gateway unusable: the JVM goes by PID below.
        pass
    finally:
        if gateway_process is not None:
            procs.terminate(gateway_process.pid, timeout=10.0)
            gateway_process.wait()


@contextlib.contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """Turn SIGTERM into SystemExit so that cleanup runs as it does on Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous: Callable[[int, FrameType | None], Any] | int | None = signal.signal(
        signal.SIGTERM, handler
    )
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
