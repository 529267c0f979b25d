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
    "subscription), webhook (events POSTed to /v1/events). Empty: none; sync intervals alone "
    "decide when outside writes are seen.",
)
WEBHOOK_TOKEN: PropertyKey[str | None] = PropertyKey(
    "dora.ufs.change.webhook.token",
    KeyType.STRING,
    None,
    "Bearer token a POST to /v1/events must carry; required when the feeds name webhook.",
    secret=True,
)

KEYS: list[PropertyKey[Any]] = [FEEDS, WEBHOOK_TOKEN]

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
class FeedSpecs:
    """The feeds ``dora.ufs.change.feeds`` names."""

    seaweedfs: tuple[SeaweedSpec, ...] = ()
    webhook: bool = False


def feed_specs(config: Config) -> FeedSpecs:
    """The feeds the config names. Raises ConfigError naming the key and the entry that
    cannot be used, and when ``webhook`` is named without its token."""
    seaweed: list[SeaweedSpec] = []
    webhook = False
    for entry in config.get(FEEDS):
        if entry == WEBHOOK:
            webhook = True
            continue
        parts = urlsplit(entry)
        if parts.scheme != "seaweedfs":
            expected = "seaweedfs://host:port[/prefix] or webhook"
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
    return FeedSpecs(tuple(seaweed), webhook)
