"""The change-feed event model and how events reach the cache.

A source (the SeaweedFS subscription, the webhook) turns what its store reports into
:class:`Change` values and hands them to a :class:`CacheSink`, which applies them the way the
etcd feed's events are applied (:class:`worker.cluster.node.MetaSink`): drop the path's status,
its parent's listing and the dropped version's pages. Applying is idempotent and
order-insensitive — a change naming the version the cache already holds costs nothing (the
worker's own writes echo back that way), a repeated or late change only costs one re-check with
the UFS — so a source may deliver at least once and in any order. What a source cannot deliver
it reports as a gap: everything cached before the gap is re-checked before it is served again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from pagestore.api import PageStore
from ufs.errors import UfsError
from ufs.roots import MountRoots
from worker.cluster.events import Event, Op, Origin
from worker.cluster.node import MetaSink
from worker.feeds.lag import FeedLag
from worker.meta.counters import MetaCounters
from worker.meta.manager import MetadataManager

log = logging.getLogger(__name__)

_MARKER_PREFIX = "feed:"


@dataclass(frozen=True)
class Change:
    """``uri`` (a UFS URI) changed: written with ``version`` ("" when the source does not
    say), or ``deleted``; with ``prefix``, everything under ``uri`` changed. ``at_ms`` is the
    event's own time (epoch ms by the store's clock; 0 when the source does not say)."""

    uri: str
    version: str = ""
    deleted: bool = False
    prefix: bool = False
    at_ms: int = 0


class ChangeSink(Protocol):
    """Where a feed hands its changes and reports its gaps (:class:`CacheSink`, or in a cluster
    ``worker.feeds.elected.RepublishingSink``)."""

    def apply(self, source: str, changes: Iterable[Change]) -> list[Event]: ...

    def gap(self, source: str, why: str) -> None: ...

    def recheck_before(self, source: str, epoch_ms: int) -> None: ...

    def load_marker(self, source: str) -> bytes | None: ...

    def save_marker(self, source: str, value: bytes) -> None: ...


class Feed(Protocol):
    """A source followed on a thread of its own."""

    @property
    def connected(self) -> bool:
        """Following the source (or, elected, taking part in the election)."""

    def start(self) -> None: ...

    def close(self) -> None:
        """Stop following (and persist a position, where the feed keeps one). Idempotent."""


class CacheSink:
    """Applies changes to one worker's cache, reports gaps and measures each source's lag
    (``lag``: also of the events other workers republish, see ``worker.cluster.node``).

    Thread-safe: the metadata manager and page store it calls are, and its counters are.
    Its metrics go to ``registry``.
    """

    def __init__(
        self,
        roots: MountRoots,
        meta: MetadataManager,
        pages: PageStore,
        registry: CollectorRegistry,
    ) -> None:
        self._roots = roots
        self._meta = meta
        self.lag = FeedLag(registry)
        self._apply = MetaSink(meta.writes, pages, self.lag.arrived)
        self.counters = MetaCounters(("received", "applied", "unchanged", "outside_roots", "gaps"))
        registry.register(_FeedCollector(self.counters))

    def apply(self, source: str, changes: Iterable[Change]) -> list[Event]:
        """Drop what each change ``source`` reported names unless the cache already holds the
        version it names; the events applied (as the etcd feed carries them). Changes outside
        the mount roots are ignored. Never raises for a bad change."""
        applied: list[Event] = []
        heard: list[int] = []
        for change in changes:
            self.counters.add("received")
            event = self.event_of(change)
            if event is None:
                self.counters.add("outside_roots")
                continue
            if change.at_ms:
                heard.append(change.at_ms)
            if self._holds(event):
                self.counters.add("unchanged")
                continue
            self._apply.apply(event)
            applied.append(event)
            self.counters.add("applied")
        self.lag.applied(source, heard)
        return applied

    def event_of(self, change: Change) -> Event | None:
        """``change`` as the etcd feed carries it (canonical URI), None outside the roots."""
        try:
            uri = self._roots.check(change.uri)
        except UfsError:
            return None
        op = Op.DELETED if change.deleted else Op.CREATED
        return Event(op, uri, change.version, change.prefix)

    def published(
        self, source: str, changes: Iterable[Change]
    ) -> tuple[list[Event], list[Origin | None]]:
        """What the other workers of a cluster are told of ``changes`` heard from ``source``:
        every change within the roots (they may hold other versions than this worker does),
        and with each its origin (source and event time, for every worker's lag; None for a
        change without a time of its own)."""
        events: list[Event] = []
        origins: list[Origin | None] = []
        for change in changes:
            event = self.event_of(change)
            if event is not None:
                events.append(event)
                origins.append(Origin(source, change.at_ms) if change.at_ms else None)
        return events, origins

    def _holds(self, event: Event) -> bool:
        if event.op is Op.DELETED or event.prefix or not event.version:
            return False
        return self._meta.reads.status_age(event.path, event.version) is not None

    def gap(self, source: str, why: str) -> None:
        """``source`` cannot tell what changed up to now: re-check everything cached so far."""
        log.warning("change feed %s: %s; everything cached so far will be re-checked with the UFS",
                    source, why)  # fmt: skip
        self.counters.add("gaps")
        self._meta.writes.require_sync_before(int(time.time() * 1000))

    def recheck_before(self, source: str, epoch_ms: int) -> None:
        """A gap ``source`` reported at ``epoch_ms``, before a restart, still holds: what was
        cached before it and not re-checked since is re-checked (a resumed feed's position
        comes after that gap; what was re-checked since is not touched)."""
        log.info("change feed %s: re-checking what was cached before its gap at %d and not "
                 "since", source, epoch_ms)  # fmt: skip
        self._meta.writes.require_sync_before(epoch_ms)

    def load_marker(self, source: str) -> bytes | None:
        """What ``source`` saved with :meth:`save_marker` (in the worker's metastore), if any."""
        return self._meta.load_marker(_MARKER_PREFIX + source)

    def save_marker(self, source: str, value: bytes) -> None:
        """Persist a few bytes for ``source``, once the changes applied so far are durable."""
        self._meta.save_marker(_MARKER_PREFIX + source, value)


class _FeedCollector(Collector):
    """The sink's counters, read at scrape time."""

    def __init__(self, counters: MetaCounters) -> None:
        self._counters = counters

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "dora_ufs_change_events",
            "Change-feed events by outcome (received, applied, unchanged: the cache held that "
            "version, outside_roots) and gaps (everything cached re-checked)",
            labels=["outcome"],
        )
        for outcome, count in self._counters.snapshot().items():
            family.add_metric([outcome], count)
        yield family
