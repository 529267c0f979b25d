"""How late a change feed's events take effect on this worker, measured continuously per source:
from the event's own time (SeaweedFS's ``ts_ns``, an S3 record's ``eventTime``) to the moment
this worker applied it — by the consumer itself, or by every other worker of a cluster when the
republished event reaches it through the etcd feed (the batch carries the event times).

The two ends are two clocks (the store's and this host's): a lag is only as true as their
agreement, and one below zero (the store's clock ahead) counts as 0. Events without a time of
their own (a SeaweedFS filer webhook message) are not measured. A SeaweedFS (re)subscription
replays the few seconds before it (``worker.feeds.seaweedfs.CLOCK_SLACK_NS``): those events count
with their full age, as late as they are (the gap at the subscription re-checked them anyway).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram

from worker.cluster.events import Origins
from worker.insight import histogram_quantiles

# From what a subscription delivers at once (ms) to a consumer catching up after a restart.
LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600)


class FeedLag:
    """The lag histogram and the last lag, per source, in the worker's registry.

    Thread-safe: prometheus_client's metrics are; ``_last`` is replaced one entry at a time
    under ``_lock``.
    """

    def __init__(self, registry: CollectorRegistry, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, tuple[float, float]] = {}  # source -> (lag s, applied at epoch s)
        self._histogram = Histogram(
            "dora_ufs_change_lag_seconds",
            "Change-feed events from their own time (the store's clock) to their application "
            "on this worker, by source",
            ["source"],
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self._gauge = Gauge(
            "dora_ufs_change_last_lag_seconds",
            "Lag of the last change-feed event applied on this worker, by source",
            ["source"],
            registry=registry,
        )

    def applied(self, source: str, times_ms: Iterable[int]) -> None:
        """Events of ``source`` that happened at ``times_ms`` (epoch ms) were applied now."""
        now = self._clock()
        lag = None
        for at_ms in times_ms:
            lag = max(0.0, now - at_ms / 1000)
            self._histogram.labels(source).observe(lag)
        if lag is not None:
            self._gauge.labels(source).set(lag)
            with self._lock:
                self._last[source] = (lag, now)

    def arrived(self, origins: Origins) -> None:
        """The events of a feed batch (republished by a cluster's consumer) were applied now."""
        for source, times in origins.items():
            self.applied(source, times)

    def describe(self) -> dict[str, dict[str, Any]]:
        """Per source: events measured, the last lag and when it was applied, and the p50 and
        p99 since start (from the histogram's buckets, as Prometheus computes them); in ms."""
        with self._lock:
            last = dict(self._last)
        described = {}
        for source, (lag, at) in sorted(last.items()):
            buckets = self._buckets(source)
            quantiles = histogram_quantiles(buckets.items(), (0.5, 0.99))
            described[source] = {
                "events": int(max(buckets.values(), default=0)),
                "last_ms": _ms(lag),
                "last_at": round(at, 3),
                "p50_ms": _ms(quantiles[0.5]),
                "p99_ms": _ms(quantiles[0.99]),
            }
        return described

    def _buckets(self, source: str) -> dict[float, float]:
        buckets: dict[float, float] = {}
        for family in self._histogram.collect():
            for sample in family.samples:
                if sample.name.endswith("_bucket") and sample.labels["source"] == source:
                    buckets[float(sample.labels["le"])] = sample.value
        return buckets


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)
