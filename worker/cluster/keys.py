"""Property keys of the cluster (membership and the invalidation feed on etcd)."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey

ETCD_ENDPOINTS: PropertyKey[list[str]] = PropertyKey(
    "dora.cluster.etcd.endpoints",
    KeyType.LIST,
    "",
    "etcd endpoints (http://host:port, comma separated). Set: workers register in etcd, "
    "publish and apply the invalidation feed, and clients build their ring from etcd. "
    "Empty: no cluster; clients use dora.user.workers.",
    alias="alluxio.etcd.endpoints",
)
ETCD_USER: PropertyKey[str | None] = PropertyKey(
    "dora.cluster.etcd.user",
    KeyType.STRING,
    None,
    "etcd user to authenticate as (etcd's own users and roles; README, \"etcd is a trust "
    'boundary"). Unset: no authentication.',
)
ETCD_PASSWORD: PropertyKey[str | None] = PropertyKey(
    "dora.cluster.etcd.password",
    KeyType.STRING,
    None,
    "Password of dora.cluster.etcd.user.",
    secret=True,
)
CLUSTER_NAME: PropertyKey[str] = PropertyKey(
    "dora.cluster.name",
    KeyType.STRING,
    "DefaultAlluxioCluster",
    "Cluster name: the etcd paths of its members and feed are under it.",
    alias="alluxio.cluster.name",
)
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
ETCD_TIMEOUT: PropertyKey[int] = PropertyKey(
    "dora.cluster.etcd.timeout",
    KeyType.DURATION,
    "2s",
    "Deadline of one etcd call; past it etcd counts as unavailable for that call.",
    minimum=1,
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
    ETCD_ENDPOINTS,
    ETCD_USER,
    ETCD_PASSWORD,
    CLUSTER_NAME,
    ADVERTISE_HOST,
    LEASE_TTL,
    ETCD_TIMEOUT,
    READ_WAIT,
    PREFIX_THRESHOLD,
    PENDING_LIMIT,
]
