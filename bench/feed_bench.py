"""Change-feed benchmark: how long an outside write takes to be served by every worker that
never re-checks on its own (sync interval -1), through SeaweedFS's filer subscription.

Run with ``.venv/bin/python -m bench.feed_bench`` (``--writes 200 --workers 3 --files 20``).
One SeaweedFS (``weed mini``) and ``--workers`` real ``dora worker start`` processes, each
following the filer (``dora.ufs.change.feeds=seaweedfs://...``) or, with ``--cluster``, joined
through a local etcd so that one of them, elected, consumes the filer's events and republishes
them into the etcd feed for the others. For each write: every worker
reads the file (its old version is then cached), an outside s3fs client PUTs new bytes, and each
worker is polled in turn (``GET /v1/read``, a round every 5 ms) until it serves them. The
delay of a worker is from the PUT's answer to the first read that returns the new bytes (so it
includes up to one polling round: a few ms); the delay of a write is the slowest worker's.
Prints p50, p99 and max over the writes, per worker and overall, and the lag each worker
measured itself from the filer's event times (``/v1/overview``'s ``feeds.lag``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.side.results import percentile
from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.s3 import LocalS3

BUCKET = "feedbench"
POLL_S = 0.005
GIVE_UP_S = 30.0


class Worker:
    """One ``dora worker start`` process following the filer; stopped by PID."""

    def __init__(self, work: Path, server: LocalS3, etcd: LocalEtcd | None) -> None:
        feed = f"seaweedfs://127.0.0.1:{server.ports['filer.port.grpc']}/buckets/{BUCKET}"
        state = work / "state.json"
        work.mkdir(parents=True)
        args = [
            str(Path(sys.executable).with_name("dora")), "worker", "start",
            f"-Ddora.work.dir={work}", "-Ddora.worker.http.port=0",
            f"-Ddora.worker.ufs.roots=s3://{BUCKET}",
            "-Ddora.user.file.metadata.sync.interval=-1", f"-Ddora.ufs.change.feeds={feed}",
            *(f"-D{d}" for d in server.storage_defines()), "--state-file", str(state),
            *([] if etcd is None else [f"-Ddora.cluster.etcd.endpoints={etcd.endpoint}"]),
        ]  # fmt: skip
        with (work / "worker.log").open("wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not state.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((work / "worker.log").read_text())
            time.sleep(0.05)
        info = json.loads(state.read_text())
        self.http = httpx.Client(base_url=f"http://{info['host']}:{info['port']}", timeout=30)

    def read(self, uri: str) -> bytes:
        return self.http.get("/v1/read", params={"path": uri}).content

    def lag(self) -> str:
        """The feed lag this worker measured, and whether it consumed the filer itself."""
        feeds = self.http.get("/v1/overview").json()["feeds"]
        role = "consumer" if feeds["received"] else "through etcd"
        shown = [f"{name.split('/buckets')[0]}: p50 {lag['p50_ms']} ms, p99 {lag['p99_ms']} ms "
                 f"(n={lag['events']})" for name, lag in feeds["lag"].items()]  # fmt: skip
        return f"{role}; its own lag measure: {', '.join(shown) or 'none'}"

    def stop(self) -> None:
        self.http.close()
        self.process.terminate()
        self.process.wait(timeout=60)


def one_write(workers: list[Worker], fs: Any, uri: str, data: bytes) -> list[float]:
    """Each worker's delay (s) from the PUT's answer to serving ``data``."""
    for worker in workers:
        worker.read(uri)  # its current version is cached now
    fs.pipe_file(uri, data)
    written = time.perf_counter()
    delays: list[float | None] = [None] * len(workers)
    while None in delays:
        now = time.perf_counter()
        if now - written > GIVE_UP_S:
            raise RuntimeError(f"{uri}: not served by every worker within {GIVE_UP_S} s")
        for n, worker in enumerate(workers):
            if delays[n] is None and worker.read(uri) == data:
                delays[n] = time.perf_counter() - written
        time.sleep(POLL_S)
    return [d for d in delays if d is not None]


def summary(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"p50 {statistics.median(ms):.0f} ms, p99 {percentile(ms, 99):.0f} ms, "
        f"max {max(ms):.0f} ms (n={len(ms)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--cluster", action="store_true", help="one elected consumer, via etcd")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="feed-bench-") as tmp:
        server = LocalS3(Path(tmp) / "s3", buckets=(BUCKET,)).start()
        etcd = LocalEtcd(Path(tmp) / "etcd").start() if args.cluster else None
        workers: list[Worker] = []
        try:
            workers = [Worker(Path(tmp) / f"w{n}", server, etcd) for n in range(args.workers)]
            fs = server.client()
            uris = [f"s3://{BUCKET}/table/part-{n:03d}.bin" for n in range(args.files)]
            for uri in uris:
                fs.pipe_file(uri, b"initial")
            per_worker: list[list[float]] = [[] for _ in workers]
            overall = []
            for i in range(args.writes):
                delays = one_write(workers, fs, uris[i % len(uris)], f"version {i}".encode())
                for n, delay in enumerate(delays):
                    per_worker[n].append(delay)
                overall.append(max(delays))
            for n, values in enumerate(per_worker):
                print(f"worker {n}: {summary(values)}; {workers[n].lag()}")
            print(f"every worker (slowest per write): {summary(overall)}")
        finally:
            for worker in workers:
                worker.stop()
            if etcd is not None:
                etcd.stop()
            server.stop()


if __name__ == "__main__":
    main()
