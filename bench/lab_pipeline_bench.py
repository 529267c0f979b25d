"""Figures of the demo's pipeline across the lab's hosts (issue 24): Spark standalone with a
worker and a one-core executor on each of 1 host vs 3 hosts (the Master and the driver on w1,
Spark's Parquet reader over ``webhdfs://`` through the workers), **cold** (files never read:
every byte comes from S3 through the workers) and **warm** (the same files again: from the
workers' caches), at 0 and 20 ms of object-store latency (the delaying proxy between the
workers and S3). Every answer is checked against the reference computed from the files.

After an unmeasured cold and warm pass (the JVMs' first reads over WebHDFS), each round reads
a fresh copy of the dataset cold, then again warm; the figure is the median of ``--rounds``
with its min-max. Also shown per run: what crossed the proxy from S3 and the
share of input tasks Spark ran node-local, and the requests the workers answered (from their
access logs) with their summed time.

A warm run must not reach the store (issue 36 item 5): the bench fails naming the requests
that crossed the proxy if one does. The workers keep "not found" answers for 1 s instead of
the default 10 s, so every warm run comes after the cold run's expired (as 2 of 36 warm runs
did by chance when Spark's probe of ``_spark_metadata`` still asked the store).

    .venv/bin/python -m bench.lab_pipeline_bench [--rounds 3] [--files 12] [--rows 50000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from worker.devlab.demo import pipeline
from worker.devlab.demo.dataset import data_files, ensure_dataset
from worker.devlab.demo.spec import DatasetSpec
from worker.devlab.lab.lab import Lab, guard
from worker.devlab.lab.netns import unavailable_reason
from worker.devlab.lab.sparklab import ProxiedLab, SparkLab, start_spark_lab

LATENCIES_MS = (0, 20)
HOSTS = (1, 3)
ACCESS_LOG = ("dora.worker.http.access.log=true", "dora.worker.log.format=json")
# Shorter than any cold run, so that every warm run asks after the negative entries expired.
NEGATIVE_TTL = "dora.worker.ufs.negative.cache.ttl=1s"
# What a process of the lab is, by a word of its command line; the first that matches wins.
PARTS = (
    ("CoarseGrainedExecutorBackend", "executors"),
    ("SparkSubmit", "driver"),
    ("worker.devlab.lab.sparkjob", "driver"),
    ("org.apache.spark.deploy", "Spark daemons"),
    ("dora\0worker", "workers"),
    ("weed", "S3"),
    ("etcd", "etcd"),
)


@dataclass(frozen=True)
class Run:
    """One query: its wall time, bytes from S3 (through the proxy), node-local task share,
    requests the workers answered and their summed time (from answer to last byte sent: a
    streamed OPEN lasts as long as the reader takes to consume it)."""

    hosts: int
    latency_ms: int
    state: str
    seconds: float
    ufs_bytes: int
    local_share: float
    requests: int
    request_seconds: float
    cpu: Counter[str] = field(default_factory=Counter)


class AccessLogs:
    """The workers' access log records written since the last :meth:`take`. Not
    thread-safe."""

    def __init__(self, lab: Lab) -> None:
        self.logs = [worker.log for worker in lab.workers]
        self.offsets = [log.stat().st_size for log in self.logs]

    def take(self) -> tuple[int, float]:
        """Requests and their summed seconds since the last call."""
        count, millis = 0, 0.0
        for i, log in enumerate(self.logs):
            with log.open("rb") as lines:
                lines.seek(self.offsets[i])
                for line in lines:
                    if line.startswith(b"{"):
                        record = json.loads(line)
                        if record.get("logger") == "worker.access":
                            count, millis = count + 1, millis + record["duration_ms"]
                self.offsets[i] = lines.tell()
        return count, millis / 1000


def cpu_seconds(lab: Lab) -> Counter[str]:
    """CPU seconds (user + system) used so far by the processes in the lab's namespaces, by
    :data:`PARTS`, and by this process (the proxy's thread) as ``proxy``."""
    spaces = {os.stat(f"/run/netns/{host.netns}").st_ino for host in lab.network.hosts.values()}
    tick = os.sysconf("SC_CLK_TCK")
    used: Counter[str] = Counter({"proxy": time.process_time()})
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino not in spaces:
                continue
            command = Path(f"/proc/{pid}/cmdline").read_text()
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
        part = next((name for word, name in PARTS if word in command), "other")
        used[part] += (int(fields[11]) + int(fields[12])) / tick
    return used


def _query(spark: SparkLab, proxy: Any, prefix: str, reference: str) -> tuple[Any, ...]:
    proxy.reset_counts()
    logs = AccessLogs(spark.lab)
    before = cpu_seconds(spark.lab)
    answer = spark.driver.query(spark.url(prefix))
    cpu = cpu_seconds(spark.lab)
    cpu.subtract(before)
    if answer["checksum"] != reference:
        raise RuntimeError(f"{prefix}: the answer differs from the reference")
    counts: dict[str, int] = answer["locality"]
    local = counts.get("NODE_LOCAL", 0) + counts.get("PROCESS_LOCAL", 0)
    share = local / max(1, sum(counts.values()))
    return answer["seconds"], proxy.stats().bytes_down, share, *logs.take(), cpu


def check_warm(run: Run, proxy: Any) -> None:
    """A warm run reads only the workers' caches: raise, naming what reached the store."""
    if run.ufs_bytes:
        asked = [f"{r.method} {r.target}" for r in proxy.requests()]
        raise RuntimeError(f"a warm run fetched {run.ufs_bytes} bytes from S3: {asked}")


def measure(hosts: int, paths: list[Path], reference: str, rounds: int) -> list[Run]:
    """Both latencies on one lab of ``hosts`` worker hosts, ``rounds`` cold/warm pairs each."""
    runs = []
    with contextlib.ExitStack() as cleanup:
        root = Path(cleanup.enter_context(tempfile.TemporaryDirectory()))
        lab = ProxiedLab(root, hosts, (*ACCESS_LOG, NEGATIVE_TTL))
        spark = start_spark_lab(lab, paths[0], cleanup)
        assert lab.proxy is not None
        # Unmeasured: the first reads over WebHDFS load and compile the JVMs' client classes.
        spark.upload(paths, "bench-warm-up")
        for _ in range(2):
            _query(spark, lab.proxy, "bench-warm-up", reference)
        # Latencies alternate within each round, so that the JVMs' warming over the runs
        # favours neither.
        for round_ in range(rounds):
            for latency in LATENCIES_MS:
                lab.proxy.latency = latency / 1000
                prefix = f"bench-{latency}ms-{round_}"
                spark.upload(paths, prefix)
                for state in ("cold", "warm"):
                    figures = _query(spark, lab.proxy, prefix, reference)
                    runs.append(Run(hosts, latency, state, *figures))
                    print(f"  {runs[-1]}", flush=True)
                    if state == "warm":
                        check_warm(runs[-1], lab.proxy)
    return runs


def _summary(runs: list[Run], hosts: int, latency: int, state: str) -> tuple[float, str]:
    chosen = [r for r in runs if (r.hosts, r.latency_ms, r.state) == (hosts, latency, state)]
    times = sorted(r.seconds for r in chosen)
    mb = statistics.median(r.ufs_bytes for r in chosen) / 1e6
    local = statistics.median(r.local_share for r in chosen) * 100
    requests = statistics.median(r.requests for r in chosen)
    busy = statistics.median(r.request_seconds for r in chosen)
    median = statistics.median(times)
    text = (
        f"{median:6.2f} s ({times[0]:.2f}-{times[-1]:.2f})  S3 {mb:6.1f} MB  "
        f"node-local {local:3.0f}%  {requests:4.0f} requests, {busy:6.2f} s open"
    )
    return median, text


def _cpu(runs: list[Run], hosts: int, latency: int, state: str) -> str:
    chosen = [r.cpu for r in runs if (r.hosts, r.latency_ms, r.state) == (hosts, latency, state)]
    parts = sorted({part for cpu in chosen for part in cpu})
    median = {part: statistics.median(cpu[part] for cpu in chosen) for part in parts}
    shown = sorted(median.items(), key=lambda item: -item[1])
    return ", ".join(f"{part} {seconds:.1f}" for part, seconds in shown if seconds >= 0.05)


def report(runs: list[Run], hosts_measured: list[int]) -> None:
    print(
        "\nhosts latency state   median (min-max), bytes from S3, node-local input tasks, "
        "requests to the workers and their summed time"
    )
    medians = {}
    for latency in LATENCIES_MS:
        for state in ("cold", "warm"):
            for hosts in hosts_measured:
                medians[hosts, latency, state], text = _summary(runs, hosts, latency, state)
                print(f"{hosts:5} {latency:4} ms {state:5}  {text}")
    print("\nCPU seconds per run by part (median; 2 cores = 2 CPU seconds per second):")
    for latency in LATENCIES_MS:
        for state in ("cold", "warm"):
            for hosts in hosts_measured:
                print(f"{hosts:5} {latency:4} ms {state:5}  {_cpu(runs, hosts, latency, state)}")
    if set(hosts_measured) != set(HOSTS):
        return
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
    report(runs, args.hosts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
