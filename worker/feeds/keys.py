"""Property keys of the change feeds, and the parsing of ``dora.ufs.change.feeds``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from config import Config
from config.keys import KeyType, PropertyKey

FEEDS: PropertyKey[list[str]] = PropertyKey(
    "dora.ufs.change.feeds",
    KeyType.LIST,
    "",
    "Change feeds of the UFS this worker consumes, comma separated: "
    "seaweedfs://<filer host>:<filer gRPC port>[/<path prefix>] (the filer's metadata "
    "subscription), sqs://<queue URL or name> (S3 event notifications, directly or through "
    "SNS; a name is looked up at the dora.ufs.s3 endpoint and region; one queue per worker), "
    "webhook (events POSTed to /v1/events). Empty: none; sync intervals alone decide when "
    "outside writes are seen.",
)
WEBHOOK_TOKEN: PropertyKey[str | None] = PropertyKey(
    "dora.ufs.change.webhook.token",
    KeyType.STRING,
    None,
    "Bearer token a POST to /v1/events must carry; required when the feeds name webhook.",
    secret=True,
)

SEAWEED_RESUME_MAX_AGE: PropertyKey[int] = PropertyKey(
    "dora.ufs.change.seaweedfs.resume.max.age",
    KeyType.DURATION,
    "1h",
    "Oldest saved position a SeaweedFS feed resumes from after a restart, a lost subscription "
    "or a change of the elected consumer (the filer replays the events since then); an older "
    "one, or none, is a gap: everything cached is re-checked with the UFS. 0: never resume. A "
    "filer killed within a minute of writes no subscriber received loses their events, which a "
    "resumed subscription cannot tell (see docs/feeds.md).",
    minimum=0,
)

KEYS: list[PropertyKey[Any]] = [FEEDS, WEBHOOK_TOKEN, SEAWEED_RESUME_MAX_AGE]

WEBHOOK = "webhook"
_DEFAULT_PREFIX = "/buckets"


@dataclass(frozen=True)
class SeaweedSpec:
    """A SeaweedFS filer to subscribe to: its gRPC address and the filer path prefix watched
    (the buckets directory or one bucket under it)."""

    address: str
    prefix: str

    @property
    def name(self) -> str:
        return f"seaweedfs://{self.address}{self.prefix}"


@dataclass(frozen=True)
class SqsSpec:
    """An SQS queue of S3 event notifications: its URL, or its name (looked up at the S3
    keys' endpoint and region)."""

    queue: str

    @property
    def name(self) -> str:
        return f"sqs://{self.queue}"

    @property
    def url(self) -> str | None:
        return self.queue if self.queue.startswith(("http://", "https://")) else None


@dataclass(frozen=True)
class FeedSpecs:
    """The feeds ``dora.ufs.change.feeds`` names."""

    seaweedfs: tuple[SeaweedSpec, ...] = ()
    webhook: bool = False
    sqs: tuple[SqsSpec, ...] = ()


def feed_specs(config: Config) -> FeedSpecs:
    """The feeds the config names. Raises ConfigError naming the key and the entry that
    cannot be used, and when ``webhook`` is named without its token."""
    seaweed: list[SeaweedSpec] = []
    queues: list[SqsSpec] = []
    webhook = False
    for entry in config.get(FEEDS):
        if entry == WEBHOOK:
            webhook = True
            continue
        if entry.startswith("sqs://"):
            queues.append(_sqs(config, entry))
            continue
        parts = urlsplit(entry)
        if parts.scheme != "seaweedfs":
            expected = "seaweedfs://host:port[/prefix], sqs://<queue URL or name> or webhook"
            raise config.invalid(FEEDS, f"{entry!r} is not a feed: expected {expected}")
        try:
            port = parts.port
        except ValueError:
            port = None
        if not parts.hostname or port is None or parts.query or parts.fragment:
            raise config.invalid(
                FEEDS, f"{entry!r} needs the filer's host and gRPC port: seaweedfs://host:port"
            )
        prefix = parts.path.rstrip("/") or _DEFAULT_PREFIX
        seaweed.append(SeaweedSpec(f"{parts.hostname}:{port}", prefix))
    if webhook and not config.get(WEBHOOK_TOKEN):
        raise config.invalid(FEEDS, f"the webhook feed needs {WEBHOOK_TOKEN.name} set")
    return FeedSpecs(tuple(seaweed), webhook, tuple(queues))


def _sqs(config: Config, entry: str) -> SqsSpec:
    queue = entry.removeprefix("sqs://")
    url = urlsplit(queue)
    if url.scheme in ("http", "https") and url.hostname and url.path.strip("/"):
        return SqsSpec(queue)
    if queue and "/" not in queue and ":" not in queue:
        return SqsSpec(queue)
    raise config.invalid(FEEDS, f"{entry!r}: expected sqs://<queue name> or sqs://<queue URL>")
