"""The keys a client reads: the ``dora.user.*`` keys (the workers to reach and how, metadata
freshness, the read type, the client's TLS) and the cluster's etcd (``dora.cluster.name``,
``dora.cluster.etcd.*``). A worker reads several of them too (the default sync interval, its own
etcd). The full registry, with the worker's keys, is built by the entry points
(``worker.keys.build_registry``: the worker, the ``dora`` command); a client builds its own from
these and the UFS's keys, for its fallback (``worker.client.options.client_registry``)."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey

NO_CACHE = "NO_CACHE"


def _file(name: str, description: str) -> PropertyKey[str | None]:
    return PropertyKey(name, KeyType.STRING, None, description)


USER_WORKERS: PropertyKey[list[str]] = PropertyKey(
    "dora.user.workers",
    KeyType.LIST,
    "127.0.0.1:28080",
    "Workers a client talks to, as host:port, comma separated.",
)
USER_CLIENT_TOKEN: PropertyKey[str | None] = PropertyKey(
    "dora.user.client.token",
    KeyType.STRING,
    None,
    "Bearer token the client sends to workers (empty: none).",
    secret=True,
)
USER_CLIENT_TIMEOUT: PropertyKey[int] = PropertyKey(
    "dora.user.client.timeout",
    KeyType.DURATION,
    "60s",
    "Client timeout for reading a worker's answer (and for writing a request body).",
    minimum=1,
)
USER_CLIENT_CONNECT_TIMEOUT: PropertyKey[int] = PropertyKey(
    "dora.user.client.connect.timeout",
    KeyType.DURATION,
    "2s",
    "Client timeout for connecting to a worker; after it the next worker on the ring is tried.",
    minimum=1,
)
USER_CLIENT_RETRY_ATTEMPTS: PropertyKey[int] = PropertyKey(
    "dora.user.client.retry.max.attempts",
    KeyType.INT,
    "3",
    "Attempts of an idempotent call a worker answers 503 (UFS unavailable).",
    minimum=1,
)
USER_CLIENT_FALLBACK_TO_UFS: PropertyKey[bool] = PropertyKey(
    "dora.user.client.fallback.to.ufs",
    KeyType.BOOL,
    "true",
    "When no worker is reachable, read the UFS directly (counted and logged).",
)
USER_CLIENT_VIRTUAL_NODES: PropertyKey[int] = PropertyKey(
    "dora.user.client.virtual.nodes",
    KeyType.INT,
    "200",
    "Virtual nodes per worker on the client's consistent hash ring.",
    minimum=1,
)
USER_CLIENT_READ_CHUNK_SIZE: PropertyKey[int] = PropertyKey(
    "dora.user.client.read.chunk.size",
    KeyType.SIZE,
    "8MB",
    "Reads larger than this are split into chunks of this size fetched in parallel.",
    minimum=1,
)
USER_CLIENT_READ_PARALLELISM: PropertyKey[int] = PropertyKey(
    "dora.user.client.read.parallelism",
    KeyType.INT,
    "8",
    "Chunks (and cat_ranges ranges) a client fetches at once.",
    minimum=1,
)
USER_CLIENT_SHORT_CIRCUIT: PropertyKey[bool] = PropertyKey(
    "dora.user.client.short.circuit.enabled",
    KeyType.BOOL,
    "true",
    "Read cached pages straight from the worker's page files when the client has one worker "
    "on this host whose files it can open (the sidecar case); false: always over HTTP.",
)
USER_CLIENT_NEAR_CACHE: PropertyKey[bool] = PropertyKey(
    "dora.user.client.near.cache.enabled",
    KeyType.BOOL,
    "true",
    "Keep statuses and listings in the client process, checked against the worker's "
    "generation file, when the client has one worker on this host whose generation file it "
    "can open (the sidecar case); false: always ask the worker.",
)
SYNC_INTERVAL: PropertyKey[int] = PropertyKey(
    "dora.user.file.metadata.sync.interval",
    KeyType.DURATION,
    "-1",
    "Default sync interval: -1 never re-checks a cached status, 0 always does, "
    "N re-checks after N.",
    alias="alluxio.user.file.metadata.sync.interval",
    allow_never=True,
    minimum=0,
)
SERVE_STALE: PropertyKey[bool] = PropertyKey(
    "dora.user.file.metadata.sync.serve.stale",
    KeyType.BOOL,
    "false",
    "Serve while revalidating: a status the sync interval says to re-check is answered at "
    "once from the cache while one background re-check runs for its path, as long as it is "
    "younger than dora.worker.ufs.file.status.cache.ttl (older ones are re-checked first).",
)
READ_TYPE: PropertyKey[str] = PropertyKey(
    "dora.user.file.readtype.default",
    KeyType.STRING,
    "CACHE",
    "How reads use the page store: CACHE (and CACHE_PROMOTE, the same here) go through it, "
    "NO_CACHE reads straight from the UFS (pass-through).",
    alias="alluxio.user.file.readtype.default",
    choices=("CACHE", "CACHE_PROMOTE", NO_CACHE),
)
USER_CA = _file(
    "dora.user.tls.ca.file",
    "PEM CA bundle a client verifies https:// workers with (empty: the system's store).",
)
USER_CERT = _file(
    "dora.user.tls.cert.file",
    "PEM certificate a client presents to workers that require one (mutual TLS).",
)
USER_KEY = _file("dora.user.tls.key.file", "PEM private key of dora.user.tls.cert.file.")
USER_ALLOW_PLAINTEXT: PropertyKey[bool] = PropertyKey(
    "dora.user.client.token.allow.plaintext",
    KeyType.BOOL,
    "false",
    "Let a client send its token over plain http:// to a worker beyond loopback.",
)
ETCD_CA = _file(
    "dora.cluster.etcd.tls.ca.file",
    "PEM CA bundle https:// etcd endpoints are verified with (empty: the system's store).",
)
ETCD_CERT = _file(
    "dora.cluster.etcd.tls.cert.file",
    "PEM client certificate for etcd (etcd started with --client-cert-auth).",
)
ETCD_KEY = _file(
    "dora.cluster.etcd.tls.key.file", "PEM private key of the etcd client certificate."
)
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
    "etcd user to authenticate as (etcd's own users and roles; docs/cluster.md, \"etcd is a trust "
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
ETCD_TIMEOUT: PropertyKey[int] = PropertyKey(
    "dora.cluster.etcd.timeout",
    KeyType.DURATION,
    "2s",
    "Deadline of one etcd call; past it etcd counts as unavailable for that call.",
    minimum=1,
)

KEYS: list[PropertyKey[Any]] = [
    USER_WORKERS,
    USER_CLIENT_TOKEN,
    USER_CLIENT_TIMEOUT,
    USER_CLIENT_CONNECT_TIMEOUT,
    USER_CLIENT_RETRY_ATTEMPTS,
    USER_CLIENT_FALLBACK_TO_UFS,
    USER_CLIENT_VIRTUAL_NODES,
    USER_CLIENT_READ_CHUNK_SIZE,
    USER_CLIENT_READ_PARALLELISM,
    USER_CLIENT_SHORT_CIRCUIT,
    USER_CLIENT_NEAR_CACHE,
    SYNC_INTERVAL,
    SERVE_STALE,
    READ_TYPE,
    USER_CA,
    USER_CERT,
    USER_KEY,
    USER_ALLOW_PLAINTEXT,
    ETCD_CA,
    ETCD_CERT,
    ETCD_KEY,
    ETCD_ENDPOINTS,
    ETCD_USER,
    ETCD_PASSWORD,
    CLUSTER_NAME,
    ETCD_TIMEOUT,
]
