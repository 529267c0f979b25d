"""The Spark driver of the lab's demo, run on a lab host: ``python -m worker.devlab.lab.sparkjob
'<json>'`` starts a session on the standalone cluster the JSON names, then answers each line of
standard input (``{"url": "webhdfs://..."}``: run the demo's query over that dataset) with one
JSON line: the answer's checksum, the wall time, and the tasks of the stages that read input by
Spark's locality level, from Spark's own REST API (``/api/v1/applications/.../stages``).

The request: ``{"master": "spark://...", "host": driver address, "executors": how many,
"sample": a Parquet URL every host can read (the warm-up), "conf": {...}}``.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from typing import Any

import httpx

from worker.devlab.demo import pipeline
from worker.devlab.lab.spark import EXECUTOR_MEMORY, LEAN_JVM, START_TIMEOUT_S, WORKER_CORES

UI_PORT = 4040


class StageWatch:
    """The stages of one application that read input, each counted once. Not thread-safe."""

    def __init__(self, host: str, app_id: str) -> None:
        self.api = f"http://{host}:{UI_PORT}/api/v1/applications/{app_id}"
        self.seen: set[tuple[int, int]] = set()
        # One client: a call of its own each builds an SSL context, which py-spy showed as
        # an eighth of the driver's Python time in the lab's pipeline bench.
        self.http = httpx.Client(timeout=30)

    def new_tasks(self) -> Counter[str]:
        """Tasks by locality level (and bytes read by them) in stages not counted before."""
        counts: Counter[str] = Counter()
        for stage in self.http.get(f"{self.api}/stages").json():
            key = (stage["stageId"], stage["attemptId"])
            if key in self.seen or stage["status"] != "COMPLETE" or not stage["inputBytes"]:
                continue
            self.seen.add(key)
            tasks = self.http.get(
                f"{self.api}/stages/{key[0]}/{key[1]}/taskList", params={"length": 100000}
            ).json()
            for task in tasks:
                counts[task["taskLocality"]] += 1
        return counts


def session(request: dict[str, Any]) -> Any:
    from worker.spark.session import local_session

    hosts = int(request["executors"])
    conf = {
        "spark.driver.host": request["host"],
        "spark.driver.bindAddress": request["host"],
        "spark.ui.enabled": "true",
        "spark.ui.port": str(UI_PORT),
        "spark.executor.cores": str(WORKER_CORES),
        "spark.executor.memory": EXECUTOR_MEMORY,
        "spark.executor.extraJavaOptions": LEAN_JVM,
        "spark.cores.max": str(hosts * WORKER_CORES),
        "spark.sql.shuffle.partitions": str(hosts * WORKER_CORES),
        **request["conf"],
    }
    return local_session(hosts, "doracache-lab-demo", conf, False, request["master"])


def warm_up(spark: Any, executors: int, sample: str) -> None:
    """Wait for every host's executor, then run the query once on a local Parquet file, so
    the first measured run times its reads, not executors starting and the JIT compiling."""
    deadline = time.monotonic() + START_TIMEOUT_S
    # The driver's own block manager is in the list too.
    while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() <= executors:
        if time.monotonic() > deadline:
            raise RuntimeError(f"fewer than {executors} executors registered")
        time.sleep(0.5)
    pipeline.spark_aggregate(spark.read.parquet(sample))


def main(argv: list[str]) -> int:
    request = json.loads(argv[0])
    spark = session(request)
    try:
        warm_up(spark, int(request["executors"]), request["sample"])
        watch = StageWatch(request["host"], spark.sparkContext.applicationId)
        watch.new_tasks()  # the warm-up's stages: not part of any run
        print(json.dumps({"ready": spark.sparkContext.applicationId}), flush=True)
        for line in sys.stdin:
            started = time.monotonic()
            rows = pipeline.spark_aggregate(spark.read.parquet(json.loads(line)["url"]))
            seconds = time.monotonic() - started
            answer = {"checksum": pipeline.checksum(rows), "seconds": seconds}
            print(json.dumps({**answer, "locality": watch.new_tasks()}), flush=True)
        watch.http.close()
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
