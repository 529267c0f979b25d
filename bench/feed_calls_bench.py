"""UFS calls and staleness of a read-heavy workload: re-checking on every read (sync interval 0)
against events (sync interval -1 with SeaweedFS's change feed).

Run with ``.venv/bin/python -m bench.feed_calls_bench`` (``--files 500 --rounds 20 --change
0.01``). One SeaweedFS and two worker services in this process over the same files. Each round
an outside s3fs client rewrites ``--change`` of the files, then every file is read once through
each worker. A read is stale when it returns other bytes than the file's last write; its age is
the time since that write. Prints the UFS metadata calls, the objects' bytes fetched and the
stale reads of each worker.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from config import load_config
from worker import assembly
from worker.devlab.local.s3 import LocalS3
from worker.feeds.runner import Feeds
from worker.keys import build_registry
from worker.service import WorkerService

BUCKET = "feedcalls"


def open_worker(work: Path, server: LocalS3, *defines: str, bucket: str = BUCKET) -> WorkerService:
    """A worker in process over ``server``'s ``bucket``, with ``defines``."""
    config = load_config(
        build_registry(),
        environ={},
        defines=[
            f"dora.work.dir={work}",
            f"dora.worker.ufs.roots=s3://{bucket}",
            *server.storage_defines(),
            *defines,
        ],
    )
    return assembly.open_service(config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--change", type=float, default=0.01)
    args = parser.parse_args()
    rng = random.Random(26)
    with tempfile.TemporaryDirectory(prefix="feed-calls-") as tmp:
        server = LocalS3(Path(tmp) / "s3", buckets=(BUCKET,)).start()
        feed = f"seaweedfs://127.0.0.1:{server.ports['filer.port.grpc']}/buckets/{BUCKET}"
        polling = open_worker(
            Path(tmp) / "sync0", server, "dora.user.file.metadata.sync.interval=0"
        )
        fed = open_worker(
            Path(tmp) / "events",
            server,
            "dora.user.file.metadata.sync.interval=-1",
            f"dora.ufs.change.feeds={feed}",
        )
        feeds = Feeds.start(fed.config, fed.changes)
        try:
            fs = server.client()
            uris = [f"s3://{BUCKET}/t/part-{n:04d}.bin" for n in range(args.files)]
            latest = {uri: (b"v0 " + uri.encode(), time.perf_counter()) for uri in uris}
            for uri, (data, _) in latest.items():
                fs.pipe_file(uri, data)
            stale: dict[str, list[float]] = {"sync 0": [], "events at -1": []}
            before = {name: s.stats() for name, s in (("sync 0", polling), ("events at -1", fed))}
            for round_ in range(args.rounds):
                for uri in rng.sample(uris, max(1, int(len(uris) * args.change))):
                    data = f"v{round_ + 1} {uri}".encode()
                    fs.pipe_file(uri, data)
                    latest[uri] = (data, time.perf_counter())
                for uri in uris:
                    for name, service in (("sync 0", polling), ("events at -1", fed)):
                        served = b"".join(service.read(service.request(uri)).chunks)
                        data, written = latest[uri]
                        if served != data:
                            stale[name].append(time.perf_counter() - written)
            reads = args.files * args.rounds
            print(f"{args.files} files x {args.rounds} rounds, {args.change:.0%} rewritten a round")
            for name, service in (("sync 0", polling), ("events at -1", fed)):
                after = service.stats()
                calls = after["metadata_ufs_calls"] - before[name]["metadata_ufs_calls"]
                fetched = after["bytes_from_ufs"] - before[name]["bytes_from_ufs"]
                ages = stale[name]
                oldest = f", the oldest {max(ages) * 1000:.0f} ms after its write" if ages else ""
                print(f"{name}: {calls} UFS metadata calls for {reads} reads, {fetched} bytes "
                      f"fetched, {len(ages)} stale reads{oldest}")  # fmt: skip
        finally:
            if feeds is not None:
                feeds.close()
            polling.close()
            fed.close()
            server.stop()


if __name__ == "__main__":
    main()
