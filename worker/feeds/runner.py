"""The change feeds one worker follows itself (``dora.ufs.change.feeds``), started and stopped
with the worker process. (The webhook is a route instead: ``worker.api.events``.)"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from config import Config
from ufs.options import UfsOptions
from worker.cluster import keys as cluster_keys
from worker.feeds.change import CacheSink, ChangeSink, Feed
from worker.feeds.elected import ElectedFeed
from worker.feeds.keys import SEAWEED_RESUME_MAX_AGE, SqsSpec, feed_specs
from worker.feeds.seaweedfs import SeaweedFeed
from worker.feeds.sqs import SqsFeed, sqs_client

if TYPE_CHECKING:
    from worker.cluster.node import ClusterNode


class Feeds:
    """The running feeds of one worker, applying to the worker's change sink. Not
    thread-safe: start and close from one thread."""

    def __init__(self, feeds: list[Feed]) -> None:
        self.feeds = feeds

    @classmethod
    def start(
        cls, config: Config, sink: CacheSink, node: ClusterNode | None = None
    ) -> Feeds | None:
        """Start the feeds the config names (None when it names none to follow), applying to
        ``sink``: followed by this worker, or with ``node`` (a cluster) by the one worker
        elected per source, which republishes into the etcd feed. Raises ConfigError for a
        feed that cannot be used; an unreachable source does not stop the worker (its feed
        keeps trying, and sync intervals apply meanwhile)."""
        specs = feed_specs(config)
        options = UfsOptions.from_config(config)
        makers: dict[str, Callable[[ChangeSink], Feed]] = {}
        resume_ms = config.get(SEAWEED_RESUME_MAX_AGE)
        for spec in specs.seaweedfs:
            makers[spec.name] = functools.partial(SeaweedFeed, spec, resume_max_age_ms=resume_ms)
        for queue in specs.sqs:
            makers[queue.name] = functools.partial(_sqs_feed, queue, options)
        if not makers:
            return None
        if node is None:
            feeds = [make(sink) for make in makers.values()]
        else:
            ttl_s = max(2, config.get(cluster_keys.LEASE_TTL) // 1000)
            feeds = [ElectedFeed(name, make, node, sink, ttl_s) for name, make in makers.items()]
        for feed in feeds:
            feed.start()
        return cls(feeds)

    def close(self) -> None:
        """Stop every feed. Idempotent."""
        for feed in self.feeds:
            feed.close()


def _sqs_feed(queue: SqsSpec, options: UfsOptions, sink: ChangeSink) -> SqsFeed:
    return SqsFeed(queue, sink, sqs_client(queue, options))
