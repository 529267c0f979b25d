"""One worker's part in the cluster: its membership, its publisher, its follower, and the hooks
that join them to the worker service (``worker.assembly`` builds it, the worker process starts
and closes it)."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from config import Config
from pagestore.api import PageStore
from ufs import uri as uris
from ufs.status import UfsStatus
from worker.api.s3 import keys as s3_keys
from worker.cluster import keys as cluster_keys
from worker.cluster import layout
from worker.cluster.etcd import Etcd
from worker.cluster.events import Event, Op, Origin, Origins
from worker.cluster.follower import Follower
from worker.cluster.http import ASGIApp, RevisionMiddleware
from worker.cluster.members import Registration
from worker.cluster.publisher import Publisher, PublisherOptions
from worker.common import client_keys
from worker.meta.manager import MetadataManager
from worker.meta.writes import MetadataWrites
from worker.tls import keys as tls_keys

log = logging.getLogger(__name__)

MARKER = "cluster.feed"


class MetaSink:
    """Applies feed events to the metadata's write side: drop the path (or everything under a
    prefix) with its parent's listing, the dropped versions' pages going through its
    listeners; a creation also drops cached "not found" answers for its directories.

    A prefix deleted or invalidated also loses the pages of files this worker holds no status
    for, as it did on the worker where it happened; a prefix of collapsed updates keeps them
    (a page is served only for the version a status names, so an outdated one is never read).
    The times of change-feed events a batch carries go to ``heard`` (the feed's lag).
    """

    def __init__(
        self, meta: MetadataWrites, pages: PageStore, heard: Callable[[Origins], None]
    ) -> None:
        self._meta = meta
        self._pages = pages
        self._heard = heard

    def apply(self, event: Event) -> None:
        try:
            self._meta.invalidate(event.path, recursive=event.prefix)
            if event.prefix and event.op in (Op.DELETED, Op.INVALIDATED):
                self._pages.delete_prefix(event.path)
            if event.op is Op.CREATED:
                ancestor = uris.parent(event.path)
                while ancestor is not None:
                    self._meta.invalidate(ancestor)
                    ancestor = uris.parent(ancestor)
        except ValueError as exc:
            log.error("etcd feed: skipping an event for %r: %s", event.path, exc)

    def reset(self, before_ms: int) -> None:
        self._meta.require_sync_before(before_ms)

    def arrived(self, origins: Origins) -> None:
        self._heard(origins)


class MetaMarkers:
    """The follower's position in the worker's RocksDB (under a key no URI can have)."""

    def __init__(self, meta: MetadataManager) -> None:
        self._meta = meta

    def load(self) -> bytes | None:
        return self._meta.load_marker(MARKER)

    def save(self, value: bytes) -> None:
        self._meta.save_marker(MARKER, value)


class WorkerHooks(Protocol):
    """Where a node hooks into the worker service (``worker.service.WorkerService`` is one)."""

    def add_change_listener(
        self, fn: Callable[[list[Event], Sequence[Origin | None]], int | None]
    ) -> None:
        """Call ``fn`` with every change the worker makes or hears of; it returns the feed
        revision it published them under."""

    def add_readiness_probe(self, name: str, probe: Callable[[], tuple[str, bool]]) -> None:
        """Report ``probe()`` in the worker's readiness, ready only while it says so."""


@dataclass(frozen=True)
class NodeParts:
    """What a node uses of the worker: the hooks of its service, the metadata it applies the
    feed to and keeps its position in, the page store, where it reports the change feeds' lag
    (``heard``) and the registry its metrics go to."""

    hooks: WorkerHooks
    meta: MetadataManager
    pages: PageStore
    heard: Callable[[Origins], None]
    registry: CollectorRegistry


class ClusterNode:
    """Membership, publishing and following for one worker.

    Thread-safe: each part is. :meth:`changed` runs on request threads and blocks (bounded by
    the etcd timeout) until the change is in etcd, so the answer can name its revision.
    """

    def __init__(self, config: Config, parts: NodeParts, host: str, port: int) -> None:
        self.cluster: str = config.get(client_keys.CLUSTER_NAME)
        ttl_s = max(2, config.get(cluster_keys.LEASE_TTL) // 1000)
        self.timeout_s = config.get(client_keys.ETCD_TIMEOUT) / 1000
        self.read_wait_s = config.get(cluster_keys.READ_WAIT) / 1000
        self.etcd = Etcd.from_config(config)
        started_ms = int(time.time() * 1000)
        scheme = "https" if config.get(tls_keys.WORKER_CERT) else "http"
        capacity = parts.pages.capacity_bytes
        s3_port = config.get(s3_keys.PORT) or 0
        self.info = layout.WorkerInfo(host, port, started_ms, capacity, scheme, s3_port)
        self.publisher = Publisher(
            self.etcd,
            PublisherOptions(
                worker_id=self.info.id,
                feed_key=layout.feed_key(self.cluster),
                prefix_threshold=config.get(cluster_keys.PREFIX_THRESHOLD),
                pending_limit=config.get(cluster_keys.PENDING_LIMIT),
            ),
        )
        self.follower = Follower(
            self.etcd,
            layout.feed_key(self.cluster),
            self.info.id,
            MetaSink(parts.meta.writes, parts.pages, parts.heard),
            MetaMarkers(parts.meta),
            idle_timeout_s=float(ttl_s),
        )
        self.registration = Registration(
            self.etcd, self.cluster, self.info, ttl_s, lambda: self.follower.applied
        )
        self.middleware: RevisionMiddleware | None = None
        parts.hooks.add_change_listener(self.changed)
        parts.meta.writes.add_sync_listener(self._synced)
        parts.registry.register(_ClusterCollector(self))
        parts.hooks.add_readiness_probe("feed", self._feed_state)

    def _feed_state(self) -> tuple[str, bool]:
        """The follower's state; a worker whose follower failed or is gone is not ready: it
        would serve what other workers have changed without hearing of it."""
        state = self.follower.state()
        return state, state in ("following", "disconnected")

    @classmethod
    def start(
        cls, config: Config, parts: NodeParts, bind_host: str, port: int
    ) -> ClusterNode | None:
        """Join the cluster if ``dora.cluster.etcd.endpoints`` is set (None otherwise), as the
        worker listening on ``bind_host``:``port``. An unreachable etcd does not stop the
        worker: it serves and keeps trying."""
        if not config.get(client_keys.ETCD_ENDPOINTS):
            return None
        node = cls(config, parts, advertised_host(config, bind_host), port)
        node.publisher.start()
        node.follower.start()
        node.registration.start()
        log.info("cluster %s: worker %s joining through etcd %s",
                 node.cluster, node.info.name, ", ".join(node.etcd.endpoints))  # fmt: skip
        return node

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """``app`` behind the revision middleware (read-your-writes, monotonic reads)."""
        self.middleware = RevisionMiddleware(app, self.follower, self.read_wait_s)
        return self.middleware

    def changed(self, events: list[Event], origins: Sequence[Origin | None] = ()) -> int | None:
        """Publish changes this worker made (or, with ``origins``, one per event, heard of
        from a change feed); the feed revision they were published under, which the request's
        answer then names. With etcd unavailable the events stay queued: None."""
        return self.publisher.publish(events, self.timeout_s, origins)

    def _synced(self, uri: str, status: UfsStatus | None) -> int | None:
        """A sync found ``uri`` changed outside the cache: tell the other workers; the feed
        revision (the lookup's caller names it)."""
        if status is None:
            return self.changed([Event(Op.DELETED, uri)])
        return self.changed([Event(Op.UPDATED, uri, status.version)])

    def close(self) -> None:
        """Leave the ring, publish what is queued, persist the feed position. Idempotent."""
        self.registration.close()
        self.publisher.close(self.timeout_s)
        self.follower.close()
        self.etcd.close()


def advertised_host(config: Config, bind_host: str) -> str:
    """The host a worker bound to ``bind_host`` registers under: ``dora.cluster.advertise.host``,
    else the bind host, else (a wildcard bind) the host's name."""
    host: str = config.get(cluster_keys.ADVERTISE_HOST) or bind_host
    return socket.getfqdn() if host in ("0.0.0.0", "::", "") else host


class _ClusterCollector(Collector):
    """The node's counters, read at scrape time."""

    def __init__(self, node: ClusterNode) -> None:
        self._node = node

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        yield from self._following()
        yield from self._applying()
        yield from self._publishing()

    def _following(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        """Whether the feed follower runs and is connected, and the membership is current."""
        node = self._node
        follower = node.follower
        yield GaugeMetricFamily(
            "dora_cluster_etcd_connected",
            "1 while the feed watch is connected to etcd",
            value=1 if follower.connected else 0,
        )
        yield GaugeMetricFamily(
            "dora_cluster_feed_follower_up",
            "1 while the feed follower runs (connected or retrying etcd); 0 once it failed "
            "(it restarts after a pause) or its thread is gone",
            value=1 if follower.state() in ("following", "disconnected") else 0,
        )
        yield CounterMetricFamily(
            "dora_cluster_feed_follower_failures",
            "Times the feed follower stopped on an error and was restarted",
            value=follower.failures,
        )
        yield CounterMetricFamily(
            "dora_cluster_feed_malformed",
            "Feed writes skipped because they did not decode (each also resets)",
            value=follower.malformed,
        )
        yield GaugeMetricFamily(
            "dora_cluster_member_registered",
            "1 while this worker's membership lease is current",
            value=1 if node.registration.registered else 0,
        )

    def _applying(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        """What the follower applied: its revision, the last batch's lag, events, resets."""
        follower = self._node.follower
        yield GaugeMetricFamily(
            "dora_cluster_feed_applied_revision",
            "Feed revision applied",
            value=follower.applied,
        )
        yield GaugeMetricFamily(
            "dora_cluster_feed_lag_seconds",
            "Publish-to-apply time of the last batch applied (clocks of two hosts); "
            "dora cluster ls shows each worker's lag in revisions",
            value=follower.delivery_ms / 1000,
        )
        yield CounterMetricFamily(
            "dora_cluster_feed_events_applied",
            "Events of other workers applied",
            value=follower.events_applied,
        )
        resets = CounterMetricFamily(
            "dora_cluster_feed_resets",
            "Times everything cached had to be re-checked, by reason",
            labels=["reason"],
        )
        for reason, count in follower.resets.items():
            resets.add_metric([reason], count)
        yield resets

    def _publishing(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        """What the publisher and the revision middleware say: events published, failed and
        pending, requests that waited for a revision."""
        node = self._node
        publisher = node.publisher
        yield CounterMetricFamily(
            "dora_cluster_events_published", "Events published", value=publisher.published_events
        )
        yield CounterMetricFamily(
            "dora_cluster_publish_failures",
            "Feed writes etcd did not take",
            value=publisher.failures,
        )
        yield GaugeMetricFamily(
            "dora_cluster_events_pending", "Events waiting for etcd", value=publisher.pending
        )
        waits = CounterMetricFamily(
            "dora_cluster_revision_waits",
            "Requests that named a revision not yet applied, by outcome",
            labels=["outcome"],
        )
        for outcome, count in (node.middleware.outcomes if node.middleware else {}).items():
            waits.add_metric([outcome], count)
        yield waits
