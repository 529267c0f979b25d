"""The SeaweedFS change feed: the filer's metadata subscription (gRPC ``SubscribeMetadata``,
what ``weed filer.meta.tail`` shows) followed on one thread.

A start and every subscription are gaps: everything cached before is re-checked with the UFS, then
the filer's events keep the cache fresh. A filer keeps its event log in memory and writes it to
disk about once a minute, so a filer killed and restarted may have lost the last minute of
events, and SeaweedFS (4.x) gives a subscriber no way to tell that from a dropped connection to
a filer that lost nothing: its signature is kept in its store across restarts, and the flush
watermark arrived only in later versions. Resuming from a saved position would then be silently
stale; a re-check per cached entry after a reconnection or a worker restart is the price.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
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
    ``_lock`` (so ``close`` can cancel it), the rest is touched only by the feed's thread.
    """

    def __init__(
        self, spec: SeaweedSpec, sink: ChangeSink, clock_ns: Callable[[], int] = time.time_ns
    ) -> None:
        self.spec = spec
        self._sink = sink
        self._clock_ns = clock_ns
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
        """Start following. What was cached before (a restarted worker's metastore) is
        re-checked from now on: the events that changed it may have been missed."""
        self._sink.gap(self.spec.name, "starting")
        self._thread.start()

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
        since_ns = self._clock_ns() - CLOCK_SLACK_NS
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
        why = "first subscription" if self.subscriptions == 0 else "subscription lost"
        self._sink.gap(self.spec.name, f"{why}: events before it may be missing")
        self.subscriptions += 1
        self.connected = True
        log.info("change feed %s: following", self.spec.name)
        try:
            for response in self._call:
                self._sink.apply(self.spec.name, changes(response, buckets, self.spec.prefix))
        finally:
            with self._lock:
                self._call = None

    def close(self) -> None:
        """Stop following. Idempotent."""
        self._stop.set()
        with self._lock:
            if self._call is not None:
                self._call.cancel()
        if self._thread.is_alive():
            self._thread.join()
        self._channel.close()


def _reason(exc: grpc.RpcError) -> str:
    code = getattr(exc, "code", None)
    details = getattr(exc, "details", None)
    if callable(code) and callable(details):
        return f"{code().name}: {details()}"
    return str(exc)
