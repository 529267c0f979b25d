"""The service's view of itself for operators: what ``/v1/overview``, ``/v1/history`` and
``/v1/files/top`` answer (the console draws them), as plain data."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any

from prometheus_client import Counter

from config import Config
from pagestore.api import PageStore, StoreStats
from pagestore.mrc import Curve
from ufs.roots import MountRoots
from ufs.status import UfsStatus
from worker import keys
from worker.feeds import keys as feed_keys
from worker.feeds.change import CacheSink
from worker.insight import History, TopFiles, histogram_quantiles
from worker.meta.manager import MetadataManager
from worker.metrics import Metrics
from worker.tls import keys as tls_keys

S3_ROUTE = "s3:"
"""The S3 endpoint's operations in ``dora_request_seconds``: ``route="s3:<Operation>"``."""


class Overview:
    """The operator's view of ``worker.service.WorkerService``, over its parts named below.
    Thread-safe as those are."""

    config: Config
    roots: MountRoots
    meta: MetadataManager
    pages: PageStore
    metrics: Metrics
    changes: CacheSink
    history: History
    top_files: TopFiles
    started_at: float
    readiness: Callable[[], dict[str, Any]]
    stats: Callable[[], dict[str, int]]
    cached_bytes: Callable[[Sequence[UfsStatus]], builtins.list[int]]

    def overview(self) -> dict[str, Any]:
        """The worker at a glance (``/v1/overview``): version, uptime, configuration sources,
        mount roots, readiness and restore, UFS health, security, the change feeds, the page
        store per directory and the metadata tiers."""
        page_stats = self.pages.stats()
        feeds: list[str] = self.config.get(feed_keys.FEEDS)
        return {
            "version": metadata.version("doracache"),
            "started_at": self.started_at,
            "uptime_s": round(time.time() - self.started_at, 1),
            "config_sources": self.config.sources(),
            "mount_roots": list(self.roots.roots),
            "readiness": self.readiness(),
            "restore": {
                "ready": page_stats.ready,
                "restored_pages": page_stats.restored_pages,
                "restore_seconds": round(page_stats.restore_seconds, 3),
            },
            "ufs": self._ufs_health(),
            "security": {
                "token": bool(self.config.get(keys.TOKEN)),
                "tls": bool(self.config.get(tls_keys.WORKER_CERT)),
                "mutual_tls": bool(self.config.get(tls_keys.WORKER_CLIENT_CA)),
            },
            "feeds": {
                "sources": feeds,
                **self.changes.counters.snapshot(),
                "lag": self.changes.lag.describe(),
            },
            "page_store": {
                "pages": page_stats.pages,
                "files": sum(d.files for d in page_stats.dirs),
                "used_bytes": page_stats.used_bytes,
                "capacity_bytes": page_stats.capacity_bytes,
                "evictions": page_stats.evictions,
                "invalidated_pages": page_stats.invalidated_pages,
                "pinned_bytes": page_stats.pinned_bytes,
                "pin_limit_bytes": page_stats.pin_limit_bytes,
                "quotas": [
                    {
                        "name": name,
                        "used_bytes": q.used_bytes,
                        "limit_bytes": q.limit_bytes,
                        "evictions": q.evictions,
                    }
                    for name, q in page_stats.quotas.items()
                ],
                "dirs": [
                    {
                        "path": d.path,
                        "used_bytes": d.used_bytes,
                        "capacity_bytes": d.capacity_bytes,
                        "in_service": d.in_service,
                        "files": d.files,
                    }
                    for d in page_stats.dirs
                ],
            },
            "metadata": {**self.meta.counters(), **self.meta.entries()},
            "policy": self._policy_actions(page_stats),
            "stats": self.stats(),
            "s3": self._s3_traffic(),
        }

    def _policy_actions(self, page_stats: StoreStats) -> dict[str, Any]:
        """What the cache policy did since start (docs/cache-policy.md): reads by admission
        decision, reads served through, TTL frees, pins, pinned bytes, quota evictions; the same
        counts as ``/metrics`` (``dora_admission_reads``, ``dora_passthrough_reads``,
        ``dora_ttl_frees``, ``dora_pins``, ``dora_unpins``, ``dora_pinned_bytes``,
        ``dora_quota_evictions``), for ``dora cache policy`` and the console."""
        metrics = self.metrics
        return {
            "admission": {
                sample.labels["decision"]: int(sample.value)
                for family in metrics.admission.collect()
                for sample in family.samples
                if sample.name.endswith("_total")
            },
            "passthrough_reads": self._total(metrics.passthrough_reads),
            "ttl_frees": self._total(metrics.ttl_frees),
            "pins": self._total(metrics.pins),
            "unpins": self._total(metrics.unpins),
            "pinned_bytes": page_stats.pinned_bytes,
            "pin_limit_bytes": page_stats.pin_limit_bytes,
            "quota_evictions": sum(q.evictions for q in page_stats.quotas.values()),
        }

    @staticmethod
    def _total(counter: Counter) -> int:
        """The count of a counter without labels."""
        return int(
            sum(
                sample.value
                for family in counter.collect()
                for sample in family.samples
                if sample.name.endswith("_total")
            )
        )

    def _s3_traffic(self) -> dict[str, Any]:
        """Per S3 operation since start: requests and latency quantiles (from the request latency
        histogram's buckets); and the endpoint's requests for keys other workers own, by outcome
        (``worker.api.s3.forward``)."""
        buckets: dict[str, dict[float, float]] = {}
        for family in self.metrics.request_latency.collect():
            for sample in family.samples:
                route = sample.labels.get("route", "")
                if sample.name.endswith("_bucket") and route.startswith(S3_ROUTE):
                    bound = float(sample.labels["le"])
                    buckets.setdefault(route.removeprefix(S3_ROUTE), {})[bound] = sample.value
        operations = []
        for name, counts in sorted(buckets.items()):
            quantiles = histogram_quantiles(counts.items(), (0.5, 0.99))
            operations.append(
                {
                    "operation": name,
                    "requests": int(max(counts.values(), default=0)),
                    "p50_ms": self._ms(quantiles[0.5]),
                    "p99_ms": self._ms(quantiles[0.99]),
                }
            )
        owners = {
            sample.labels["outcome"]: int(sample.value)
            for family in self.metrics.registry.collect()
            if family.name == "dora_s3_owner_requests"
            for sample in family.samples
            if sample.name.endswith("_total")
        }
        return {"operations": operations, "owner_requests": owners}

    def _ufs_health(self) -> dict[str, Any]:
        """Latency quantiles of the UFS data reads since start (from the latency histogram's
        buckets, as Prometheus would compute them) and the last time the UFS was unavailable."""
        buckets: dict[float, float] = {}
        for family in self.metrics.ufs_latency.collect():
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    bound = float(sample.labels["le"])
                    buckets[bound] = buckets.get(bound, 0.0) + sample.value
        quantiles = histogram_quantiles(buckets.items(), (0.5, 0.99))
        last = self.metrics.last_errors.get("UfsUnavailable")
        return {
            "reads": int(max(buckets.values(), default=0)),
            "latency_p50_ms": self._ms(quantiles[0.5]),
            "latency_p99_ms": self._ms(quantiles[0.99]),
            "last_error": None if last is None else {"at": last[0], "message": last[1]},
        }

    @staticmethod
    def _ms(seconds: float | None) -> float | None:
        return None if seconds is None else round(seconds * 1000, 3)

    def top_read(self, limit: int) -> builtins.list[dict[str, Any]]:
        """The ``limit`` files read most through this worker, with how much of each is cached
        (``/v1/files/top``); files whose status the worker no longer holds are left out."""
        reads = self.top_files.top(limit)
        statuses = self.meta.reads.peek([r.uri for r in reads])
        known = [(r, s) for r, s in zip(reads, statuses, strict=True) if s is not None]
        cached = self.cached_bytes([s for _, s in known])
        return [
            {
                "uri": r.uri,
                "reads": r.reads,
                "bytes_read": r.bytes,
                "size": s.size,
                "version": s.version,
                "cached_bytes": c,
                "cached_fraction": 1.0 if s.size == 0 else round(c / s.size, 4),
            }
            for (r, s), c in zip(known, cached, strict=True)
        ]

    def history_since(self, since: float | None) -> dict[str, Any]:
        """The counters sampled over the last hour (after epoch second ``since``, if given),
        and the sampling period (``/v1/history``)."""
        self.history.start()  # a worker nobody looks at samples nothing
        return {"period_s": self.history.period_s, "samples": self.history.samples(since)}

    def miss_ratio_curve(self) -> Curve:
        """The page cache's miss-ratio curve so far (``pagestore.mrc``)."""
        return self.pages.advice.curve()

    def capacity_bytes(self) -> int:
        """The page store's capacity."""
        return self.pages.capacity_bytes
