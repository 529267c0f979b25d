"""Spark standalone across the lab's hosts: a Master on the first worker host and a Worker on
each worker host (pyspark's ``spark-class``), each bound to its host's address, so that an
executor's host is the host whose worker it can read from locally. Started and stopped by PID;
what they leave (executors) goes with the lab's namespaces.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from worker.devlab.lab.netns import Host

MASTER_PORT = 7077
MASTER_UI_PORT = 8080
WORKER_UI_PORT = 8081
START_TIMEOUT_S = 120
# Each host's Worker offers one core and room for one small executor: the lab runs on a
# machine of a few cores, and one task at a time per host is enough to show where tasks run.
WORKER_CORES = 1
WORKER_MEMORY = "1g"
EXECUTOR_MEMORY = "768m"
# The lab's JVMs live for minutes on shared cores: the quick compiler alone and the serial
# collector start them and run short jobs with less CPU than the server defaults.
LEAN_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_home() -> Path:
    """The Spark distribution inside the pyspark package (its ``bin/spark-class``, ``jars``)."""
    import pyspark

    return Path(pyspark.__file__).parent


class SparkCluster:
    """A standalone Master and one Worker per host. Not thread-safe."""

    def __init__(self, master: Host, workers: Sequence[Host], logs: Path) -> None:
        self.master = master
        self.hosts = list(workers)
        self.logs = logs
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"spark://{self.master.address}:{MASTER_PORT}"

    def start(self) -> SparkCluster:
        """Start the Master and the Workers; wait until every Worker is registered."""
        self.logs.mkdir(parents=True, exist_ok=True)
        deploy = "org.apache.spark.deploy"
        self._launch(self.master, "master", f"{deploy}.master.Master",
                     "--host", self.master.address, "--port", str(MASTER_PORT),
                     "--webui-port", str(MASTER_UI_PORT))  # fmt: skip
        for host in self.hosts:
            self._launch(host, f"worker-{host.name}", f"{deploy}.worker.Worker",
                         "--host", host.address, "--webui-port", str(WORKER_UI_PORT),
                         "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
                         "--work-dir", str(host.private / "spark"), self.url)  # fmt: skip
        self._wait_registered()
        return self

    def _launch(self, host: Host, name: str, main: str, *args: str) -> None:
        env = {
            **os.environ,
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": host.address,
            "SPARK_LOG_DIR": str(self.logs),
            "SPARK_DAEMON_JAVA_OPTS": LEAN_JVM,
            "PYSPARK_PYTHON": sys.executable,
        }
        command = [str(spark_home() / "bin" / "spark-class"), main, *args]
        with (self.logs / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                host.command(command),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        self.processes.append(process)

    def alive_workers(self) -> int:
        """Workers the Master lists as ALIVE (0 while it does not answer)."""
        url = f"http://{self.master.address}:{MASTER_UI_PORT}/json/"
        try:
            workers = httpx.get(url, timeout=2).json()["workers"]
        except (httpx.HTTPError, ValueError, KeyError):
            return 0
        return sum(1 for worker in workers if worker.get("state") == "ALIVE")

    def _wait_registered(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.alive_workers() < len(self.hosts):
            exited = [p for p in self.processes if p.poll() is not None]
            if exited or time.monotonic() > deadline:
                raise RuntimeError(f"the Spark standalone cluster did not start; see {self.logs}")
            time.sleep(0.5)

    def stop(self) -> None:
        """SIGTERM each process group (the Worker takes its executors down), SIGKILL past
        20 s; reaped."""
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
