"""Serve while revalidating: what a status call costs at sync interval 0 when it waits for the
re-check, and when it is answered from the cache while the re-check runs in the background.

Run with ``.venv/bin/python -m bench.serve_stale_bench`` (``--files 200 --rounds 10``). One
SeaweedFS and one worker service in this process; every file's status is cached first, then
each round asks for every file's status (``WorkerService.status``) once per mode. Prints the
p50 and p99 of a call in each mode and the UFS status calls each made or started (a background
re-check is one status call; calls that find one running for their path start none).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.feed_calls_bench import open_worker
from worker.devlab.local.s3 import LocalS3
from worker.service import WorkerService

BUCKET = "servestale"


def _timed(service: WorkerService, uris: list[str], rounds: int, serve_stale: bool) -> list[float]:
    took: list[float] = []
    for _ in range(rounds):
        for uri in uris:
            call = service.request(uri, 0, serve_stale=serve_stale)
            start = time.perf_counter()
            service.status(call)
            took.append((time.perf_counter() - start) * 1000)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-stale-") as tmp:
        server = LocalS3(Path(tmp) / "s3", buckets=(BUCKET,)).start()
        service = open_worker(Path(tmp) / "work", server, bucket=BUCKET)
        try:
            raw = server.client()
            uris = [f"s3://{BUCKET}/f{n:05d}" for n in range(args.files)]
            for uri in uris:
                raw.pipe_file(uri.removeprefix("s3://"), b"x")
                service.status(service.request(uri))
            for serve_stale in (False, True):
                before = service.meta.counters()
                took = _timed(service, uris, args.rounds, serve_stale)
                after = service.meta.counters()
                counted = "revalidations" if serve_stale else "ufs_calls"
                calls = after[counted] - before[counted]
                name = "serve_stale" if serve_stale else "sync 0"
                p50 = statistics.median(took)
                p99 = statistics.quantiles(took, n=100)[98]
                print(f"{name:12} p50 {p50:.3f} ms  p99 {p99:.3f} ms  UFS status calls {calls}")
        finally:
            service.close()
            server.stop()


if __name__ == "__main__":
    main()
