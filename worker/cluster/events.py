"""Invalidation events and the batches they travel in.

A batch is the value of one etcd write to the feed key, so its etcd revision orders it before
or after every other batch (Hive's notification-log event id). The encoding is compact JSON:
``{"w": worker id, "t": publish time ms, "e": [[op, path, version, prefix], ...]}`` — a file
event costs about its URI plus 30 bytes. A batch that carries changes a UFS change feed reported
adds ``"o": {source: [event time ms, ...]}``, the events' own times, so that every worker can
measure the feed's lag to its own application (an older worker ignores the field).
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ufs import uri as uris
from worker.cluster import entries
from worker.cluster.entries import BadEntry

# Bounds on one event's fields: a URI longer than any object store allows, a version longer
# than any ETag or size+mtime pair, is not an event a worker published.
MAX_PATH_CHARS = 8192
MAX_VERSION_CHARS = 1024
MAX_SOURCE_CHARS = 1024


class Op(enum.Enum):
    """What happened at a path. Every op invalidates; the kinds are kept for observers."""

    CREATED = "c"
    UPDATED = "u"
    DELETED = "d"
    INVALIDATED = "i"
    # "Re-check everything you cache": a worker lost events it could not publish.
    RESET = "r"


@dataclass(frozen=True)
class Event:
    """A change to ``path`` (a canonical UFS URI), or with ``prefix`` to everything under it.
    ``version`` is the new version where one exists ("" for deletes and prefixes)."""

    op: Op
    path: str
    version: str = ""
    prefix: bool = False

    def encode(self) -> list[Any]:
        return [self.op.value, self.path, self.version, 1 if self.prefix else 0]

    @classmethod
    def decode(cls, item: Any) -> Event:
        """Raises BadEntry for anything but ``[op, path, version, 0 or 1]``."""
        op, path, version, prefix = entries.array(item, "feed event", length=4)
        try:
            kind = Op(entries.text(op, "feed event op", 1))
        except ValueError:
            raise BadEntry(f"feed event op: unknown {op!r}") from None
        path = entries.text(path, "feed event path", MAX_PATH_CHARS)
        if not path and kind is not Op.RESET:
            raise BadEntry("feed event path: empty")
        version = entries.text(version, "feed event version", MAX_VERSION_CHARS)
        return cls(kind, path, version, bool(entries.integer(prefix, "feed event prefix", 0, 1)))


RESET = Event(Op.RESET, "")


@dataclass(frozen=True)
class Origin:
    """Where a change made outside the cache was heard of: the change feed ``source`` (as
    ``dora.ufs.change.feeds`` names it) and the event's own time, ``at_ms`` (epoch ms, by the
    store's clock)."""

    source: str
    at_ms: int


Origins = dict[str, tuple[int, ...]]
"""Event times (epoch ms) by change-feed source."""


@dataclass(frozen=True)
class Batch:
    """The events one worker published in one etcd write, and the times of the change-feed
    events among them."""

    worker: str
    published_ms: int
    events: tuple[Event, ...]
    origins: Origins = field(default_factory=dict)

    def encode(self) -> bytes:
        data: dict[str, Any] = {
            "w": self.worker,
            "t": self.published_ms,
            "e": [e.encode() for e in self.events],
        }
        if self.origins:
            data["o"] = {source: list(times) for source, times in self.origins.items()}
        return json.dumps(data, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> Batch:
        """Raises BadEntry (and nothing else) for a value that is not a batch."""
        data = entries.mapping(entries.load_json(raw, "feed batch"), "feed batch")
        worker = entries.text(data.get("w"), "feed batch worker", 64)
        published_ms = entries.integer(data.get("t"), "feed batch time")
        items = entries.array(data.get("e"), "feed batch events")
        events = tuple(Event.decode(item) for item in items)
        return cls(worker, published_ms, events, _origins(data.get("o", {})))


def _origins(value: Any) -> Origins:
    origins: Origins = {}
    for source, times in entries.mapping(value, "feed batch origins").items():
        entries.text(source, "feed batch origin source", MAX_SOURCE_CHARS)
        listed = entries.array(times, "feed batch origin times")
        origins[source] = tuple(entries.integer(t, "feed batch origin time") for t in listed)
    return origins


def collapse(events: list[Event], threshold: int) -> list[Event]:
    """``events`` with every directory that has more than ``threshold`` events directly under
    it replaced by one prefix event for the directory (a job committing thousands of files into
    one table directory costs every worker one invalidation, not thousands). A reset replaces
    everything. Order is kept otherwise; duplicates go."""
    if any(event.op is Op.RESET for event in events):
        return [RESET]
    parents = Counter(uris.parent(e.path) for e in events if not e.prefix)
    crowded = {parent for parent, count in parents.items() if parent and count > threshold}
    out: dict[Event, None] = {}
    for event in events:
        parent = None if event.prefix else uris.parent(event.path)
        if parent is not None and parent in crowded:
            out[Event(Op.UPDATED, parent, prefix=True)] = None
        else:
            out[event] = None
    return list(out)
