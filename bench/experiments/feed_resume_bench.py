"""What a SeaweedFS feed's resubscription costs a worker with many cached statuses: with no
saved position (every subscription a gap: each cached status is re-checked with the UFS before
it is served again) and resuming from the saved position (issue 36 item 6).

Run with ``.venv/bin/python -m bench.experiments.feed_resume_bench`` (``--statuses 100000 --threads
16
--rounds 3``). One SeaweedFS (``weed mini``) holding ``--statuses`` small objects and a worker
service in this process at sync interval -1 that has listed them (every status cached). Each
round, for each mode in turn: the feed is closed (saving its position) and a new one started
(with ``dora.ufs.change.seaweedfs.resume.max.age`` 0: a gap; 1h: a resume), then every cached
status is asked once (``--threads`` callers, sync interval -1); the UFS metadata calls and the
time of that pass are the re-check's cost.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.feed_calls_bench import open_worker
from worker.devlab.local.s3 import LocalS3
from worker.feeds.keys import SeaweedSpec
from worker.feeds.seaweedfs import SeaweedFeed
from worker.service import WorkerService

BUCKET = "feedresume"
SYNC_NEVER = "dora.user.file.metadata.sync.interval=-1"
LONG_CALLS = "dora.ufs.call.deadline=10min"  # one listing of 100k objects takes longer than 10 s
MODES = {"gap (no saved position)": 0, "resume from the saved position": 3_600_000}


def put_objects(server: LocalS3, keys: list[str], threads: int) -> float:
    """PUT every key (a few bytes each); seconds taken."""
    fs = server.client()
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda key: fs.pipe_file(f"{BUCKET}/{key}", b"x"), keys))
    return time.perf_counter() - started


def one_pass(service: WorkerService, uris: list[str], threads: int) -> tuple[int, float]:
    """Ask every status once at sync interval -1: UFS metadata calls made, seconds."""
    calls = service.stats()["metadata_ufs_calls"]
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda uri: service.status(service.request(uri, -1)), uris, chunksize=256))
    return service.stats()["metadata_ufs_calls"] - calls, time.perf_counter() - started


def resubscribed(
    make: Callable[[int], SeaweedFeed], feed: SeaweedFeed, resume_ms: int
) -> SeaweedFeed:
    """``feed`` closed (its position saved) and a new one following, resuming or not."""
    feed.close()
    feed = make(resume_ms)
    feed.start()
    while not feed.connected:
        time.sleep(0.01)
    return feed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--statuses", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    keys = [f"t/dt=2024-01-01/part-{n:06d}" for n in range(args.statuses)]
    uris = [f"s3://{BUCKET}/{key}" for key in keys]
    with tempfile.TemporaryDirectory(prefix="feed-resume-") as tmp:
        server = LocalS3(Path(tmp) / "s3", buckets=(BUCKET,)).start()
        spec = SeaweedSpec(f"127.0.0.1:{server.ports['filer.port.grpc']}", f"/buckets/{BUCKET}")
        service = open_worker(Path(tmp) / "work", server, SYNC_NEVER, LONG_CALLS, bucket=BUCKET)

        def make(resume_ms: int) -> SeaweedFeed:
            return SeaweedFeed(spec, service.changes, resume_max_age_ms=resume_ms)

        feed = make(0)
        try:
            print(f"{args.statuses} objects PUT in {put_objects(server, keys, args.threads):.0f} s")
            feed.start()
            while not feed.connected:
                time.sleep(0.01)
            time.sleep(1)  # the subscription's gap and the replay of the last PUTs' events
            listed = service.list(service.request(f"s3://{BUCKET}/t/dt=2024-01-01", -1))
            assert len(listed) == args.statuses, len(listed)
            assert one_pass(service, uris, args.threads)[0] == 0  # every status is cached
            results: dict[str, list[tuple[int, float]]] = {mode: [] for mode in MODES}
            for _ in range(args.rounds):
                for mode, resume_ms in MODES.items():
                    feed = resubscribed(make, feed, resume_ms)
                    results[mode].append(one_pass(service, uris, args.threads))
            print(f"one pass over {args.statuses} cached statuses after a resubscription, "
                  f"{args.threads} threads, median of {args.rounds}:")  # fmt: skip
            for mode, runs in results.items():
                calls = statistics.median(c for c, _ in runs)
                seconds = statistics.median(s for _, s in runs)
                print(f"  {mode:32} {calls:>9,.0f} UFS calls {seconds:>9.2f} s "
                      f"(runs: {', '.join(f'{s:.2f}' for _, s in runs)})")  # fmt: skip
        finally:
            feed.close()
            service.close()
            server.stop()


if __name__ == "__main__":
    main()
