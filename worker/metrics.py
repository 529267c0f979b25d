"""Prometheus metrics of one worker, in a registry of its own (so several workers can live in one
process, as tests do). Collectors read the metadata manager's and page store's counters at scrape
time; the read path and API count what only they see. The standard process, platform and garbage
collector metrics (``process_*``, ``python_info``, ``python_gc_*``) are in the same registry, so
one scrape of ``/metrics`` has them all."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from pagestore.api import PageStore
from pagestore.quota import QuotaUsage

# Metadata figures that are levels, not running totals: exposed as gauges (they go down).
_META_GAUGES = frozenset({"metastore_pending"})

ADVICE_TARGETS = (0.5, 0.8, 0.9, 0.95, 0.99)
"""The target hit ratios ``dora_cache_advice_capacity_bytes`` is given for."""

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)


class _StateCollector(Collector):
    """Exposes counters owned by other components without copying them on every change."""

    def __init__(
        self,
        meta_counters: Callable[[], dict[str, int]],
        pages: PageStore,
        load_progress: Callable[[], dict[str, int]],
    ) -> None:
        self._meta = meta_counters
        self._pages = pages
        self._loads = load_progress

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        yield from self._metadata()
        yield from self._page_store()
        loads = GaugeMetricFamily("dora_load_jobs", "Load jobs by state", labels=["state"])
        for state, count in self._loads().items():
            loads.add_metric([state], count)
        yield loads

    def _metadata(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        """The metadata tiers' hits by tier, then every other counter and level."""
        meta = self._meta()
        hits = CounterMetricFamily(
            "dora_metadata_hits", "Status lookups answered by a tier", labels=["tier"]
        )
        hits.add_metric(["memory"], meta.get("memory_hits", 0))
        hits.add_metric(["rocksdb"], meta.get("metastore_hits", 0))
        yield hits
        for name, count in sorted(meta.items()):
            if name in _META_GAUGES:
                yield GaugeMetricFamily(
                    f"dora_metadata_{name}", f"Metadata level: {name}", value=count
                )
            elif name not in ("memory_hits", "metastore_hits"):
                yield CounterMetricFamily(
                    f"dora_metadata_{name}", f"Metadata events: {name}", value=count
                )

    def _page_store(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        """The page store's hits, misses, evictions, failed puts and space."""
        stats = self._pages.stats()
        yield CounterMetricFamily("dora_page_hits", "Pages served from the store", value=stats.hits)
        yield CounterMetricFamily("dora_page_misses", "Pages not in the store", value=stats.misses)
        yield CounterMetricFamily(
            "dora_page_evictions", "Pages evicted for space", value=stats.evictions
        )
        failures = CounterMetricFamily(
            "dora_page_put_failures", "Pages not stored, by outcome", labels=["outcome"]
        )
        for outcome, count in stats.put_failures.items():
            failures.add_metric([outcome.name.lower()], count)
        yield failures
        yield GaugeMetricFamily(
            "dora_page_store_used_bytes", "Bytes of pages on disk", value=self._pages.used_bytes
        )
        yield GaugeMetricFamily(
            "dora_page_store_pack_bytes",
            "Bytes of pack files on disk (small pages, with entry headers and removed entries)",
            value=stats.pack_bytes,
        )
        yield GaugeMetricFamily(
            "dora_page_store_capacity_bytes",
            "Page store capacity",
            value=self._pages.capacity_bytes,
        )
        yield from self._advice()
        yield GaugeMetricFamily(
            "dora_pinned_bytes",
            "Bytes of pinned pages, never evicted (dora fs pin, a rule's pin), within "
            "dora.worker.page.store.pin.max",
            value=stats.pinned_bytes,
        )
        yield from _quotas(stats.quotas)
        yield GaugeMetricFamily(
            "dora_page_store_dirs_in_service",
            "Page directories in service (one that failed, or whose marker is damaged, is not)",
            value=stats.dirs_in_service,
        )

    def _advice(self) -> Iterator[GaugeMetricFamily]:
        """The miss-ratio curve's answers (LRU's curve, see ``/v1/cache/advice``)."""
        curve = self._pages.advice.curve()
        yield GaugeMetricFamily(
            "dora_cache_advice_hit_ratio",
            "Hit ratio an LRU page store of the configured capacity would have had on the "
            "pages read since start (the miss-ratio curve's estimate)",
            value=curve.hit_ratio(self._pages.capacity_bytes),
        )
        needed = GaugeMetricFamily(
            "dora_cache_advice_capacity_bytes",
            "Page store capacity an LRU cache needs for a target hit ratio on the pages read "
            "since start (no sample: out of reach)",
            labels=["target_hit"],
        )
        for target in ADVICE_TARGETS:
            capacity = curve.capacity_for(target)
            if capacity is not None:
                needed.add_metric([str(target)], capacity)
        yield needed


def _quotas(usage: Mapping[str, QuotaUsage]) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
    """Each quota's bytes, limit and evictions, labelled by its rule's pattern (``quota``: one
    value per quota rule declared since start, so the label set stays bounded)."""
    used = GaugeMetricFamily(
        "dora_quota_used_bytes",
        "Bytes of the pages charged to a quota (a rule's quota=, or a caller:<identity> rule's)",
        labels=["quota"],
    )
    limit = GaugeMetricFamily(
        "dora_quota_limit_bytes", "The limit of a quota, as its rule says", labels=["quota"]
    )
    evictions = CounterMetricFamily(
        "dora_quota_evictions",
        "Pages a quota gave up because storing another of its pages would pass its limit",
        labels=["quota"],
    )
    for name, figures in usage.items():
        used.add_metric([name], figures.used_bytes)
        limit.add_metric([name], figures.limit_bytes)
        evictions.add_metric([name], figures.evictions)
    yield used
    yield limit
    yield evictions


# The metrics a front process (worker.procs) counts too, declared once so that its series and
# the primary's have the same names, labels and help, which summing them needs.


def request_latency(registry: CollectorRegistry) -> Histogram:
    """REST request latency by route."""
    return Histogram(
        "dora_request_seconds",
        "REST request latency by route",
        ["route"],
        buckets=LATENCY_BUCKETS,
        registry=registry,
    )


def bytes_served(registry: CollectorRegistry) -> Counter:
    """Bytes served to readers, by where they came from."""
    return Counter(
        "dora_bytes_served",
        "Bytes served to readers, by where they came from",
        ["source"],
        registry=registry,
    )


def idle_timeouts(registry: CollectorRegistry) -> Counter:
    """Connections ended by a deadline, by phase."""
    return Counter(
        "dora_http_idle_timeouts",
        "Connections ended by a deadline: a request head not complete in time (head), a "
        "body that stalled while read (body) or came slower than its minimum rate "
        "(body_rate), an unread body still arriving after the answer (linger)",
        ["phase"],
        registry=registry,
    )


class Metrics:
    """The worker's metrics. Thread-safe (prometheus_client collectors are)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.bytes_served = bytes_served(self.registry)
        self.ufs_latency = Histogram(
            "dora_ufs_call_seconds",
            "Latency of data reads from the UFS",
            ["op"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.passthrough_reads = Counter(
            "dora_passthrough_reads",
            "Reads served straight from the UFS because the file is not cached by policy",
            registry=self.registry,
        )
        self.admission = Counter(
            "dora_admission_reads",
            "Reads by what their path's admission rule decided: admitted (fetched pages "
            "stored), passed_through (a rule says never cache) or deferred (second-read "
            "admission, not read within the window yet); a load job's batch counts each file",
            ["decision"],
            registry=self.registry,
        )
        for decision in ("admitted", "passed_through", "deferred"):
            self.admission.labels(decision)  # shown at 0 before the first read
        self.ttl_frees = Counter(
            "dora_ttl_frees",
            "Files whose metadata and pages were freed because their rule's ttl ran out",
            registry=self.registry,
        )
        self.pins = Counter("dora_pins", "Pins made (dora fs pin)", registry=self.registry)
        self.unpins = Counter("dora_unpins", "Unpins made (dora fs unpin)", registry=self.registry)
        self.short_circuit_located = Counter(
            "dora_short_circuit_located_bytes",
            "Bytes of cached pages whose page files were handed out to same-host clients for "
            "short-circuit reads (/v1/locate); the clients count what they read themselves",
            registry=self.registry,
        )
        self.near_cache = Gauge(
            "dora_near_cache_enabled",
            "1 when same-host clients may keep a near-cache (the generation file is allocated), "
            "0 when the first page directory's disk could not hold it",
            registry=self.registry,
        )
        self.cache_failures = Counter(
            "dora_cache_failures",
            "Reads that fell back to the UFS because the page store failed",
            registry=self.registry,
        )
        self.combine: Callable[[bytes], bytes] | None = None
        """Set by the multi-process worker (``dora.worker.processes``): what adds the front
        processes' counters to this process's rendered text."""
        self.last_errors: dict[str, tuple[float, str]] = {}
        """The last error answered per catalogue code: when (epoch s) and its message. Each
        assignment replaces one entry whole, so readers on other threads see a pair or none."""
        self._declare_http()

    def _declare_http(self) -> None:
        """The HTTP layer's metrics: latency by route, error answers, uploads, deadlines."""
        self.request_latency = request_latency(self.registry)
        self.errors = Counter(
            "dora_errors", "Error answers by code", ["code"], registry=self.registry
        )
        self.uploads_in_flight = Gauge(
            "dora_http_uploads_in_flight",
            "Requests with a body being served (dora.worker.http.max.concurrent.uploads caps it)",
            registry=self.registry,
        )
        self.uploads_refused = Counter(
            "dora_http_uploads_refused",
            "Requests with a body answered 503 because the upload cap was reached",
            registry=self.registry,
        )
        self.idle_timeouts = idle_timeouts(self.registry)

    def error_answered(self, code: str, message: str) -> None:
        """Count an error answer and remember it as the last of its code."""
        self.errors.labels(code).inc()
        self.last_errors[code] = (time.time(), message)

    def watch(
        self,
        meta_counters: Callable[[], dict[str, int]],
        pages: PageStore,
        load_progress: Callable[[], dict[str, int]],
    ) -> None:
        self.registry.register(_StateCollector(meta_counters, pages, load_progress))

    def render(self) -> bytes:
        text = generate_latest(self.registry)
        return text if self.combine is None else self.combine(text)
