"""dora.ufs.change.feeds: the feed URIs a worker accepts, and precise errors for the others."""

import pytest

from config import ConfigError, load_config
from worker.feeds.keys import FeedSpecs, SeaweedSpec, feed_specs
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


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("kafka://x:1", "'kafka://x:1' is not a feed"),
        ("seaweedfs://filer", "needs the filer's host and gRPC port"),
        ("seaweedfs://filer:port", "needs the filer's host and gRPC port"),
        ("webhook", "the webhook feed needs dora.ufs.change.webhook.token set"),
    ],
)
def test_a_feed_that_cannot_be_used_is_named(value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match="dora.ufs.change.feeds") as raised:
        specs(f"dora.ufs.change.feeds={value}")
    assert problem in str(raised.value)
