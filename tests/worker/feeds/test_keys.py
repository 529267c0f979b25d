"""dora.ufs.change.feeds: the feed URIs a worker accepts, and precise errors for the others."""

import pytest

from config import ConfigError, load_config
from worker.feeds.keys import FeedSpecs, SeaweedSpec, SqsSpec, feed_specs
from worker.keys import build_registry


def specs(*defines: str) -> FeedSpecs:
    return feed_specs(load_config(build_registry(), environ={}, defines=list(defines)))


def test_seaweedfs_feeds_with_and_without_a_prefix_and_the_webhook() -> None:
    found = specs(
        "dora.ufs.change.feeds=seaweedfs://filer:18888, seaweedfs://f2:1/buckets/evt/, webhook",
        "dora.ufs.change.webhook.token=s3cret",
    )
    assert found == FeedSpecs(
        (SeaweedSpec("filer:18888", "/buckets"), SeaweedSpec("f2:1", "/buckets/evt")), True
    )
    assert specs() == FeedSpecs()


def test_sqs_queues_by_name_or_url() -> None:
    url = "https://sqs.eu-west-1.amazonaws.com/123456789012/lake-events"
    found = specs(f"dora.ufs.change.feeds=sqs://lake-events, sqs://{url}")
    assert found.sqs == (SqsSpec("lake-events"), SqsSpec(url))
    assert [q.url for q in found.sqs] == [None, url]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("kafka://x:1", "'kafka://x:1' is not a feed"),
        ("seaweedfs://filer", "needs the filer's host and gRPC port"),
        ("seaweedfs://filer:port", "needs the filer's host and gRPC port"),
        ("webhook", "the webhook feed needs dora.ufs.change.webhook.token set"),
        ("sqs://", "expected sqs://<queue name> or sqs://<queue URL>"),
        ("sqs://http://host", "expected sqs://<queue name> or sqs://<queue URL>"),
    ],
)
def test_a_feed_that_cannot_be_used_is_named(value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match="dora.ufs.change.feeds") as raised:
        specs(f"dora.ufs.change.feeds={value}")
    assert problem in str(raised.value)
