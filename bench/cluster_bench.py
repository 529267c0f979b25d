"""Cluster benchmark: what one local etcd (Debian's 3.4) sustains for the invalidation feed, and
how long events take to reach three following workers.

Run with ``.venv/bin/python -m bench.cluster_bench`` (``--seconds 3 --runs 3`` by default).
Each figure is the median of ``--runs`` runs with the min-max range. Measures:

- raw etcd writes/s: sequential puts of one ~100-byte event batch (one client thread), then the
  same from 16 threads (etcd batches concurrent proposals into one raft entry and one fsync);
- feed events/s: 32 threads publishing one event each, as request threads do, through one
  :class:`Publisher` (group commit), and the writes that took;
- watch lag with 3 workers: three followers (their own etcd connections) apply a feed of 1,000
  events/s published by 8 threads; publish-to-apply delay per event and follower (p50, p99).

Events are ``s3://bench/warehouse/db/table/dt=2024-01-01/part-NNNNN.parquet`` with a 32-hex
version, about 100 bytes encoded.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from worker.cluster import layout
from worker.cluster.etcd import Etcd
from worker.cluster.events import Batch, Event, Op, Origins
from worker.cluster.follower import Follower
from worker.cluster.publisher import Publisher, PublisherOptions
from worker.devlab.local.etcd import LocalEtcd


def event(i: int) -> Event:
    path = f"s3://bench/warehouse/db/table/dt=2024-01-01/part-{i:05d}.parquet"
    return Event(Op.UPDATED, path, f"{i:032x}")


def run_threads(count: int, seconds: float, body: Callable[[int, float], int]) -> int:
    """``count`` threads each calling ``body(thread, deadline)``; the sum of their counts."""
    deadline = time.monotonic() + seconds
    totals = [0] * count

    def work(index: int) -> None:
        totals[index] = body(index, deadline)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(totals)


def raw_puts(etcd: Etcd, key: str, threads: int, seconds: float) -> float:
    value = Batch("bench", 0, (event(1),)).encode()

    def body(_: int, deadline: float) -> int:
        done = 0
        while time.monotonic() < deadline:
            etcd.put(key, value)
            done += 1
        return done

    return run_threads(threads, seconds, body) / seconds


def feed_events(etcd: Etcd, cluster: str, seconds: float) -> tuple[float, float]:
    options = PublisherOptions("bench", layout.feed_key(cluster), 10**9, 10**9)
    publisher = Publisher(etcd, options)
    publisher.start()

    def body(thread: int, deadline: float) -> int:
        done = 0
        while time.monotonic() < deadline:
            publisher.publish([event(thread * 1_000_000 + done)], wait_s=5)
            done += 1
        return done

    events = run_threads(32, seconds, body)
    batches = publisher.published_batches
    publisher.close(5)
    return events / seconds, batches / seconds


def burst(etcd: Etcd, cluster: str, size: int) -> float:
    """One job committing ``size`` files at once (one publish call): events/s until all are in
    etcd. No prefix collapse, so every event travels."""
    options = PublisherOptions("bench", layout.feed_key(cluster), 10**9, 10**9)
    publisher = Publisher(etcd, options)
    publisher.start()
    started = time.monotonic()
    assert publisher.publish([event(i) for i in range(size)], wait_s=60) is not None
    elapsed = time.monotonic() - started
    publisher.close(5)
    return size / elapsed


class TimingSink:
    """Records when each event was applied. Thread-safe."""

    def __init__(self) -> None:
        self.applied: dict[str, float] = {}
        self.lock = threading.Lock()

    def apply(self, event: Event) -> None:
        now = time.monotonic()
        with self.lock:
            self.applied[event.path] = now

    def reset(self, before_ms: int) -> None:
        """Nothing cached here to re-check."""

    def arrived(self, origins: Origins) -> None:
        """Feed lag is not what this bench measures."""


class NoMarkers:
    def load(self) -> bytes | None:
        return None

    def save(self, value: bytes) -> None:
        """Positions are not kept: each run starts afresh."""


def watch_lag(endpoint: str, cluster: str, seconds: float, rate: int) -> tuple[float, float]:
    followers: list[Follower] = []
    sinks: list[TimingSink] = []
    for index in range(3):
        sink = TimingSink()
        feed = Follower(
            Etcd([endpoint], 2.0), layout.feed_key(cluster), f"w{index}", sink, NoMarkers(), 10
        )
        feed.start()
        followers.append(feed)
        sinks.append(sink)
    while not all(feed.connected for feed in followers):
        time.sleep(0.01)
    publisher = Publisher(
        Etcd([endpoint], 2.0), PublisherOptions("pub", layout.feed_key(cluster), 10**9, 10**9)
    )
    publisher.start()
    sent: dict[str, float] = {}
    sent_lock = threading.Lock()
    per_thread = rate / 8

    def body(thread: int, deadline: float) -> int:
        done = 0
        start = time.monotonic()
        while time.monotonic() < deadline:
            due = start + done / per_thread
            if time.monotonic() < due:
                time.sleep(due - time.monotonic())  # pacing the load generator, not the product
            e = event(thread * 1_000_000 + done)
            with sent_lock:
                sent[e.path] = time.monotonic()
            publisher.publish([e], wait_s=5)
            done += 1
        return done

    run_threads(8, seconds, body)
    publisher.close(5)
    last = max(sent, key=lambda p: sent[p])
    while not all(last in sink.applied for sink in sinks):
        time.sleep(0.01)
    lags = sorted(
        (sink.applied[path] - at) * 1000
        for sink in sinks
        for path, at in sent.items()
        if path in sink.applied
    )
    for feed in followers:
        feed.close()
    return statistics.median(lags), lags[int(len(lags) * 0.99)]


def summary(values: list[float], unit: str) -> str:
    return (
        f"{statistics.median(values):,.1f} {unit} (min {min(values):,.1f} - max {max(values):,.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    figures: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        figures.setdefault(name, []).append(value)

    with tempfile.TemporaryDirectory(prefix="dora-cluster-bench-") as tmp:
        server = LocalEtcd(Path(tmp) / "etcd").start()
        try:
            etcd = Etcd([server.endpoint], 5.0)
            for run in range(args.runs):
                add("raw puts/s, 1 thread", raw_puts(etcd, f"/raw{run}", 1, args.seconds))
                add("raw puts/s, 16 threads", raw_puts(etcd, f"/raw{run}", 16, args.seconds))
                events, writes = feed_events(etcd, f"feed{run}", args.seconds)
                add("feed events/s, 32 publishing threads", events)
                add("feed etcd writes/s for those", writes)
                add(
                    "burst of 10,000 events in one publish, events/s",
                    burst(etcd, f"b{run}", 10_000),
                )
                p50, p99 = watch_lag(server.endpoint, f"lag{run}", args.seconds, 1000)
                add("watch lag p50 ms, 3 followers, 1000 events/s", p50)
                add("watch lag p99 ms, 3 followers, 1000 events/s", p99)
                etcd.compact(etcd.revision("/"))
        finally:
            server.stop()
    print(f"cluster bench: median of {args.runs} runs of {args.seconds:g}s (min-max)")
    for name, values in figures.items():
        unit = "ms" if "ms" in name else "/s"
        print(f"  {name}: {summary(values, unit)}")


if __name__ == "__main__":
    main()
