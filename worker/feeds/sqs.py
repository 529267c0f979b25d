"""The SQS change feed: S3 event notifications read from an SQS queue (S3 → SQS, or S3 → SNS →
SQS, the SNS envelope unwrapped), with the AWS client s3fs already brings (botocore).

SQS delivers at least once, in no order across keys, and keeps a message for the queue's
retention period. Applying is idempotent and order-insensitive (``worker.feeds.change``), so
duplicates and reordering cost at most a re-check; a message is deleted once applied (one that
is not an event is reported and deleted, or it would come back forever). The time of the last
successful read is persisted in the worker's metastore: a worker that starts without it, or
finds it older than the queue's retention (messages it never read may be gone), reports a gap.

A queue hands each message to one reader: in a cluster one elected worker reads it and
republishes (``worker.feeds.elected``); workers without etcd each need a queue of their own
(S3 → SNS → one SQS queue per worker is the fan-out).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import botocore.session
from botocore.config import Config as BotoConfig
from botocore.exceptions import BotoCoreError, ClientError

from ufs.kinds.s3 import S3Options
from ufs.options import UfsOptions
from worker.feeds.change import Change, ChangeSink
from worker.feeds.keys import SqsSpec
from worker.feeds.webhook import changes_of

log = logging.getLogger(__name__)

POLL_WAIT_S = 5
RETRY_S = 1.0
SAVE_EVERY_S = 1.0
_BATCH = 10


def sqs_client(spec: SqsSpec, options: UfsOptions) -> Any:
    """A botocore SQS client for ``spec``: at the queue URL's host, or at the S3 endpoint and
    region for a queue given by name; the S3 credentials; deadlines on every call."""
    s3 = options.of(S3Options)
    endpoint = s3.endpoint
    if spec.url is not None:
        host = urlsplit(spec.url)
        endpoint = (
            None if host.netloc.endswith("amazonaws.com") else f"{host.scheme}://{host.netloc}"
        )
    config = BotoConfig(
        connect_timeout=options.connect_timeout_ms / 1000,
        read_timeout=POLL_WAIT_S + options.read_timeout_ms / 1000,
        retries={"max_attempts": 2, "mode": "standard"},
    )
    return botocore.session.get_session().create_client(
        "sqs",
        region_name=s3.region or "us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id=s3.access_key_id,
        aws_secret_access_key=s3.secret_access_key,
        config=config,
    )


class SqsFeed:
    """Reads one queue on a thread and applies its events to ``sink``.

    Thread-safe: ``start``/``close`` from any thread; the rest is the feed thread's.
    """

    def __init__(
        self,
        spec: SqsSpec,
        sink: ChangeSink,
        client: Any,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.spec = spec
        self._sink = sink
        self._client = client
        self._clock = clock
        self._stop = threading.Event()
        self._url = spec.url
        self._retention_ms = 0
        self._last_read_ms = self._load()
        self._saved_at = 0.0
        self.connected = False
        self._thread = threading.Thread(target=self._run, name="dora-feed-sqs", daemon=True)

    def _load(self) -> int | None:
        raw = self._sink.load_marker(self.spec.name)
        try:
            return None if raw is None else int(json.loads(raw)["last_read_ms"])
        except (KeyError, TypeError, ValueError):
            log.warning("change feed %s: unreadable saved position %r", self.spec.name, raw)
            return None

    def start(self) -> None:
        if self._last_read_ms is None:
            self._sink.gap(self.spec.name, "no saved position")
            self._last_read_ms = self._now_ms()
        self._thread.start()

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.connected:
                    self._connect()
                self._poll()
            except (BotoCoreError, ClientError) as exc:
                if self.connected or self._retention_ms == 0:
                    log.warning("change feed %s: cannot read the queue (%s); retrying",
                                self.spec.name, exc)  # fmt: skip
                self.connected = False
                self._stop.wait(RETRY_S)
        self._save(force=True)

    def _connect(self) -> None:
        """Find the queue and its retention; a gap if messages may have expired unread."""
        if self._url is None:
            self._url = self._client.get_queue_url(QueueName=self.spec.queue)["QueueUrl"]
        attributes = self._client.get_queue_attributes(
            QueueUrl=self._url, AttributeNames=["MessageRetentionPeriod"]
        )["Attributes"]
        self._retention_ms = int(attributes["MessageRetentionPeriod"]) * 1000
        unread_ms = self._now_ms() - (self._last_read_ms or 0)
        if unread_ms > self._retention_ms:
            self._sink.gap(
                self.spec.name,
                f"last read {unread_ms // 1000} s ago, longer than the queue keeps messages "
                f"({self._retention_ms // 1000} s)",
            )
        self.connected = True
        log.info("change feed %s: reading %s", self.spec.name, self._url)

    def _poll(self) -> None:
        reply = self._client.receive_message(
            QueueUrl=self._url, MaxNumberOfMessages=_BATCH, WaitTimeSeconds=POLL_WAIT_S
        )
        messages = reply.get("Messages", [])
        changes: list[Change] = []
        for message in messages:
            changes += self._changes(message)
        self._sink.apply(self.spec.name, changes)
        if messages:
            entries = [
                {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)
            ]
            self._client.delete_message_batch(QueueUrl=self._url, Entries=entries)
        self._last_read_ms = self._now_ms()
        self._save()

    def _changes(self, message: dict[str, Any]) -> list[Change]:
        try:
            payload = json.loads(message.get("Body", ""))
            if isinstance(payload, dict) and payload.get("Type") == "Notification":
                payload = json.loads(payload["Message"])  # delivered through SNS
            return changes_of(payload)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("change feed %s: message %s is not an S3 event, deleted: %s",
                        self.spec.name, message.get("MessageId"), exc)  # fmt: skip
            return []

    def _save(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._last_read_ms is None or (not force and now - self._saved_at < SAVE_EVERY_S):
            return
        try:
            marker = json.dumps({"last_read_ms": self._last_read_ms}).encode()
            self._sink.save_marker(self.spec.name, marker)
        except Exception:
            # Not saved: after a restart the worker may report a gap it did not need.
            log.exception("change feed %s: cannot persist its position", self.spec.name)
            return
        self._saved_at = now

    def close(self) -> None:
        """Stop reading (within one long poll) and persist the position. Idempotent."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
