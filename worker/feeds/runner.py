"""The change feeds one worker follows itself (``dora.ufs.change.feeds``), started and stopped
with the worker process. (The webhook is a route instead: ``worker.api.events``.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from config import Config
from worker.feeds.keys import feed_specs
from worker.feeds.seaweedfs import SeaweedFeed

if TYPE_CHECKING:
    from worker.service import WorkerService


class Feeds:
    """The running feeds of one worker, applying to the service's ``changes`` sink. Not
    thread-safe: start and close from one thread."""

    def __init__(self, seaweedfs: list[SeaweedFeed]) -> None:
        self.seaweedfs = seaweedfs

    @classmethod
    def start(cls, config: Config, service: WorkerService) -> Feeds | None:
        """Start the feeds the config names (None when it names none to follow). Raises
        ConfigError for a feed that cannot be used; an unreachable source does not stop the
        worker (its feed keeps trying, and sync intervals apply meanwhile)."""
        specs = feed_specs(config)
        if not specs.seaweedfs:
            return None
        feeds = cls([SeaweedFeed(spec, service.changes) for spec in specs.seaweedfs])
        for feed in feeds.seaweedfs:
            feed.start()
        return feeds

    def close(self) -> None:
        """Stop every feed and persist its position. Idempotent."""
        for feed in self.seaweedfs:
            feed.close()
