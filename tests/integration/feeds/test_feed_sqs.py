"""The SQS change feed against moto's server: S3 event notifications reach a worker at sync
interval -1 through SQS, and through SNS → SQS; keys URL-encoded with + for a space;
duplicates and late (out-of-order) events harmless; a position older than the queue keeps
messages is a gap."""

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.feeds.feed_support import body, fed_worker, put_record, served, wait_until
from tests.integration.ufs.moto_support import LocalMoto
from tests.worker.conftest import open_service
from ufs.options import UfsOptions
from worker.feeds.keys import SqsSpec
from worker.feeds.runner import Feeds
from worker.feeds.sqs import SqsFeed, sqs_client
from worker.service import WorkerService

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EVENTS = ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]


def created(bucket: str, key: str, etag: str) -> str:
    """An SQS message body as S3 sends it for a PUT of ``key``."""
    return json.dumps({"Records": [put_record(bucket, key, etag)]})


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalMoto]:
    server = LocalMoto(tmp_path_factory.mktemp("moto")).start()
    yield server
    server.stop()


def queue(moto: LocalMoto, name: str) -> tuple[str, str]:
    """A new queue's URL and ARN."""
    sqs = moto.client("sqs")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    return url, arn["QueueArn"]


def notified_worker(
    work: Path, moto: LocalMoto, bucket: str, queue_name: str, configuration: dict[str, Any]
) -> tuple[WorkerService, Feeds]:
    """``bucket`` notifying as ``configuration`` says, and a worker reading ``queue_name``."""
    moto.client("s3").put_bucket_notification_configuration(
        Bucket=bucket, NotificationConfiguration=configuration
    )
    return fed_worker(work, bucket, f"sqs://{queue_name}", *moto.storage_defines())


@pytest.fixture
def bucket(moto: LocalMoto) -> str:
    name = f"lake-{uuid.uuid4().hex[:8]}"
    moto.client("s3").create_bucket(Bucket=name)
    return name


def test_s3_to_sqs_with_duplicates_and_late_events(
    tmp_path: Path, moto: LocalMoto, bucket: str
) -> None:
    url, arn = queue(moto, f"q-{bucket}")
    s3 = moto.client("s3")
    configuration = {"QueueConfigurations": [{"QueueArn": arn, "Events": EVENTS}]}
    service, feeds = notified_worker(tmp_path / "work", moto, bucket, f"q-{bucket}", configuration)
    try:
        key, uri = "a dir/ü+x.txt", f"s3://{bucket}/a dir/ü+x.txt"
        s3.put_object(Bucket=bucket, Key=key, Body=b"v1")
        wait_until(served(service, uri, b"v1"))
        old = s3.head_object(Bucket=bucket, Key=key)["ETag"]
        s3.put_object(Bucket=bucket, Key=key, Body=b"v2, longer")
        wait_until(served(service, uri, b"v2, longer"))
        new = s3.head_object(Bucket=bucket, Key=key)["ETag"]
        # At least once: the newest event twice more; then a late (out-of-order) older one.
        sqs, counters = moto.client("sqs"), service.changes.counters
        # Both PUTs' own events in (the second may trail the read that found v2 by itself).
        wait_until(lambda: counters.snapshot()["received"] == 2)
        assert body(service, uri) == b"v2, longer"
        calls = service.stats()["metadata_ufs_calls"]
        before = counters.snapshot()
        for etag in (new, new):
            sqs.send_message(QueueUrl=url, MessageBody=created(bucket, key, etag))
        wait_until(lambda: counters.snapshot()["received"] == before["received"] + 2)
        assert counters.snapshot()["unchanged"] == before["unchanged"] + 2
        assert service.stats()["metadata_ufs_calls"] == calls  # the duplicates cost nothing
        sqs.send_message(QueueUrl=url, MessageBody=created(bucket, key, old))
        wait_until(lambda: counters.snapshot()["received"] == before["received"] + 3)
        assert body(service, uri) == b"v2, longer"  # the late one cost one re-check
        s3.delete_object(Bucket=bucket, Key=key)
        wait_until(served(service, uri, None))
    finally:
        feeds.close()
        service.close()


def test_s3_to_sns_to_sqs(tmp_path: Path, moto: LocalMoto, bucket: str) -> None:
    _, arn = queue(moto, f"fanout-{bucket}")
    sns = moto.client("sns")
    topic = sns.create_topic(Name=f"t-{bucket}")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    s3 = moto.client("s3")
    configuration = {"TopicConfigurations": [{"TopicArn": topic, "Events": EVENTS}]}
    service, feeds = notified_worker(
        tmp_path / "work", moto, bucket, f"fanout-{bucket}", configuration
    )
    try:
        uri = f"s3://{bucket}/t/part-0.parquet"
        s3.put_object(Bucket=bucket, Key="t/part-0.parquet", Body=b"one")
        wait_until(served(service, uri, b"one"))
        s3.put_object(Bucket=bucket, Key="t/part-0.parquet", Body=b"two!")
        wait_until(served(service, uri, b"two!"))
        # The lag is measured from each record's eventTime, through the SNS envelope too.
        wait_until(lambda: f"sqs://fanout-{bucket}" in service.changes.lag.describe())
        assert service.changes.lag.describe()[f"sqs://fanout-{bucket}"]["events"] >= 1
    finally:
        feeds.close()
        service.close()


def test_a_position_older_than_the_retention_is_a_gap(
    tmp_path: Path, moto: LocalMoto, bucket: str
) -> None:
    url, _ = queue(moto, f"short-{bucket}")
    moto.client("sqs").set_queue_attributes(
        QueueUrl=url, Attributes={"MessageRetentionPeriod": "60"}
    )
    service = open_service(tmp_path / "work", f"s3://{bucket}", *moto.storage_defines())
    spec = SqsSpec(url)
    client = sqs_client(spec, UfsOptions.from_config(service.config))
    try:
        feed = SqsFeed(spec, service.changes, client)
        feed.start()  # no position yet: a gap
        wait_until(lambda: feed.connected)
        feed.close()
        assert service.changes.counters.snapshot()["gaps"] == 1
        # Started again two minutes later (as its clock says): messages may have expired.
        later = SqsFeed(spec, service.changes, client, clock=lambda: time.time() + 120)
        later.start()
        wait_until(lambda: later.connected)
        later.close()
        assert service.changes.counters.snapshot()["gaps"] == 2
        again = SqsFeed(spec, service.changes, client, clock=lambda: time.time() + 130)
        again.start()
        wait_until(lambda: again.connected)
        again.close()
        assert service.changes.counters.snapshot()["gaps"] == 2  # read 10 s before: no gap
    finally:
        service.close()
