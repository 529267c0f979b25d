"""Reading webhook bodies (worker.feeds.webhook): S3 event notifications as AWS and MinIO
send them, SeaweedFS filer webhook messages, and precise refusals of anything else."""

import base64
import hashlib

import pytest

from worker.feeds.change import Change
from worker.feeds.webhook import changes_of


def s3_record(event: str, key: str, etag: str | None = None) -> dict[str, object]:
    obj: dict[str, object] = {"key": key, "size": 3, "sequencer": "0055AED6DCD90281E5"}
    if etag is not None:
        obj["eTag"] = etag
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "eventName": event,
        "s3": {"bucket": {"name": "lake"}, "object": obj},
    }


def test_s3_records_created_removed_and_others() -> None:
    payload = {
        "Records": [
            s3_record("ObjectCreated:Put", "a+dir/%C3%BC+x.txt", "0123abcd"),
            s3_record("s3:ObjectCreated:CompleteMultipartUpload", "mp", '"feed-2"'),
            s3_record("ObjectRemoved:Delete", "gone%2Bplus"),
            s3_record("LifecycleExpiration:Delete", "old"),
            s3_record("ObjectAccessed:Get", "read"),
        ]
    }
    assert changes_of(payload) == [
        Change("s3://lake/a dir/ü x.txt", "0123abcd"),
        Change("s3://lake/mp", "feed-2"),
        Change("s3://lake/gone+plus", deleted=True),
        Change("s3://lake/old", deleted=True),
    ]


@pytest.mark.parametrize(
    ("when", "at_ms"),
    [("2024-05-01T12:00:00.123Z", 1_714_564_800_123), ("yesterday", 0), (None, 0)],
)
def test_an_s3_record_s_event_time_is_kept_for_the_lag(when: str | None, at_ms: int) -> None:
    record = s3_record("ObjectCreated:Put", "k", "e")
    if when is not None:
        record["eventTime"] = when
    assert changes_of({"Records": [record]}) == [Change("s3://lake/k", "e", at_ms=at_ms)]


def test_the_s3_test_event_names_nothing() -> None:
    assert changes_of({"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "lake"}) == []


def test_a_seaweedfs_filer_message() -> None:
    md5 = hashlib.md5(b"data").digest()
    new_entry = {
        "name": "k",
        "attributes": {"file_size": 4, "md5": base64.b64encode(md5).decode()},
        "chunks": [{"e_tag": base64.b64encode(md5).decode(), "size": 4}],
    }
    message = {"new_entry": new_entry, "new_parent_path": "/buckets/lake/d", "unknown": 1}
    payload = {"key": "/buckets/lake/d/k", "event_type": "create", "message": message}
    assert changes_of(payload) == [Change("s3://lake/d/k", md5.hex())]
    deleted = {
        "key": "/buckets/lake/d/k",
        "event_type": "delete",
        "message": {"old_entry": {"name": "k"}},
    }
    assert changes_of(deleted) == [Change("s3://lake/d/k", deleted=True)]


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ([1, 2], "expected S3 event notifications"),
        ({"Records": {}}, "'Records' must be a list"),
        ({"Records": [{"eventName": "ObjectCreated:Put"}]}, "record 0 is not an S3 event record"),
        ({"Records": [s3_record("ObjectCreated:Put", "")]}, "record 0: eventName, bucket name"),
        ({"key": "relative", "message": {}}, "needs 'key' (a filer path)"),
        ({"key": "/buckets/b/k", "message": {"new_entry": 5}}, "not a SeaweedFS EventNotification"),
    ],
)
def test_what_is_not_an_event_is_named(payload: object, problem: str) -> None:
    with pytest.raises(ValueError) as raised:
        changes_of(payload)
    assert problem in str(raised.value)
