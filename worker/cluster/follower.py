"""Following the feed: apply every other worker's events in revision order, persist how far.

The follower watches the feed key from the revision after the last one it applied. That
revision is persisted (through :class:`MarkerStore`, in the worker's RocksDB, after the metadata
changes it covers are committed), so after a restart or a lost connection it catches up from
there. When it cannot know what it missed — etcd compacted that history, no revision was ever
persisted, or a worker published a reset — it resets its sink: everything cached before that
moment is re-checked with the UFS before it is served again (pages are kept and reused if the
re-check finds the same version), and it says so in the log and the ``resets`` counter.

etcd is a trust boundary: a feed value that does not decode (:class:`~worker.cluster.entries.
BadEntry`) is skipped, logged in one line and counted (``malformed``), and, since it may have
named something this worker caches, answered with a reset as well. Whatever else stops the
loop is caught by its supervisor: logged, counted (``failures``), shown as ``failed`` (the
worker's readiness) and the loop started again after a growing pause, from the saved position.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from worker.cluster import entries
from worker.cluster.entries import BadEntry
from worker.cluster.etcd import Compacted, Etcd, EtcdError, EtcdUnavailable, WatchReply, WatchStream
from worker.cluster.events import Batch, Event, Op, Origins

log = logging.getLogger(__name__)

RETRY_S = 1.0
SAVE_EVERY_S = 1.0
# The supervisor's pause before restarting a failed loop doubles up to this.
MAX_BACKOFF_S = 30.0


class FeedSink(Protocol):
    """Where events take effect (the worker's metadata and pages)."""

    def apply(self, event: Event) -> None:
        """Make the cache forget what ``event`` changed. Must not raise for a bad event."""

    def reset(self, before_ms: int) -> None:
        """Treat everything cached before ``before_ms`` (epoch ms) as unproven: re-check it
        with the UFS before serving it."""

    def arrived(self, origins: Origins) -> None:
        """A batch carrying change-feed events of these times (by source) was applied."""


class MarkerStore(Protocol):
    """Durable storage of the follower's position (a few bytes)."""

    def load(self) -> bytes | None: ...

    def save(self, value: bytes) -> None:
        """Persist ``value`` after every cache change made so far is durable."""


class Follower:
    """Applies the feed on one thread and tells waiters how far it got.

    Thread-safe: ``applied`` and ``connected`` are read without a lock (ints and bools are
    swapped atomically); the condition ``_cond`` guards the waiters and is never held while
    applying or during etcd calls.
    """

    def __init__(
        self,
        etcd: Etcd,
        feed_key: str,
        worker_id: str,
        sink: FeedSink,
        markers: MarkerStore,
        idle_timeout_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._etcd = etcd
        self._key = feed_key
        self._worker_id = worker_id
        self._sink = sink
        self._markers = markers
        self._idle_timeout_s = idle_timeout_s
        self._clock = clock
        self._cond = threading.Condition()
        self._async_waiters: list[tuple[int, asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._stop = threading.Event()
        self._stream_lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._saved = 0
        self._saved_at = 0.0
        self._fence_ms = 0
        self.applied, self.feed_revision = self._load()
        # ``feed_revision``: the revision of the newest feed write passed (applied, own or
        # skipped), what an answer may promise. ``applied`` also moves with progress
        # notifications, which membership writes push past any feed event, so another worker
        # would wait for it.
        self.connected = False
        self.failed = False
        self.failures = 0
        self.malformed = 0
        self.events_applied = 0
        self.batches_applied = 0
        self.resets: dict[str, int] = {
            "compacted": 0,
            "unknown_start": 0,
            "reset_event": 0,
            "malformed": 0,
        }
        self.delivery_ms = 0  # publish-to-apply time of the last batch applied
        self._thread = threading.Thread(target=self._run, name="dora-feed-follower", daemon=True)

    def _load(self) -> tuple[int, int]:
        """The saved applied and feed revisions (0, 0 without a readable position)."""
        raw = self._markers.load()
        if raw is None:
            return 0, 0
        try:
            saved = entries.mapping(entries.load_json(raw, "saved position"), "saved position")
            revision = entries.integer(saved.get("revision"), "saved revision")
            fence_ms = entries.integer(saved.get("fence_ms", 0), "saved fence")
            # Positions saved before the feed revision was kept promise what they did then.
            feed = entries.integer(saved.get("feed", revision), "saved feed revision")
        except BadEntry as exc:
            log.warning("etcd feed: unreadable saved position (%s); starting afresh", exc)
            return 0, 0
        if fence_ms:
            # A reset before the restart still holds for what was cached before it.
            self._fence_ms = fence_ms
            self._sink.reset(fence_ms)
        self._saved = revision
        return revision, min(feed, revision)

    def start(self) -> None:
        self._thread.start()

    def state(self) -> str:
        """``following``, ``disconnected`` (etcd unreachable: the worker serves on, sync
        intervals apply), ``failed`` (the loop stopped; it restarts after a pause) or
        ``stopped`` (its thread is gone: closed, or killed by what no handler takes)."""
        if not self._thread.is_alive():
            return "stopped"
        if self.failed:
            return "failed"
        return "following" if self.connected else "disconnected"

    # -- the loop ------------------------------------------------------------------------------

    def _run(self) -> None:
        """The supervisor: runs the loop until asked to stop, restarting it after a failure."""
        backoff = RETRY_S
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self._loop()
            except Exception as exc:  # noqa: BLE001 - whatever it was, the feed must go on
                if time.monotonic() - started > MAX_BACKOFF_S:
                    backoff = RETRY_S  # it ran a good while: a new failure, not the same one
                self.failures += 1
                self.failed, self.connected = True, False
                self._wake_all()
                log.error(
                    "etcd feed: the follower stopped (%s: %s); restarting it in %.0fs from "
                    "revision %d",
                    type(exc).__name__,
                    exc,
                    backoff,
                    self.applied,
                )
                self._stop.wait(backoff)
                backoff = min(2 * backoff, MAX_BACKOFF_S)
            else:
                break
        self._save(force=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self.applied == 0:
                    self._start_afresh("unknown_start")
                self._follow()
            except Compacted as exc:
                log.warning(
                    "etcd feed: history before revision %d is compacted but this worker had "
                    "applied only up to %d; everything it caches will be re-checked with the UFS",
                    exc.revision,
                    self.applied,
                )
                self._reset("compacted")
                self._advance(exc.revision - 1)
                self._learn_feed_revision()
            except EtcdUnavailable as exc:
                if self.connected:
                    log.warning(
                        "etcd feed: etcd unavailable (%s); serving on, sync intervals apply, "
                        "catching up from revision %d once etcd is back",
                        exc,
                        self.applied,
                    )
                self.connected = False
                self._wake_all()
                self._stop.wait(RETRY_S)

    def _start_afresh(self, reason: str) -> None:
        # The revision first, the reset after: an event at or below it was published before
        # the reset, so what it changed is re-checked; anything later arrives on the watch.
        revision = self._etcd.revision(self._key)
        log.warning(
            "etcd feed: no saved position; starting at revision %d and re-checking everything "
            "cached so far",
            revision,
        )
        self._reset(reason)
        self._advance(revision)
        self._learn_feed_revision()

    def _learn_feed_revision(self) -> None:
        """After a jump (a fresh start, a compaction): the newest feed write at or before the
        applied revision, the most an answer can promise. A later write arrives on the watch."""
        try:
            found = self._etcd.get(self._key)
        except (EtcdUnavailable, EtcdError) as exc:
            # Answers promise less until the next feed write: never more than is applied.
            log.debug("etcd feed: cannot read the feed's newest revision (%s)", exc)
            return
        if found is not None and found.mod_revision <= self.applied:
            self.feed_revision = max(self.feed_revision, found.mod_revision)

    def _follow(self) -> None:
        """Watch from the next revision; returns when asked to stop, raises on failure. A
        stream that only went quiet or broke is re-opened at once; failing to open one is the
        outage."""
        while not self._stop.is_set():
            stream = self._etcd.watch(
                self._key,
                prefix=False,
                start_revision=self.applied + 1,
                idle_timeout_s=self._idle_timeout_s,
            )
            with self._stream_lock:
                self._stream = stream
                # close() ran while the watch was being opened: it saw no stream to end.
                if self._stop.is_set():
                    stream.close()
            if not self.connected:
                log.info("etcd feed: following from revision %d", self.applied + 1)
            self.connected, self.failed = True, False
            try:
                for reply in stream:
                    self._consume(reply)
            except EtcdUnavailable as exc:
                log.debug("etcd feed: watch stream ended (%s); re-opening", exc)
            finally:
                stream.close()
                with self._stream_lock:
                    self._stream = None

    def _consume(self, reply: WatchReply) -> None:
        if not reply.events:
            # A progress notification: every event up to its revision has been delivered.
            self._advance(reply.revision)
            return
        for event in reply.events:
            if event.deleted:
                continue
            try:
                batch = Batch.decode(event.kv.value)
            except BadEntry as exc:
                self._skip(event.kv.mod_revision, exc)
            else:
                self._apply(batch)
            self.feed_revision = max(self.feed_revision, event.kv.mod_revision)
            self._advance(event.kv.mod_revision)

    def _skip(self, revision: int, exc: BadEntry) -> None:
        """A feed write that is no batch: it may have named something cached here, so what was
        cached before it is re-checked, as past a compaction."""
        self.malformed += 1
        log.error(
            "etcd feed: skipping the malformed write at revision %d (%s); re-checking "
            "everything cached before it",
            revision,
            exc,
        )
        self._reset("malformed")

    def _apply(self, batch: Batch) -> None:
        if batch.worker == self._worker_id:
            return  # this worker applied its own changes before publishing them
        for event in batch.events:
            if event.op is Op.RESET:
                log.warning("etcd feed: worker %s lost events; re-checking everything cached",
                            batch.worker)  # fmt: skip
                self._reset("reset_event")
            else:
                self._sink.apply(event)
        if batch.origins:
            self._sink.arrived(batch.origins)
        self.events_applied += len(batch.events)
        self.batches_applied += 1
        self.delivery_ms = max(0, int(self._clock() * 1000) - batch.published_ms)

    def _reset(self, reason: str) -> None:
        self.resets[reason] += 1
        self._fence_ms = int(self._clock() * 1000)
        self._sink.reset(self._fence_ms)
        # The reset must be durable before any revision past it is.
        self._saved = -1

    def _advance(self, revision: int) -> None:
        if revision <= self.applied:
            return
        self.applied = revision
        self._save(force=self._saved == -1)
        self._wake_all()

    def _save(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.applied == self._saved or (not force and now - self._saved_at < SAVE_EVERY_S):
            return
        marker = {
            "revision": self.applied,
            "fence_ms": self._fence_ms,
            "feed": self.feed_revision,
        }
        try:
            self._markers.save(json.dumps(marker).encode())
        except Exception:
            # A position not saved costs re-applying a few events after a restart; stopping the
            # feed over it would cost far more.
            log.exception("etcd feed: cannot persist the applied revision %d", self.applied)
            return
        self._saved, self._saved_at = self.applied, now

    # -- waiting for a revision ----------------------------------------------------------------

    def wait_applied(self, revision: int, timeout_s: float) -> bool:
        """Block until the feed is applied up to ``revision`` (True) or ``timeout_s`` passed or
        etcd is unavailable (False)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self.applied < revision:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.connected:
                    return False
                self._cond.wait(remaining)
        return True

    async def wait_applied_async(self, revision: int, timeout_s: float) -> bool:
        """:meth:`wait_applied` for the event loop, without holding a thread."""
        if self.applied >= revision:
            return True
        if not self.connected:
            return False
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        waiter = (revision, loop, future)
        with self._cond:
            self._async_waiters.append(waiter)
        # The follower may have advanced between the check above and registering.
        self._wake_all()
        try:
            await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            pass
        finally:
            with self._cond:
                if waiter in self._async_waiters:
                    self._async_waiters.remove(waiter)
        return self.applied >= revision

    def _wake_all(self) -> None:
        with self._cond:
            self._cond.notify_all()
            ready = [w for w in self._async_waiters if w[0] <= self.applied or not self.connected]
            for waiter in ready:
                self._async_waiters.remove(waiter)
        for _, loop, future in ready:
            loop.call_soon_threadsafe(_resolve, future)

    def close(self) -> None:
        """Stop following and persist the position. Idempotent."""
        self._stop.set()
        with self._stream_lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread.is_alive():
            self._thread.join()
        else:
            self._save(force=True)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
