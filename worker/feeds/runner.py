"""The change feeds one worker follows itself (``dora.ufs.change.feeds``), started and stopped
with the worker process. (The webhook is a route instead: ``worker.api.events``.)"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from config import Config
from ufs.options import UfsOptions
from worker.feeds.keys import feed_specs
from worker.feeds.seaweedfs import SeaweedFeed
from worker.feeds.sqs import SqsFeed, sqs_client

if TYPE_CHECKING:
    from worker.service import WorkerService


class Feed(Protocol):
    """A source followed on a thread of its own."""

    connected: bool

    def start(self) -> None: ...

    def close(self) -> None:
        """Stop following (and persist a position, where the feed keeps one). Idempotent."""


class Feeds:
    """The running feeds of one worker, applying to the service's ``changes`` sink. Not
    thread-safe: start and close from one thread."""

    def __init__(self, feeds: list[Feed]) -> None:
        self.feeds = feeds

    @classmethod
    def start(cls, config: Config, service: WorkerService) -> Feeds | None:
        """Start the feeds the config names (None when it names none to follow). Raises
        ConfigError for a feed that cannot be used; an unreachable source does not stop the
        worker (its feed keeps trying, and sync intervals apply meanwhile)."""
        specs = feed_specs(config)
        feeds: list[Feed] = [SeaweedFeed(spec, service.changes) for spec in specs.seaweedfs]
        options = UfsOptions.from_config(config)
        for queue in specs.sqs:
            feeds.append(SqsFeed(queue, service.changes, sqs_client(queue, options)))
        if not feeds:
            return None
        for feed in feeds:
            feed.start()
        return cls(feeds)

    def close(self) -> None:
        """Stop every feed. Idempotent."""
        for feed in self.feeds:
            feed.close()
