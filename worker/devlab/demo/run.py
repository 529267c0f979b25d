"""The demo job: a PySpark pipeline over taxi trips read four ways side by side (Spark's own
reader through the cache over ``webhdfs://``, the same with caching off, the Python ``dora``
source, and Spark on a local copy; on S3 also the same query by Polars' own S3 reader through
the worker's S3 endpoint and straight to the store), cold, warm, and after the data changed
under them; each answer checked against a direct read of the UFS.

Steps: generate (or reuse) the dataset; start a local S3 server behind a proxy that adds
``--ufs-latency`` and counts what the store sees (or use a directory); upload the dataset and
a pass-through copy; start the worker (the sidecar) with path rules for both; compute the
reference answer straight from the UFS; start Spark (``local[2]``); run every contender cold
and warm, overwrite one file everywhere, and run each once more; then, on S3, show outside writes
reaching the worker through SeaweedFS's change feed (:mod:`worker.devlab.demo.outside`).
Everything it starts (SeaweedFS, the proxy, the worker, Spark's JVM) is stopped by PID on the
way out, also on Ctrl-C, SIGTERM or an error.
"""

from __future__ import annotations

import contextlib
import os
import secrets
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

from worker.devlab.demo import pipeline
from worker.devlab.demo.contenders import (
    CACHED,
    PASSTHROUGH,
    Contender,
    Worker,
    contenders,
    path_rules,
)
from worker.devlab.demo.dataset import data_files, ensure_dataset, trips
from worker.devlab.demo.link import cost
from worker.devlab.demo.outside import OutsideReader, OutsideReport, measure
from worker.devlab.demo.report import DemoProgress, RunResult, megabytes
from worker.devlab.demo.s3query import PolarsRun, S3Target
from worker.devlab.demo.spec import DatasetSpec, default_work_dir
from worker.devlab.demo.stage import BUCKET, DirStage, S3Stage, Stage, overwrite_local
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, free_port
from worker.spark import procs
from worker.spark.sidecar import ensure_worker_info, stop_worker
from worker.spark.webhdfs import short_circuit_bytes, spark_conf

STAT_KEYS = ("bytes_from_ufs", "bytes_from_cache")
S3_KEY_ID = "demo"
"""The access key id of the worker's S3 endpoint in the demo (its secret is made per run)."""
OUTSIDE_KEY = "outside/probe.txt"


@dataclass(frozen=True)
class DemoOptions:
    """The demo's knobs: dataset size, where the UFS is (``s3`` for a local SeaweedFS, or a
    ``file://`` directory) and its added latency, where datasets are cached, Spark's cores."""

    spec: DatasetSpec = field(default_factory=DatasetSpec)
    ufs: str = "s3"
    ufs_latency_ms: int = 0
    work_dir: Path = field(default_factory=default_work_dir)
    cores: int = 2
    max_partition_bytes: str = "32MB"
    defines: tuple[str, ...] = ()
    """Extra worker settings (``key=value``), e.g. from ``dora demo -D...``; they win over the
    stage's."""


@dataclass(frozen=True)
class DemoReport:
    """The table's runs, and on S3 the outside writes (None on a local directory)."""

    results: list[RunResult]
    outside: OutsideReport | None


@dataclass
class Demo:
    """One demo run's moving parts; :func:`run_demo` drives it."""

    options: DemoOptions
    progress: DemoProgress
    stage: Stage
    worker: Worker
    spark: Any = None
    results: list[RunResult] = field(default_factory=list)

    def reference(self, files: list[str]) -> str:
        """The query's checksum over the UFS read directly (no cache, no Spark)."""
        columns = list(pipeline.NEEDED)
        tables = (self.stage.read_table(CACHED, name, columns) for name in files)
        return pipeline.checksum(pipeline.arrow_aggregate(tables))

    def query(self, contender: Contender, run: str, reference: str) -> RunResult:
        """``contender``'s Spark run of the query, measured."""
        return self.measured(
            contender.name,
            run,
            contender.sync(run),
            lambda: pipeline.spark_aggregate(contender.load(self.spark, run)),
            reference,
        )

    def measured(
        self,
        name: str,
        run: str,
        sync: str,
        compute: Callable[[], list[pipeline.Row]],
        reference: str,
    ) -> RunResult:
        """One run of the query by ``compute``: its time, what the store and the worker saw."""
        before = worker_stats(self.worker)
        page_files = short_circuit_bytes(self.spark)
        cost(self.stage.link)
        started = time.monotonic()
        with self.progress.step(f"{run}: {name}"):
            rows = compute()
        seconds = time.monotonic() - started
        after = worker_stats(self.worker)
        result = RunResult(
            contender=name,
            run=run,
            sync=sync,
            seconds=seconds,
            ufs=cost(self.stage.link),
            bytes_from_cache=after["bytes_from_cache"] - before["bytes_from_cache"],
            bytes_from_page_files=short_circuit_bytes(self.spark) - page_files,
            bytes_from_ufs=after["bytes_from_ufs"] - before["bytes_from_ufs"],
            checksum=pipeline.checksum(rows),
            reference=reference,
        )
        self.results.append(result)
        return result

    def s3_query(self, contender: PolarsRun, run: str, reference: str) -> RunResult:
        """A run of the query by Polars' own S3 reader."""
        return self.measured(contender.name, run, contender.sync(run), contender.rows, reference)


def worker_stats(worker: Worker) -> dict[str, int]:
    """The worker's counters."""
    headers = {"Authorization": f"Bearer {worker.token}"} if worker.token else {}
    answer = httpx.get(f"http://{worker.address}/v1/stats", headers=headers, timeout=10.0)
    answer.raise_for_status()
    stats = answer.json()
    return {key: int(stats.get(key, 0)) for key in STAT_KEYS}


def open_stage(options: DemoOptions, run_dir: Path) -> Stage:
    if options.ufs == "s3":
        return S3Stage(run_dir / "seaweedfs", options.ufs_latency_ms).start()
    if options.ufs.startswith("file://"):
        if options.ufs_latency_ms:
            raise ValueError("--ufs-latency applies to the S3 UFS only")
        return DirStage(Path(options.ufs.removeprefix("file://")) / f"taxi-{os.getpid()}")
    raise ValueError(f"--ufs must be s3 or file:///dir, not {options.ufs!r}")


def run_demo(options: DemoOptions, progress: DemoProgress | None = None) -> DemoReport:
    """Run every step; the results of the runs. Stops whatever it started before returning
    or raising."""
    progress = progress or DemoProgress()
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
        with progress.step(f"upload to {stage.base}/{CACHED}") as count:
            stage.upload(CACHED, paths, count)
            stage.copy(CACHED, PASSTHROUGH)
        local = run_dir / "local"
        shutil.copytree(dataset, local, ignore=shutil.ignore_patterns("_*"))
        with progress.step("starting the worker"):
            cleanup.callback(stop_worker, run_dir / "sidecar")
            worker = start_worker(options, stage, run_dir / "sidecar")
        demo = Demo(options, progress, stage, worker)
        names = [path.name for path in paths]
        with progress.step("reference answer, read straight from the UFS"):
            reference = demo.reference(names)
        with progress.step(f"starting Spark (local[{options.cores}]) and warming it up"):
            demo.spark = start_spark(options, worker, paths[0], cleanup)
        runners = contenders(worker, stage.base, local, options.max_partition_bytes)
        for contender in runners:
            contender.make_cold()
            demo.query(contender, "cold", reference)
            demo.query(contender, "warm", reference)
        s3_runners = polars_runs(stage, worker)
        for s3_contender in s3_runners:
            s3_contender.make_cold()
            demo.s3_query(s3_contender, "cold", reference)
            demo.s3_query(s3_contender, "warm", reference)
        changed = names[len(names) // 2]
        with progress.step(f"overwriting {changed} in the UFS and in the local copy"):
            table = trips(spec, len(names) // 2, revision=1)
            for name in (CACHED, PASSTHROUGH):
                stage.overwrite(name, changed, table)
            overwrite_local(local / changed, table)
            reference = demo.reference(names)
        for contender in runners:
            demo.query(contender, "changed", reference)
        for s3_contender in s3_runners:
            demo.s3_query(s3_contender, "changed", reference)
        return DemoReport(demo.results, outside_writes(stage, worker, progress))


def polars_runs(stage: Stage, worker: Worker) -> list[PolarsRun]:
    """On S3, Polars' own S3 reader through the worker's S3 endpoint and straight to the store
    (through the same delaying link the worker reaches it by); none on a local directory."""
    if not isinstance(stage, S3Stage) or worker.s3_endpoint is None:
        return []
    store = stage.link.url if stage.link is not None else stage.server.endpoint
    cached = f"{stage.base}/{CACHED}"
    return [
        PolarsRun(
            "polars (S3 endpoint)",
            S3Target(worker.s3_endpoint, S3_KEY_ID, worker.s3_secret or "", BUCKET, CACHED),
            lambda: worker.invalidate(cached),
        ),
        PolarsRun(
            "polars, straight to S3", S3Target(store, ACCESS_KEY, SECRET_KEY, BUCKET, CACHED)
        ),
    ]


def outside_writes(stage: Stage, worker: Worker, progress: DemoProgress) -> OutsideReport | None:
    """On S3, outside writes served by the worker at sync interval -1 (its change feed)."""
    if not isinstance(stage, S3Stage):
        return None
    headers = {"Authorization": f"Bearer {worker.token}"} if worker.token else {}
    uri = f"s3://{BUCKET}/{OUTSIDE_KEY}"
    with (
        httpx.Client(base_url=f"http://{worker.address}", headers=headers, timeout=30) as http,
        progress.step("outside writes straight to S3, read through the worker at -1"),
    ):
        return measure(
            lambda data: stage.put(OUTSIDE_KEY, data), uri, [OutsideReader("worker", http)]
        )


def start_worker(
    options: DemoOptions, stage: Stage, state_dir: Path, sync_rule: str = "0"
) -> Worker:
    """The sidecar worker serving the stage, owned by this process, with the path rules of the
    two dataset copies."""
    defines = [*stage.defines(), path_rules(stage.base, sync_rule)]
    s3_port, s3_secret = None, None
    if isinstance(stage, S3Stage):
        s3_port, s3_secret = free_port(), secrets.token_urlsafe(24)
        defines += [f"dora.worker.s3.port={s3_port}", f"dora.worker.s3.access.key.id={S3_KEY_ID}",
                    f"dora.worker.s3.secret.access.key={s3_secret}"]  # fmt: skip
    defines += options.defines
    info = ensure_worker_info(defines, state_dir=state_dir, owner_pid=os.getpid())
    host = info.address.rsplit(":", 1)[0]
    s3_endpoint = None if s3_port is None else f"http://{host}:{s3_port}"
    return Worker(info.address, info.token, s3_endpoint, s3_secret)


def start_spark(
    options: DemoOptions, worker: Worker, sample: Path, cleanup: contextlib.ExitStack
) -> Any:
    """``local[cores]`` Spark reaching ``worker`` over webhdfs, warmed up on ``sample`` (a local
    Parquet file) and stopped by ``cleanup``."""
    from worker.spark.session import local_session

    conf = {
        **spark_conf(worker.address, worker.token),
        "spark.sql.files.maxPartitionBytes": options.max_partition_bytes,
    }
    spark = local_session(options.cores, "doracache-demo", conf=conf, progress=sys.stderr.isatty())
    cleanup.callback(_stop_spark, spark)
    _warm_up(spark, worker, sample)
    return spark


def _warm_up(spark: Any, worker: Worker, sample: Path) -> None:
    """Run the query once on one local file, start Python workers and load Hadoop's WebHDFS
    client, so that whichever contender runs first measures its reads rather than the JVM
    compiling Spark's Parquet and aggregation code."""
    pipeline.spark_aggregate(spark.read.parquet(f"file://{sample}"))
    spark.range(4, numPartitions=2).mapInArrow(_same, "id long").collect()
    jvm = spark._jvm
    root = jvm.java.net.URI(f"webhdfs://{worker.address}/")
    jvm.org.apache.hadoop.fs.FileSystem.get(root, spark._jsc.hadoopConfiguration()).getFileStatus(
        jvm.org.apache.hadoop.fs.Path("/")
    )


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
