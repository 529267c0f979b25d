"""The events a store POSTs to the worker's webhook (``POST /v1/events``), as changes.

Two shapes are read:

- S3 event notifications, ``{"Records": [...]}``, as AWS S3 (through SNS/EventBridge relays),
  MinIO and Ceph RGW send them: ``ObjectCreated:*`` names the object's new ETag,
  ``ObjectRemoved:*`` and ``LifecycleExpiration:*`` its removal; other events change no bytes.
  Keys arrive URL-encoded with ``+`` for a space; ``eventTime`` (ISO 8601) is the event's own
  time, kept for the feed's lag (one missing or unreadable is not measured, the change still
  applies). The per-key ``sequencer`` is not needed:
  applying is idempotent and order-insensitive (``worker.feeds.change``), so a late event only
  costs a re-check.
- SeaweedFS's filer webhook, ``{"key": <filer path>, "event_type": ..., "message": <the
  filer's EventNotification as JSON>}``, read as the subscription's events are
  (``worker.feeds.seaweedfs_events``; the buckets directory is SeaweedFS's default,
  ``/buckets``).
"""

from __future__ import annotations

import posixpath
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote_plus

from google.protobuf.json_format import ParseDict, ParseError

from worker.feeds.change import Change
from worker.feeds.filer_pb.seaweedfs_filer_pb2 import EventNotification, SubscribeMetadataResponse
from worker.feeds.seaweedfs_events import changes as filer_changes

SEAWEED_BUCKETS = "/buckets"
_CREATED = ("ObjectCreated:",)
_REMOVED = ("ObjectRemoved:", "LifecycleExpiration:")


def changes_of(payload: Any) -> list[Change]:
    """The changes ``payload`` (decoded JSON) names. Raises ValueError saying what is wrong
    with a payload of neither shape."""
    if isinstance(payload, dict) and "Records" in payload:
        records = payload["Records"]
        if not isinstance(records, list):
            raise ValueError("'Records' must be a list of S3 event records")
        return [c for n, record in enumerate(records) for c in _s3_record(n, record)]
    if isinstance(payload, dict) and {"key", "message"} <= payload.keys():
        return _seaweed_message(payload)
    if isinstance(payload, dict) and payload.get("Event") == "s3:TestEvent":
        return []  # what S3 sends once when notifications are configured
    raise ValueError(
        'expected S3 event notifications ({"Records": [...]}) or a SeaweedFS filer webhook '
        'message ({"key": ..., "event_type": ..., "message": {...}})'
    )


def _s3_record(n: int, record: Any) -> list[Change]:
    try:
        name = record["eventName"]
        s3 = record["s3"]
        bucket = s3["bucket"]["name"]
        obj = s3["object"]
        key = obj["key"]
    except (KeyError, TypeError):
        raise ValueError(
            f"record {n} is not an S3 event record: it needs eventName, s3.bucket.name and "
            "s3.object.key"
        ) from None
    etag = obj.get("eTag", "") if isinstance(obj, dict) else ""
    if not all(isinstance(v, str) for v in (name, bucket, key, etag)) or not bucket or not key:
        raise ValueError(f"record {n}: eventName, bucket name and key must be non-empty strings")
    event = name.removeprefix("s3:")
    uri = f"s3://{bucket}/{unquote_plus(key)}"
    at_ms = _epoch_ms(record.get("eventTime"))
    if event.startswith(_CREATED):
        return [Change(uri, etag.strip('"'), at_ms=at_ms)]
    if event.startswith(_REMOVED):
        return [Change(uri, deleted=True, at_ms=at_ms)]
    return []


def _epoch_ms(value: Any) -> int:
    """An ``eventTime`` (``2024-05-01T12:00:00.123Z``) in epoch ms; 0 if absent or unreadable."""
    if not isinstance(value, str):
        return 0
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0, int(moment.timestamp() * 1000))


def _seaweed_message(payload: dict[str, Any]) -> list[Change]:
    key, message = payload["key"], payload["message"]
    if not isinstance(key, str) or not key.startswith("/") or not isinstance(message, dict):
        raise ValueError("a SeaweedFS message needs 'key' (a filer path) and 'message' (an object)")
    try:
        notification = ParseDict(message, EventNotification(), ignore_unknown_fields=True)
    except ParseError as exc:
        raise ValueError(f"'message' is not a SeaweedFS EventNotification: {exc}") from None
    response = SubscribeMetadataResponse(
        directory=posixpath.dirname(key), event_notification=notification
    )
    return filer_changes(response, SEAWEED_BUCKETS, SEAWEED_BUCKETS)
