"""Publishing events to the feed: one writer thread, group commit.

Callers queue events and wait (bounded) for the write that carries them. The writer takes
whatever is queued when the previous write returns, so a burst of mutations costs a few etcd
writes, not one per file, and :func:`worker.cluster.events.collapse` turns a crowded directory
into one prefix event. While etcd is unavailable events stay queued and the writer retries; past
``pending_limit`` they are replaced by one reset event, so nothing is lost silently.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from worker.cluster.etcd import Etcd, EtcdError, EtcdUnavailable
from worker.cluster.events import RESET, Batch, Event, Origin, Origins, collapse

log = logging.getLogger(__name__)

# etcd refuses requests over 1.5 MiB by default; stay well under it.
MAX_BATCH_BYTES = 512 << 10
MAX_BATCH_EVENTS = 4096
RETRY_S = 1.0

# A queued event: its ticket, and where and when a change feed heard of it, if one did.
_Queued = tuple[int, Event, Origin | None]


@dataclass(frozen=True)
class PublisherOptions:
    worker_id: str
    feed_key: str
    prefix_threshold: int
    pending_limit: int


class Publisher:
    """Publishes events in order through one writer thread.

    Thread-safe. One lock (``_cond``) guards the queue and the progress counters; it is never
    held during an etcd call. Every event gets a ticket; a write that carries tickets up to T
    makes every waiter with a ticket <= T return the write's revision.
    """

    def __init__(
        self, etcd: Etcd, options: PublisherOptions, clock: Callable[[], float] = time.time
    ) -> None:
        self._etcd = etcd
        self._options = options
        self._clock = clock
        self._cond = threading.Condition()
        self._pending: list[_Queued] = []
        self._next_ticket = 1
        self._committed = 0  # tickets up to this one are in etcd
        self._failed = 0  # tickets up to this one failed at least once
        self._revision = 0
        self._stop = threading.Event()
        self._available = True
        self.published_events = 0
        self.published_batches = 0
        self.failures = 0
        self.resets = 0
        self._thread = threading.Thread(target=self._run, name="dora-feed-publisher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._pending)

    def publish(
        self, events: Iterable[Event], wait_s: float, origins: Sequence[Origin | None] = ()
    ) -> int | None:
        """Queue ``events`` (heard of from a change feed at ``origins``, one per event, where
        it did) and wait up to ``wait_s`` for the write that carries them. Returns a revision
        at or after that write's, or None if etcd did not take them in time, or at once while
        etcd is known to be down (they stay queued and are published once etcd is back)."""
        with self._cond:
            ticket = self._enqueue(events, origins)
            if ticket == 0:
                return self._revision or None
            self._cond.notify_all()
            if not self._available:
                # etcd was down at the last write: do not hold every mutation for the deadline.
                return None
            deadline = time.monotonic() + wait_s
            while self._committed < ticket and self._failed < ticket:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stop.is_set():
                    return None
                self._cond.wait(remaining)
            return self._revision if self._committed >= ticket else None

    def _enqueue(self, events: Iterable[Event], origins: Sequence[Origin | None]) -> int:
        """Add events to the queue; the last ticket given (0 if none). Holds ``_cond``."""
        ticket = 0
        for n, event in enumerate(events):
            ticket = self._next_ticket
            self._next_ticket += 1
            self._pending.append((ticket, event, origins[n] if n < len(origins) else None))
        if len(self._pending) > self._options.pending_limit:
            self.resets += 1
            log.error(
                "etcd feed: %d events queued (limit %d) while etcd is unavailable; replacing them "
                "with one reset event: every worker will re-check what it caches",
                len(self._pending),
                self._options.pending_limit,
            )
            self._pending = [(self._pending[-1][0], RESET, None)]
        return ticket

    def _take(self) -> tuple[list[_Queued], int]:
        """The next batch off the queue and its last ticket. Holds ``_cond``."""
        size, count = 0, 0
        for _, event, origin in self._pending:
            size += len(event.path) + len(event.version) + (16 if origin is None else 32)
            if count and (size > MAX_BATCH_BYTES or count >= MAX_BATCH_EVENTS):
                break
            count += 1
        taken, self._pending = self._pending[:count], self._pending[count:]
        return taken, taken[-1][0]

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stop.is_set():
                    self._cond.wait()
                if not self._pending:
                    return
                taken, through = self._take()
            if not self._write(taken, through) and self._stop.wait(RETRY_S):
                return

    def _write(self, taken: list[_Queued], through: int) -> bool:
        events = collapse([event for _, event, _ in taken], self._options.prefix_threshold)
        origins: dict[str, list[int]] = {}
        for _, _, origin in taken:
            if origin is not None:
                origins.setdefault(origin.source, []).append(origin.at_ms)
        stamps: Origins = {source: tuple(times) for source, times in origins.items()}
        batch = Batch(self._options.worker_id, int(self._clock() * 1000), tuple(events), stamps)
        try:
            revision = self._etcd.put(self._options.feed_key, batch.encode())
        except (EtcdUnavailable, EtcdError) as exc:
            with self._cond:
                self._pending[:0] = taken
                self._failed = max(self._failed, through)
                self.failures += 1
                self._cond.notify_all()
            if self._available:
                log.warning("etcd feed: cannot publish (%s); events stay queued", exc)
            self._available = False
            return False
        with self._cond:
            self._committed = through
            self._revision = max(self._revision, revision)
            self.published_events += len(events)
            self.published_batches += 1
            self._cond.notify_all()
        if not self._available:
            log.warning("etcd feed: publishing again (revision %d)", revision)
        self._available = True
        return True

    def close(self, flush_s: float) -> None:
        """Stop the writer after one last attempt (up to ``flush_s``) to publish what is
        queued. Idempotent."""
        deadline = time.monotonic() + flush_s
        with self._cond:
            # Until the queue is written, or every queued event has failed once.
            while self._pending and self._failed < self._next_ticket - 1:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join()
