"""One consumer per source in a cluster: the worker that holds a lease-backed election key
follows the source and republishes what it hears into the etcd invalidation feed, so every
worker applies the store's changes in the feed's one order, with its catch-up and reset rules
(docs/consistency.md).

The key is ``/dora/<cluster>/feeds/<source>``, created only if absent and attached to a lease
of ``dora.cluster.lease.ttl``. The holder keeps the lease alive; when it stops (a crash, a lost
etcd) the key goes with the lease and another worker claims it within a lease's life. A new
holder's source starts with a gap, which it publishes as a reset: every worker re-checks what it
cached before, so nothing heard by no one is served stale.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from worker.cluster.etcd import Etcd, EtcdError, EtcdUnavailable
from worker.cluster.events import RESET, Event, Origin
from worker.feeds.change import CacheSink, Change, ChangeSink, Feed

if TYPE_CHECKING:
    from worker.cluster.node import ClusterNode

log = logging.getLogger(__name__)

RETRY_S = 1.0


class RepublishingSink:
    """A :class:`CacheSink` that also publishes every change within the roots (the other
    workers may hold other versions than this one) and every gap (as a reset) to the feed.
    Thread-safe as its parts are."""

    def __init__(
        self,
        sink: CacheSink,
        publish: Callable[[list[Event], list[Origin | None]], int | None],
        positions: Positions,
    ) -> None:
        self._sink = sink
        self._publish = publish
        self._positions = positions
        self._all_published = True

    def apply(self, source: str, changes: Iterable[Change]) -> list[Event]:
        """Apply here, then publish (with the events' own times, for every worker's lag)."""
        changes = list(changes)
        applied = self._sink.apply(source, changes)
        events, origins = self._sink.published(source, changes)
        if events:
            self._published(self._publish(events, origins))
        return applied

    def gap(self, source: str, why: str) -> None:
        self._sink.gap(source, why)
        self._published(self._publish([RESET], []))

    def recheck_before(self, source: str, epoch_ms: int) -> None:
        # Here only: the gap was published as a reset when it happened, which every worker
        # applies through the etcd feed, across its own restarts.
        self._sink.recheck_before(source, epoch_ms)

    def _published(self, revision: int | None) -> None:
        # The publisher writes in order: a batch etcd took means every one before it was too
        # (or, past its queue's bound, a reset was); one it did not take yet is only queued.
        self._all_published = revision is not None

    def load_marker(self, source: str) -> bytes | None:
        """The position the source's last consumer, on any worker, saved in etcd."""
        return self._positions.load(source)

    def save_marker(self, source: str, value: bytes) -> None:
        """Save the position in etcd for the next consumer, once every change heard before
        it is in the feed (one only queued would be lost with this worker)."""
        if self._all_published:
            self._positions.save(source, value)


class Positions:
    """A change feed's saved positions, in etcd next to its election:
    ``/dora/<cluster>/feed-positions/<source>``, so a consumer elected after another resumes
    where it stopped. Thread-safe: the etcd client is."""

    def __init__(self, etcd: Etcd, cluster: str) -> None:
        self._etcd = etcd
        self._prefix = f"/dora/{cluster}/feed-positions/"

    def load(self, source: str) -> bytes | None:
        """The saved position; None without one, or when etcd cannot be read (logged): the
        consumer then starts with a gap, which is always safe."""
        try:
            found = self._etcd.get(self._prefix + source)
        except (EtcdUnavailable, EtcdError) as exc:
            log.warning("change feed %s: cannot read its saved position (%s)", source, exc)
            return None
        return None if found is None else found.value

    def save(self, source: str, value: bytes) -> None:
        self._etcd.put(self._prefix + source, value)


class ElectedFeed:
    """Runs a feed (``make(sink)``) only while this worker holds ``source``'s election key.

    Thread-safe: ``start``/``close`` from any thread; ``leading`` is read without a lock.
    """

    def __init__(
        self,
        source: str,
        make: Callable[[ChangeSink], Feed],
        node: ClusterNode,
        sink: CacheSink,
        ttl_s: int,
    ) -> None:
        self.source = source
        self._make = make
        self._node = node
        self._sink = RepublishingSink(sink, node.changed, Positions(node.etcd, node.cluster))
        self._ttl_s = ttl_s
        self._key = f"/dora/{node.cluster}/feeds/{source}"
        self._stop = threading.Event()
        self.leading = False
        self._thread = threading.Thread(target=self._run, name="dora-feed-election", daemon=True)

    @property
    def connected(self) -> bool:
        """Taking part in the election (as holder or standby)."""
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._campaign()
            except (EtcdUnavailable, EtcdError) as exc:
                log.warning("change feed %s: election unavailable (%s); retrying",
                            self.source, exc)  # fmt: skip
                self._stop.wait(RETRY_S)

    def _campaign(self) -> None:
        etcd = self._node.etcd
        lease = etcd.grant(self._ttl_s)
        if not etcd.create(self._key, self._node.info.id.encode(), lease):
            etcd.revoke(lease)
            self._stop.wait(self._ttl_s / 3)
            return
        log.info("change feed %s: this worker consumes it for the cluster", self.source)
        feed = self._make(self._sink)
        feed.start()
        self.leading = True
        try:
            while not self._stop.wait(self._ttl_s / 3):
                if etcd.keepalive(lease) == 0:
                    log.warning("change feed %s: election lease lost", self.source)
                    return
        finally:
            self.leading = False
            feed.close()
            if self._stop.is_set():
                etcd.revoke(lease)  # a clean stop hands the source over at once

    def close(self) -> None:
        """Stop consuming (hand the election over) and taking part. Idempotent."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
