"""The SeaweedFS change feed: the filer's metadata subscription (gRPC ``SubscribeMetadata``,
what ``weed filer.meta.tail`` shows) followed on one thread.

The feed keeps its position: the time (the filer's ``ts_ns``) up to which it has applied the
filer's events, saved through its sink (the worker's metastore; in a cluster, etcd next to the
election, ``worker.feeds.elected``) about once a second and when it stops. A subscription after
a restart, a lost stream or a change of the elected consumer resumes from it: the filer replays
what happened since, and nothing cached is re-checked. It starts with a gap instead (everything
cached before is re-checked with the UFS) when there is no saved position, when the saved one
was taken from another filer store (its signature differs) or is older than
``dora.ufs.change.seaweedfs.resume.max.age`` (0: always a gap, the behaviour before positions).

What a resume cannot see: a filer keeps its event log in memory and writes it to disk about
once a minute, so a filer killed (not stopped) and restarted may have lost the events of its last
minute, and SeaweedFS (4.x) gives a subscriber no way to tell (the signature is kept in its
store across restarts). Events a subscriber received live are not at risk; the events of writes
made while no subscriber listened (a worker restarting, a consumer failing over), lost that way,
are, and the objects they changed stay served as cached until their sync interval.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import grpc

from worker.feeds.change import ChangeSink
from worker.feeds.filer_pb.seaweedfs_filer_pb2 import (
    GetFilerConfigurationRequest,
    GetFilerConfigurationResponse,
    SubscribeMetadataRequest,
    SubscribeMetadataResponse,
)
from worker.feeds.keys import SeaweedSpec
from worker.feeds.seaweedfs_events import changes

log = logging.getLogger(__name__)

RETRY_S = 1.0
CALL_TIMEOUT_S = 10.0
# A subscription begins this far back: the filer's clock may trail ours, and replaying a few
# seconds of events costs only re-checks.
CLOCK_SLACK_NS = 5_000_000_000
SAVE_EVERY_S = 1.0
IDLE_S = 1.0
"""A subscription with no event for this long has delivered what the filer had: on a clean
stop the position moves up to the present (less the clock slack), so a quiet source does not
resume from its last event, however old."""
# SeaweedFS's servers refuse pings more often than every 20 s and ping every 60 s themselves;
# pinging every 30 s finds a silently dead filer within a minute.
_CHANNEL_OPTIONS = [
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.max_receive_message_length", 64 << 20),
]
_SERVICE = "/filer_pb.SeaweedFiler/"


class SeaweedFeed:
    """Follows one filer's subscription and applies its events to ``sink``.

    Thread-safe: ``start``/``close`` may be called from any thread; ``_call`` is guarded by
    ``_lock`` (so ``close`` can cancel it), the rest is touched only by the feed's thread, and
    by ``close`` once that thread has ended (``_heard_at`` and ``connected`` it reads before,
    as plain values).
    """

    def __init__(
        self,
        spec: SeaweedSpec,
        sink: ChangeSink,
        clock_ns: Callable[[], int] = time.time_ns,
        resume_max_age_ms: int = 0,
    ) -> None:
        self.spec = spec
        self._sink = sink
        self._clock_ns = clock_ns
        self._resume_ns = resume_max_age_ms * 1_000_000
        self._position = _Position.load(sink, spec.name)
        self._saved_at = 0.0
        self._heard_at = 0.0  # monotonic: the last event, or the subscription's start
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._call: Any = None
        self._channel = grpc.insecure_channel(spec.address, options=_CHANNEL_OPTIONS)
        self._configuration = self._channel.unary_unary(
            _SERVICE + "GetFilerConfiguration",
            request_serializer=GetFilerConfigurationRequest.SerializeToString,
            response_deserializer=GetFilerConfigurationResponse.FromString,
        )
        self._subscribe = self._channel.unary_stream(
            _SERVICE + "SubscribeMetadata",
            request_serializer=SubscribeMetadataRequest.SerializeToString,
            response_deserializer=SubscribeMetadataResponse.FromString,
        )
        self._client_id = secrets.randbelow((1 << 31) - 1) + 1
        self.connected = False
        self.subscriptions = 0
        self._thread = threading.Thread(target=self._run, name="dora-feed-seaweedfs", daemon=True)

    def start(self) -> None:
        """Start following. Without a position to resume from, what was cached before (a
        restarted worker's metastore) is re-checked from now on: the events that changed it
        may have been missed."""
        if self._resumable(self._position) is not None:
            self._sink.gap(self.spec.name, "starting")
        self._thread.start()

    def _now_ms(self) -> int:
        return self._clock_ns() // 1_000_000

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._follow()
                why = "the filer ended it"
            except grpc.RpcError as exc:
                why = _reason(exc)
            if self._stop.is_set():
                break
            if self.connected or self.subscriptions == 0:
                log.warning("change feed %s: no subscription (%s); retrying",
                            self.spec.name, why)  # fmt: skip
            self.connected = False
            self._stop.wait(RETRY_S)

    def _follow(self) -> None:
        """Subscribe and apply events until the stream ends (raises grpc.RpcError) or the
        feed is closed."""
        configuration = self._configuration(GetFilerConfigurationRequest(), timeout=CALL_TIMEOUT_S)
        buckets = configuration.dir_buckets.rstrip("/") or "/buckets"
        resumed, why = self._resumed(configuration.signature)
        since_ns = resumed.ts_ns if resumed is not None else self._clock_ns() - CLOCK_SLACK_NS
        # A subscriber without an id is taken for a known one and its stream ended at once;
        # the epoch tells the filer a re-subscription replaces the previous stream.
        request = SubscribeMetadataRequest(
            client_name="doracache",
            path_prefix=self.spec.prefix,
            since_ns=since_ns,
            client_id=self._client_id,
            client_epoch=self.subscriptions + 1,
        )
        with self._lock:
            if self._stop.is_set():
                return
            self._call = self._subscribe(request)
        if resumed is not None:
            log.info("change feed %s: resuming from %s", self.spec.name, _when(since_ns))
            if resumed.gap_ms and self.subscriptions == 0:
                # The gap before the position held across a restart: in memory, it is gone.
                # (A lost stream resumed in the same process finds the fence still there.)
                self._sink.recheck_before(self.spec.name, resumed.gap_ms)
        else:
            self._sink.gap(self.spec.name, f"{why}: events before it may be missing")
            self._position = _Position(since_ns, configuration.signature, self._now_ms())
        self.subscriptions += 1
        self.connected = True
        self._heard_at = time.monotonic()
        self._save()  # from here on, a next consumer resumes rather than re-check everything
        log.info("change feed %s: following", self.spec.name)
        try:
            for response in self._call:
                self._sink.apply(self.spec.name, changes(response, buckets, self.spec.prefix))
                self._heard(response.ts_ns)
        finally:
            with self._lock:
                self._call = None

    def _resumed(self, signature: int) -> tuple[_Position | None, str]:
        """The position to resume from for the filer store of ``signature``, or None and why
        not."""
        position = self._position
        why = self._resumable(position)
        if why is not None or position is None:
            return None, why or ""
        if position.signature != signature:
            # Another filer store (a new filer, a wiped one): its times say nothing of this log.
            return None, f"the saved position is of another filer store ({position.signature})"
        return position, ""

    def _resumable(self, position: _Position | None) -> str | None:
        """Why a subscription cannot resume from ``position`` (None: it can)."""
        if position is None or self._resume_ns <= 0:
            return "first subscription" if self.subscriptions == 0 else "subscription lost"
        age_ns = self._clock_ns() - position.ts_ns
        if age_ns > self._resume_ns:
            return f"the saved position is {age_ns // 1_000_000_000} s old"
        return None

    def _heard(self, ts_ns: int) -> None:
        """The event of ``ts_ns`` was applied: the position moves to it (saved at most once
        every :data:`SAVE_EVERY_S`)."""
        self._heard_at = time.monotonic()
        position = self._position
        if position is None or ts_ns <= position.ts_ns:
            return
        self._position = replace(position, ts_ns=ts_ns)
        if self._heard_at - self._saved_at >= SAVE_EVERY_S:
            self._save()

    def _save(self) -> None:
        position = self._position
        if position is None:
            return
        try:
            self._sink.save_marker(self.spec.name, position.encode())
        except Exception:
            # Not saved: the next subscription resumes from further back, or is a gap.
            log.exception("change feed %s: cannot persist its position", self.spec.name)
            return
        self._saved_at = time.monotonic()

    def close(self) -> None:
        """Stop following and persist the position. Idempotent."""
        if self._stop.is_set():
            return
        idle = self.connected and time.monotonic() - self._heard_at >= IDLE_S
        self._stop.set()
        with self._lock:
            if self._call is not None:
                self._call.cancel()
        if self._thread.is_alive():
            self._thread.join()
        self._channel.close()
        position = self._position
        if idle and position is not None:
            # Connected and quiet: the filer had nothing more to send up to about now.
            now_ns = self._clock_ns() - CLOCK_SLACK_NS
            self._position = replace(position, ts_ns=max(position.ts_ns, now_ns))
        self._save()


@dataclass(frozen=True)
class _Position:
    """Up to where a filer's events were applied: its ``ts_ns``, the filer store's
    ``signature`` (a position means nothing to another store's log), and when the last gap
    before it was (``gap_ms``, epoch ms; 0: none): what was cached before that gap and not
    re-checked since must still be, after a restart, which forgets the gap."""

    ts_ns: int
    signature: int
    gap_ms: int = 0

    def encode(self) -> bytes:
        fields = {"ts_ns": self.ts_ns, "signature": self.signature, "gap_ms": self.gap_ms}
        return json.dumps(fields).encode()

    @classmethod
    def load(cls, sink: ChangeSink, source: str) -> _Position | None:
        """The position ``sink`` holds for ``source``; None if none or unreadable (logged)."""
        raw = sink.load_marker(source)
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            return cls(int(data["ts_ns"]), int(data["signature"]), int(data.get("gap_ms", 0)))
        except (KeyError, TypeError, ValueError):
            log.warning("change feed %s: unreadable saved position %r", source, raw)
            return None


def _when(ts_ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts_ns / 1e9)) + " UTC"


def _reason(exc: grpc.RpcError) -> str:
    code = getattr(exc, "code", None)
    details = getattr(exc, "details", None)
    if callable(code) and callable(details):
        return f"{code().name}: {details()}"
    return str(exc)
