"""What the change-feed integration tests share: what a worker serves at sync interval -1,
and a bounded wait for a change to reach it."""

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

from tests.worker.conftest import open_service
from ufs.errors import StorageUnavailable, UfsNotFound
from worker.feeds.runner import Feeds
from worker.service import WorkerService

WAIT_S = 30.0


def wait_until(condition: Callable[[], bool], timeout: float = WAIT_S) -> None:
    """Poll ``condition`` (bounded; the delay is the bench's to measure, not asserted)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the change did not reach the worker"
        time.sleep(0.05)


def body(service: WorkerService, uri: str) -> bytes | None:
    """What the worker serves for ``uri`` at sync interval -1 (None: not found)."""
    try:
        return b"".join(service.read(service.request(uri, -1)).chunks)
    except UfsNotFound:
        return None


def served(service: WorkerService, uri: str, expected: bytes | None) -> Callable[[], bool]:
    """Whether the worker serves ``expected`` for ``uri`` now; not yet while the UFS is
    unavailable (a SeaweedFS just restarted answers InternalError for a moment)."""

    def check() -> bool:
        try:
            return body(service, uri) == expected
        except StorageUnavailable:
            return False

    return check


def fed_worker(work: Path, bucket: str, feed: str, *defines: str) -> tuple[WorkerService, Feeds]:
    """A worker serving ``s3://<bucket>`` at sync interval -1, following ``feed`` (connected)."""
    service = open_service(
        work,
        f"s3://{bucket}",
        "dora.user.file.metadata.sync.interval=-1",
        f"dora.ufs.change.feeds={feed}",
        *defines,
    )
    feeds = Feeds.start(service.config, service.changes)
    assert feeds is not None
    wait_until(lambda: all(f.connected for f in feeds.feeds))
    return service, feeds


def put_record(bucket: str, key: str, etag: str, event_time: str = "") -> dict[str, Any]:
    """An S3 event record as S3 sends one for a PUT of ``key`` (which it URL-encodes, ``+``
    for a space), with ``eventTime`` if given (``2024-05-01T12:00:00.123Z``)."""
    obj = {"key": quote_plus(key, safe="/"), "eTag": etag, "sequencer": "0062E99A88DC407460"}
    record = {"eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": bucket}, "object": obj}}
    if event_time:
        record["eventTime"] = event_time
    return record
