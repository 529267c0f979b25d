"""Change-feed load: the lag of a worker's SeaweedFS feed under a large commit, and the events
per second one consumer sustains.

Run with ``.venv/bin/python -m bench.feed_load_bench`` (``--objects 10000 --threads 16``). One
SeaweedFS (``weed mini``) and a worker service in this process following its filer:

- commit lag: ``--threads`` s3fs clients PUT ``--objects`` small objects under one table
  directory as fast as SeaweedFS takes them, while the feed applies their events; the lag is
  from the last PUT's answer to the feed having applied every event;
- consumer rate: a second worker's feed subscribes from before the commit, so the filer
  replays the whole commit to it as fast as it reads; events applied per second.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.feed_calls_bench import open_worker
from worker.devlab.local.s3 import LocalS3
from worker.feeds.keys import SeaweedSpec
from worker.feeds.seaweedfs import CLOCK_SLACK_NS, SeaweedFeed
from worker.service import WorkerService

BUCKET = "feedload"
SYNC_NEVER = "dora.user.file.metadata.sync.interval=-1"


def wait_received(service: WorkerService, count: int, timeout: float = 600.0) -> float:
    """When (perf_counter) the service's sink had received ``count`` events."""
    deadline = time.monotonic() + timeout
    while service.changes.counters.snapshot()["received"] < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {service.changes.counters.snapshot()} after {timeout} s")
        time.sleep(0.005)
    return time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="feed-load-") as tmp:
        server = LocalS3(Path(tmp) / "s3", buckets=(BUCKET,)).start()
        spec = SeaweedSpec(f"127.0.0.1:{server.ports['filer.port.grpc']}", f"/buckets/{BUCKET}")
        live = open_worker(Path(tmp) / "live", server, SYNC_NEVER, bucket=BUCKET)
        feed = SeaweedFeed(spec, live.changes)
        replay = open_worker(Path(tmp) / "replay", server, SYNC_NEVER, bucket=BUCKET)
        try:
            feed.start()
            while not feed.connected:
                time.sleep(0.01)
            before_ns = time.time_ns()
            fs = server.client()
            keys = [
                f"{BUCKET}/warehouse/t/dt=2024-01-01/part-{n:05d}.parquet"
                for n in range(args.objects)
            ]
            started = time.perf_counter()
            with ThreadPoolExecutor(args.threads) as pool:
                list(pool.map(lambda key: fs.pipe_file(key, b"x" * 100), keys))
            committed = time.perf_counter()
            applied = wait_received(live, args.objects)
            rate = args.objects / (committed - started)
            print(f"commit of {args.objects} objects: {rate:,.0f} PUT/s")
            print(f"feed lag after the last PUT's answer: {(applied - committed) * 1000:,.0f} ms")
            # Subscribing from before the commit: the filer replays it at the reader's pace.
            rereader = SeaweedFeed(
                spec, replay.changes, clock_ns=lambda: before_ns + CLOCK_SLACK_NS
            )
            begun = time.perf_counter()
            rereader.start()
            done = wait_received(replay, args.objects)
            rereader.close()
            print(
                f"one consumer, replaying the commit: {args.objects / (done - begun):,.0f} events/s"
            )
        finally:
            feed.close()
            live.close()
            replay.close()
            server.stop()


if __name__ == "__main__":
    main()
