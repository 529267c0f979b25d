"""A front process's metrics, named as the primary's where they count the same thing
(``dora_request_seconds``, ``dora_bytes_served``), so the primary's ``/metrics`` sums them
(:mod:`worker.procs.summed`); the rest are the front's own (``dora_front_*``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.process_collector import ProcessCollector

from worker.metrics import bytes_served, idle_timeouts, request_latency


class FrontMetrics:
    """The counters of one front process. Thread-safe (prometheus_client collectors are)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)  # CPU seconds, summed over the processes
        self.request_latency = request_latency(self.registry)
        self.bytes_served = bytes_served(self.registry).labels("front")
        self.near_hits = Counter(
            "dora_front_near_cache_hits",
            "Statuses and listings a front process answered from its near-cache",
            ["kind"],
            registry=self.registry,
        )
        self.idle_timeouts = idle_timeouts(self.registry)
        self.passed_on = Counter(
            "dora_front_passed_on",
            "Requests a front process passed to the primary",
            registry=self.registry,
        )

    def served(self, route: str, seconds: float) -> None:
        self.request_latency.labels(route).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
