"""The demo's last act: writes made outside the cache reach its workers through the UFS's own
change feed (SeaweedFS's filer subscription), with no worker ever asking the UFS again.

A small object is written straight to SeaweedFS's S3 (not through any worker) and read through
every worker at ``sync_interval=-1``, so each caches it and never re-checks it on its own. Then,
round after round, it is overwritten straight to S3 and every worker is asked (each on a thread
of its own, at ``-1``) until it serves the new bytes: the time from the write's acknowledgement
to that answer is the delay the report shows, next to the lag each worker measured itself from
the filer's event times for these writes' own events: its lag histogram
(``dora_ufs_change_lag_seconds``) read before the first round and after the last, so the events
of the demo's own uploads before (the dataset, with seconds of lag as a subscription catches up
on them) do not count. With many workers one of them, elected through etcd, consumes the
filer's events and republishes them into the invalidation feed for the others.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from worker.insight import histogram_quantiles

ROUNDS = 5
WAIT_S = 30.0
"""How long a worker may take to serve an outside write before the demo reports it stale."""
_POLL_S = 0.005
LAG_HISTOGRAM = "dora_ufs_change_lag_seconds"

Buckets = dict[str, dict[float, float]]
"""A worker's lag histogram: per source, cumulative count per upper bound (seconds)."""


def feed_define(filer_host: str, filer_grpc_port: int, bucket: str) -> str:
    """The worker setting that follows ``bucket``'s changes through the filer's subscription."""
    return f"dora.ufs.change.feeds=seaweedfs://{filer_host}:{filer_grpc_port}/buckets/{bucket}"


@dataclass(frozen=True)
class OutsideReader:
    """A worker to read through: its name in the report and a client at its address (with
    its token, if it has one)."""

    name: str
    http: httpx.Client


@dataclass(frozen=True)
class OutsideReport:
    """Per worker: the delay (ms) until it served each outside write's bytes (None: not within
    :data:`WAIT_S`), the change-feed lag it measured for these writes' events (per source:
    ``events``, ``p50_ms``, ``p99_ms``; see :func:`lag_between`) and whether it consumed the
    filer's events itself."""

    uri: str
    delays_ms: dict[str, list[float | None]]
    lag: dict[str, dict[str, dict[str, Any]]]
    consumers: list[str]

    @property
    def served(self) -> bool:
        """Every worker served every write's bytes within :data:`WAIT_S`."""
        return all(d is not None for delays in self.delays_ms.values() for d in delays)


def measure(
    write: Callable[[bytes], None], uri: str, readers: Sequence[OutsideReader], rounds: int = ROUNDS
) -> OutsideReport:
    """Write ``uri`` with ``write`` (straight to the UFS) ``rounds`` times after a first
    version every reader has cached, and time each reader's first answer with the new bytes."""
    write(b"outside write 0")
    for reader in readers:
        _wait_served(reader, uri, b"outside write 0", time.monotonic())
    delays: dict[str, list[float | None]] = {reader.name: [] for reader in readers}
    before = {reader.name: lag_buckets(reader) for reader in readers}
    with ThreadPoolExecutor(len(readers), thread_name_prefix="demo-outside") as pool:
        for n in range(1, rounds + 1):
            data = f"outside write {n}".encode()
            write(data)
            written = time.monotonic()
            waits = [pool.submit(_wait_served, r, uri, data, written) for r in readers]
            for reader, wait in zip(readers, waits, strict=True):
                delays[reader.name].append(wait.result())
    # Each worker has applied the last write's events: it served its bytes at sync interval -1.
    lag = {reader.name: lag_between(before[reader.name], lag_buckets(reader)) for reader in readers}
    feeds = {reader.name: reader.http.get("/v1/overview").json()["feeds"] for reader in readers}
    return OutsideReport(
        uri, delays, lag, [name for name, feed in feeds.items() if feed["received"] > 0]
    )


def lag_buckets(reader: OutsideReader) -> Buckets:
    """``reader``'s lag histogram now, from its ``/metrics``."""
    text = reader.http.get("/metrics").text
    buckets: Buckets = {}
    for family in text_string_to_metric_families(text):
        if family.name != LAG_HISTOGRAM:
            continue
        for sample in family.samples:
            if sample.name == LAG_HISTOGRAM + "_bucket":
                bound = float(sample.labels["le"])
                buckets.setdefault(sample.labels["source"], {})[bound] = sample.value
    return buckets


def lag_between(before: Buckets, after: Buckets) -> dict[str, dict[str, Any]]:
    """Per source, the events applied between two readings of a lag histogram, with their
    p50 and p99 (ms, interpolated inside the buckets as Prometheus's ``histogram_quantile``)."""
    lag: dict[str, dict[str, Any]] = {}
    for source, counts in sorted(after.items()):
        earlier = before.get(source, {})
        window = [(bound, count - earlier.get(bound, 0.0)) for bound, count in counts.items()]
        quantiles = histogram_quantiles(window, (0.5, 0.99))
        lag[source] = {
            "events": int(max((count for _, count in window), default=0)),
            "p50_ms": _in_ms(quantiles[0.5]),
            "p99_ms": _in_ms(quantiles[0.99]),
        }
    return lag


def _wait_served(reader: OutsideReader, uri: str, data: bytes, since: float) -> float | None:
    """Ms from ``since`` until ``reader`` answers ``data`` for ``uri`` at sync interval -1;
    None if it does not within :data:`WAIT_S`."""
    params = {"path": uri, "sync_interval": "-1"}
    while True:
        answer = reader.http.get("/v1/read", params=params)
        now = time.monotonic()
        if answer.status_code == 200 and answer.content == data:
            return (now - since) * 1000
        if now - since > WAIT_S:
            return None
        time.sleep(_POLL_S)


def render(report: OutsideReport) -> str:
    """The outside writes' section of the demo's report."""
    rounds = max((len(d) for d in report.delays_ms.values()), default=0)
    consumers = ", ".join(report.consumers) or "none"
    lines = [
        f"outside writes: {report.uri} overwritten {rounds} times straight to SeaweedFS's S3,",
        "each read through the cache at sync_interval=-1 (no worker re-checks on its own);",
        f"the filer's change feed consumed by: {consumers}",
        f"  {'worker':22} {'new bytes served after: p50':>28} {'max':>9}   "
        f"{'feed lag of these writes: events':>32} {'p50':>9} {'p99':>9}",
    ]
    for name, delays in report.delays_ms.items():
        known = [d for d in delays if d is not None]
        p50 = f"{statistics.median(known):.0f} ms" if known else "-"
        worst = "stale" if len(known) < len(delays) else f"{max(known):.0f} ms"
        lag = next(iter(report.lag.get(name, {}).values()), {})
        lines.append(
            f"  {name:22} {p50:>28} {worst:>9}   {lag.get('events', 0):>32} "
            f"{_ms(lag.get('p50_ms')):>9} {_ms(lag.get('p99_ms')):>9}"
        )
    lines.append(
        "(feed lag: from each event's time at the filer to its application on the worker, as "
        "the worker measured it for these writes' events only)"
    )
    return "\n".join(lines)


def _in_ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"
