"""Property keys of the worker's part in the cluster (membership and the invalidation feed on
etcd); the keys of the etcd connection and the cluster's name, which a client reads too, are in
:mod:`worker.common.client_keys`."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey

ADVERTISE_HOST: PropertyKey[str | None] = PropertyKey(
    "dora.cluster.advertise.host",
    KeyType.STRING,
    None,
    "Host name or address other hosts reach this worker at (default: the bind host, or this "
    "host's name when binding every address).",
)
LEASE_TTL: PropertyKey[int] = PropertyKey(
    "dora.cluster.lease.ttl",
    KeyType.DURATION,
    "10s",
    "Life of a worker's membership lease; a worker that stops keeping it alive leaves the "
    "ring this long after.",
    minimum=2000,
)
READ_WAIT: PropertyKey[int] = PropertyKey(
    "dora.cluster.read.wait",
    KeyType.DURATION,
    "2s",
    "How long a worker waits to have applied the feed revision a client names before it "
    "answers by syncing with the UFS instead.",
    minimum=0,
)
PREFIX_THRESHOLD: PropertyKey[int] = PropertyKey(
    "dora.cluster.feed.prefix.threshold",
    KeyType.INT,
    "64",
    "Events in one batch under one directory beyond which the batch carries one prefix event "
    "for the directory instead.",
    minimum=2,
)
PENDING_LIMIT: PropertyKey[int] = PropertyKey(
    "dora.cluster.feed.pending.limit",
    KeyType.INT,
    "100000",
    "Events a worker holds while etcd is unavailable; past it they are replaced by one reset "
    "event (every worker then re-checks what it caches).",
    minimum=1,
)

KEYS: list[PropertyKey[Any]] = [
    ADVERTISE_HOST,
    LEASE_TTL,
    READ_WAIT,
    PREFIX_THRESHOLD,
    PENDING_LIMIT,
]
