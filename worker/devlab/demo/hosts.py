"""``dora demo --hosts N``: the demo's pipeline on a Spark standalone cluster across N emulated
hosts (:mod:`worker.devlab.lab`): a worker and a Spark Worker on each, the Master and the driver on
the first, etcd and SeaweedFS on hosts of their own. Spark's own Parquet reader reads
``webhdfs://`` URLs naming the first host's worker, cold, warm and after a change, cached and
pass-through; every answer is checked against the reference computed straight from the files.

Besides the one-host table it shows what only many hosts show: the input tasks by Spark's
locality level (from Spark's REST API) and the bytes each worker served to its own host and to
other hosts (from the workers' access logs). Last, outside writes straight to SeaweedFS reach
every worker through the filer's change feed, which one worker, elected through etcd, consumes
and republishes into the invalidation feed (:mod:`worker.devlab.demo.outside`).
Everything is stopped by PID and the namespaces removed on the way out, also on Ctrl-C,
SIGTERM or an error.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

import pyarrow.parquet as pq

from worker.devlab.demo import pipeline
from worker.devlab.demo.contenders import CACHED, PASSTHROUGH, path_rules
from worker.devlab.demo.dataset import data_files, ensure_dataset, trips
from worker.devlab.demo.link import UfsCost
from worker.devlab.demo.outside import OutsideReader, OutsideReport, feed_define, measure
from worker.devlab.demo.report import DemoProgress, RunResult, megabytes
from worker.devlab.demo.run import OUTSIDE_KEY, STAT_KEYS, DemoOptions
from worker.devlab.lab.lab import BUCKET, Lab, guard
from worker.devlab.lab.spark import SparkCluster
from worker.spark.webhdfs import hadoop_conf, webhdfs_url

BASE = f"s3://{BUCKET}"
LEVELS = ("PROCESS_LOCAL", "NODE_LOCAL", "RACK_LOCAL", "ANY")


@dataclass(frozen=True)
class HostsReport:
    """The table's runs, input tasks by locality level per run, bytes each worker served
    over WebHDFS to its own host and to others, and the outside writes."""

    results: list[RunResult]
    locality: list[tuple[str, str, Counter[str]]]
    served: dict[str, tuple[int, int]]
    outside: OutsideReport | None = None


class FeedLab(Lab):
    """The lab, its workers following the SeaweedFS filer's change feed: one of them, elected
    through etcd, consumes it and republishes into the invalidation feed."""

    def worker_defines(self) -> list[str]:
        assert self.s3 is not None
        feed = feed_define(self.s3.host, self.s3.ports["filer.port.grpc"], BUCKET)
        return [*super().worker_defines(), feed]


def outside_writes(lab: Lab) -> OutsideReport:
    """Outside writes straight to the lab's SeaweedFS, served by every worker at -1."""
    assert lab.s3 is not None
    client = lab.s3.client()
    readers = [OutsideReader(worker.address, worker.http) for worker in lab.workers]
    return measure(
        lambda data: client.pipe_file(f"{BUCKET}/{OUTSIDE_KEY}", data),
        f"{BASE}/{OUTSIDE_KEY}",
        readers,
    )


class Driver:
    """The Spark driver process (:mod:`worker.devlab.lab.sparkjob`) on a lab host, asked one query
    at a time, with Spark ``settings`` beyond the demo's own. Not thread-safe."""

    def __init__(
        self,
        lab: Lab,
        host: str,
        cluster: SparkCluster,
        executors: int,
        sample: Path,
        settings: dict[str, str] | None = None,
    ) -> None:
        address = lab.network.hosts[host].address
        conf = {f"spark.hadoop.{k}": v for k, v in hadoop_conf(address, None).items()}
        # One file per task (a file's open cost fills a partition), so that a task has one
        # owner to be local to.
        conf["spark.sql.files.openCostInBytes"] = conf["spark.sql.files.maxPartitionBytes"] = "64MB"
        conf.update(settings or {})
        request = {"master": cluster.url, "host": address, "conf": conf,
                   "executors": executors, "sample": f"file://{sample}"}  # fmt: skip
        argv = [sys.executable, "-m", "worker.devlab.lab.sparkjob", json.dumps(request)]
        command = lab.network.hosts[host].command(argv, cwd=Path.cwd())
        with (lab.root / "logs" / "driver.log").open("ab") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True
            )
        try:
            self.application: str = self.result()["ready"]
        except BaseException:
            # Nobody holds this driver yet to stop it (its caller registers stop() once it is
            # ready): a warm-up that failed, or was interrupted, must not leave it running
            # (its JVM dies with it: worker.spark.jvmguard).
            self.process.kill()
            self.process.wait()
            raise

    def result(self) -> dict[str, Any]:
        """The next answer line (the one to the query :meth:`submit` sent last)."""
        out: IO[str] | None = self.process.stdout
        assert out is not None
        line = out.readline()
        if not line:
            raise RuntimeError("the Spark driver exited; see its log in the lab's logs/")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def submit(self, url: str) -> None:
        """Start the query over ``url``; :meth:`result` waits for its answer."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"url": url}) + "\n")
        self.process.stdin.flush()

    def query(self, url: str) -> dict[str, Any]:
        self.submit(url)
        return self.result()

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _stats(lab: Lab) -> dict[str, int]:
    totals = dict.fromkeys(STAT_KEYS, 0)
    for worker in lab.workers:
        stats = worker.http.get("/v1/stats").json()
        for key in STAT_KEYS:
            totals[key] += int(stats.get(key, 0))
    return totals


def _upload(lab: Lab, paths: list[Path]) -> None:
    assert lab.s3 is not None
    client = lab.s3.client()
    for name in (CACHED, PASSTHROUGH):
        for path in paths:
            client.put_file(str(path), f"{BUCKET}/{name}/{path.name}")


def _reference(tables: list[Any]) -> str:
    return pipeline.checksum(pipeline.arrow_aggregate(tables))


def served_by_host(lab: Lab) -> dict[str, tuple[int, int]]:
    """Per worker: bytes its WebHDFS OPEN answers sent to its own host and to other hosts."""
    split = {}
    for worker in lab.workers:
        own = other = 0
        for line in worker.log.read_text().splitlines():
            if not line.startswith("{"):
                continue
            record = json.loads(line)
            if record.get("logger") != "worker.access" or "op=OPEN" not in record["path"]:
                continue
            if record["client"] == worker.host.address:
                own += record["bytes"]
            else:
                other += record["bytes"]
        split[worker.address] = (own, other)
    return split


@dataclass
class _Runs:
    """The demo's runs through one driver, each measured on every worker; ``reference`` is
    the answer the runs must match (it changes with the data). Not thread-safe."""

    lab: Lab
    driver: Driver
    progress: DemoProgress
    reference: str
    report: HostsReport = field(default_factory=lambda: HostsReport([], [], {}))

    def run(self, name: str, dataset_name: str, run_name: str) -> None:
        url = webhdfs_url(self.lab.addresses[0], f"{BASE}/{dataset_name}")
        before = _stats(self.lab)
        with self.progress.step(f"{run_name}: {name}"):
            answer = self.driver.query(url)
        after = _stats(self.lab)
        self.report.results.append(RunResult(
            name, run_name, "rule 0", answer["seconds"], UfsCost(None, None),
            after["bytes_from_cache"] - before["bytes_from_cache"], 0,
            after["bytes_from_ufs"] - before["bytes_from_ufs"], answer["checksum"],
            self.reference,
        ))  # fmt: skip
        self.report.locality.append((run_name, name, Counter(answer["locality"])))


def _start_lab(root: Path, hosts: int, options: DemoOptions, cleanup: contextlib.ExitStack) -> Lab:
    defines = [path_rules(BASE), "dora.worker.http.access.log=true",
               "dora.worker.log.format=json", *options.defines]  # fmt: skip
    lab = FeedLab(root, hosts, defines)
    cleanup.callback(lab.stop)
    return lab.start()


def _start_spark(lab: Lab, cleanup: contextlib.ExitStack) -> SparkCluster:
    hosts = lab.network.hosts
    workers = [hosts[name] for name in hosts if name.startswith("w")]
    cluster = SparkCluster(hosts["w1"], workers, lab.root / "logs" / "spark")
    cleanup.callback(cluster.stop)
    return cluster.start()


def _overwrite(lab: Lab, path: str, table: Any) -> None:
    """Replace ``path`` in both dataset copies on S3 ("from outside" the cache)."""
    assert lab.s3 is not None
    client = lab.s3.client()
    for dataset_name in (CACHED, PASSTHROUGH):
        with client.open(f"{BUCKET}/{dataset_name}/{path}", "wb") as out:
            pq.write_table(table, out, compression="snappy")


def run_hosts_demo(
    options: DemoOptions, hosts: int, progress: DemoProgress, passthrough: bool = True
) -> HostsReport:
    """Run the demo across ``hosts`` emulated hosts (the pass-through copy too, with
    ``passthrough``); stops everything before returning."""
    spec = options.spec
    options.work_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as cleanup, guard():
        with progress.step(f"dataset: {spec.files} files x {spec.rows_per_file:,} trips") as count:
            paths = data_files(ensure_dataset(spec, options.work_dir / "datasets", count))
        root = Path(cleanup.enter_context(tempfile.TemporaryDirectory(dir=options.work_dir)))
        with progress.step(f"lab: {hosts} worker hosts, etcd and SeaweedFS in namespaces"):
            lab = _start_lab(root, hosts, options, cleanup)
        progress.say(f"  workers: {', '.join(lab.addresses)}")
        with progress.step(f"upload to {BASE}/{CACHED} and {BASE}/{PASSTHROUGH}"):
            _upload(lab, paths)
        tables = [pq.read_table(path, columns=list(pipeline.NEEDED)) for path in paths]
        with progress.step("Spark standalone: a Master on w1, a Worker on every worker host"):
            cluster = _start_spark(lab, cleanup)
        with progress.step("starting the driver on w1 and warming the executors up"):
            driver = Driver(lab, "w1", cluster, hosts, paths[0])
            cleanup.callback(driver.stop)
        runs = _Runs(lab, driver, progress, _reference(tables))
        contenders = [("native (webhdfs)", CACHED)]
        if passthrough:
            contenders.append(("native, pass-through", PASSTHROUGH))
        for name, dataset_name in contenders:
            runs.run(name, dataset_name, "cold")
            runs.run(name, dataset_name, "warm")
        changed = len(paths) // 2
        with progress.step(f"overwriting {paths[changed].name} in the UFS"):
            table = trips(spec, changed, revision=1)
            _overwrite(lab, paths[changed].name, table)
            tables[changed] = table.select(list(pipeline.NEEDED))
            runs.reference = _reference(tables)
        for name, dataset_name in contenders:
            runs.run(name, dataset_name, "changed")
        runs.report.served.update(served_by_host(lab))
        with progress.step("outside writes straight to S3, read through every worker at -1"):
            return replace(runs.report, outside=outside_writes(lab))


def render_hosts(report: HostsReport) -> str:
    """The locality and bytes-by-host figures under the table."""
    lines = ["input tasks by Spark locality level (Spark REST API, stages that read input):"]
    for run, contender, counts in report.locality:
        total = sum(counts.values()) or 1
        levels = ", ".join(f"{level} {counts[level]}" for level in LEVELS if counts[level])
        local = counts["PROCESS_LOCAL"] + counts["NODE_LOCAL"]
        lines.append(f"  {run:8} {contender:22} {levels}  (local {100 * local / total:.0f}%)")
    lines.append("bytes each worker served over WebHDFS (OPEN), to its own host / to other hosts:")
    own_total = other_total = 0
    for address, (own, other) in report.served.items():
        own_total, other_total = own_total + own, other_total + other
        lines.append(
            f"  {address:22} own host {megabytes(own):>10}   others {megabytes(other):>10}"
        )
    share = 100 * own_total / max(1, own_total + other_total)
    lines.append(f"  same-host share of the bytes served: {share:.0f}%")
    return "\n".join(lines)
