"""A Spark standalone cluster on the lab's worker hosts with its driver on w1, ready for the
demo's query over datasets uploaded to the lab's S3: what the lab's Spark fault test and the
pipeline bench share. Also Spark's REST API seen from outside the lab (task progress, to act
mid-job) and a lab whose workers reach S3 through the delaying proxy (object-store latency;
``tc netem`` does not work in these namespaces).

The Master and the driver run on w1, and the ``webhdfs://`` URLs name w1's worker: w1 is the
one worker host whose loss the job cannot survive, so a test drops another one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from worker.devlab.demo.hosts import Driver
from worker.devlab.lab.lab import BUCKET, Lab
from worker.devlab.lab.spark import SparkCluster
from worker.devlab.lab.sparkjob import UI_PORT
from worker.devlab.local.netproxy import TcpProxy
from worker.spark.webhdfs import webhdfs_url

DRIVER_HOST = "w1"
# A job that must outlive a host: the driver declares a silent executor lost after 6 s
# (checked every second) instead of 120 s (checked every 60 s), and the WebHDFS client gives
# up on a host that does not answer after 1 s (connect) or 10 s (a stalled read) instead of
# 60 s each, so that Spark reruns the lost tasks within seconds.
LOSS_SETTINGS = {
    "spark.executor.heartbeatInterval": "1s",
    "spark.network.timeout": "6s",
    "spark.network.timeoutInterval": "1s",
    "spark.hadoop.dfs.webhdfs.socket.connect-timeout": "1s",
    "spark.hadoop.dfs.webhdfs.socket.read-timeout": "10s",
}


class ProxiedLab(Lab):
    """A lab whose workers reach S3 through a :class:`TcpProxy` on the bridge's address (in
    this process), so that object-store latency can be set (``proxy.latency``, seconds) at any
    time. Clients other than the workers still reach S3 directly. Not thread-safe."""

    def __init__(self, root: Path, workers: int = 3, defines: Sequence[str] = ()) -> None:
        super().__init__(root, workers, defines)
        self.proxy: TcpProxy | None = None

    def worker_defines(self) -> list[str]:
        # Called once S3 runs and before any worker starts: the proxy starts here.
        assert self.s3 is not None
        if self.proxy is None:
            target = urlsplit(self.s3.endpoint)
            assert target.hostname is not None and target.port is not None
            proxy = TcpProxy(target.hostname, target.port, host=self.network.gateway)
            self.proxy = proxy.start()
        return [*super().worker_defines(), f"dora.ufs.s3.endpoint={self.proxy.url}"]

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            if self.proxy is not None:
                self.proxy.stop()


@dataclass(frozen=True)
class SparkLab:
    """The lab, its Spark standalone cluster and the driver on :data:`DRIVER_HOST`."""

    lab: Lab
    cluster: SparkCluster
    driver: Driver

    def url(self, prefix: str) -> str:
        """The ``webhdfs://`` URL (through w1's worker) of the dataset under ``prefix``."""
        return webhdfs_url(self.lab.addresses[0], f"s3://{BUCKET}/{prefix}")

    def upload(self, paths: Sequence[Path], prefix: str) -> list[str]:
        """Put ``paths`` straight into S3 under ``prefix``; their ``s3://`` URIs."""
        assert self.lab.s3 is not None
        client = self.lab.s3.client()
        for path in paths:
            client.put_file(str(path), f"{BUCKET}/{prefix}/{path.name}")
        return [f"s3://{BUCKET}/{prefix}/{path.name}" for path in paths]

    def api(self) -> SparkApi:
        return SparkApi(self.lab.network.hosts[DRIVER_HOST].address, self.driver.application)


def start_spark_lab(
    lab: Lab, sample: Path, cleanup: contextlib.ExitStack, settings: dict[str, str] | None = None
) -> SparkLab:
    """Start ``lab`` (unless it runs), a Master on w1 and a Worker on every worker host, and
    the driver on w1 with Spark ``settings``, its executors warmed up on ``sample`` (a local
    Parquet file); all stopped by ``cleanup``."""
    if not lab.workers:
        cleanup.callback(lab.stop)
        lab.start()
    hosts = lab.network.hosts
    workers = [hosts[name] for name in hosts if name.startswith("w")]
    cluster = SparkCluster(hosts[DRIVER_HOST], workers, lab.root / "logs" / "spark")
    cleanup.callback(cluster.stop)
    cluster.start()
    driver = Driver(lab, DRIVER_HOST, cluster, len(workers), sample, settings)
    cleanup.callback(driver.stop)
    return SparkLab(lab, cluster, driver)


def _instant(text: str) -> float:
    """Epoch seconds of one of Spark's REST times (``2026-11-27T14:05:55.123GMT``)."""
    moment = datetime.strptime(text.removesuffix("GMT"), "%Y-%m-%dT%H:%M:%S.%f")
    return moment.replace(tzinfo=UTC).timestamp()


class SparkApi:
    """One application's stages and tasks from Spark's REST API on the driver's UI, over one
    HTTP client (:meth:`close` it). Thread-safe (httpx's client is)."""

    def __init__(self, host: str, application: str) -> None:
        self.base = f"http://{host}:{UI_PORT}/api/v1/applications/{application}"
        self.http = httpx.Client(timeout=30)

    def close(self) -> None:
        self.http.close()

    def _get(self, path: str, **params: Any) -> Any:
        return self.http.get(f"{self.base}/{path}", params=params).json()

    def tasks(self, status: str | None = None) -> list[dict[str, Any]]:
        """Every task attempt of the stages in ``status`` (``ACTIVE``, ``COMPLETE``...; all
        stages without one), each with its ``stageId``."""
        stages = self._get("stages", **({"status": status} if status else {}))
        found = []
        for stage in stages:
            key = f"stages/{stage['stageId']}/{stage['attemptId']}/taskList"
            for task in self._get(key, length=100000):
                found.append({**task, "stageId": stage["stageId"]})
        return found

    def fresh_task_on(self, host: str) -> dict[str, Any] | None:
        """A task running on ``host`` that has more than half of the shortest finished task's
        time still ahead of it (so it cannot end before a fault that follows at once), None
        while there is none or no task of the active stages has finished yet."""
        tasks = self.tasks("ACTIVE")
        done = [t["duration"] / 1000 for t in tasks if t["status"] == "SUCCESS"]
        if not done:
            return None
        now = datetime.now(UTC).timestamp()
        for task in tasks:
            running = task["status"] == "RUNNING" and task["host"] == host
            if running and now - _instant(task["launchTime"]) < min(done) / 2:
                return task
        return None
