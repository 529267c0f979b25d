"""Property keys owned by the worker service and its clients, and the registry of every key."""

from __future__ import annotations

from typing import Any

import config.core_keys
import pagestore.keys
import ufs.keys
from config.keys import KeyType, PropertyKey, Registry
from worker import logs, pathconf, pathrules
from worker.api import alluxio_keys
from worker.api import keys as api_keys
from worker.api.s3 import keys as s3_keys
from worker.cluster import keys as cluster_keys
from worker.feeds import keys as feed_keys
from worker.load import keys as load_keys
from worker.meta import keys as meta_keys
from worker.tls import keys as tls_keys

BIND_HOST: PropertyKey[str] = PropertyKey(
    "dora.worker.http.bind.host", KeyType.STRING, "127.0.0.1", "Address the REST API listens on."
)
BIND_PORT: PropertyKey[int] = PropertyKey(
    "dora.worker.http.port",
    KeyType.INT,
    "28080",
    "Port the REST API listens on (0: any free).",
    minimum=0,
    maximum=65535,
)
TOKEN: PropertyKey[str | None] = PropertyKey(
    "dora.worker.security.token",
    KeyType.STRING,
    None,
    "Bearer token every call but /healthz must carry (empty: no token needed).",
    secret=True,
)
AUDIT_LOG: PropertyKey[bool] = PropertyKey(
    "dora.worker.audit.log",
    KeyType.BOOL,
    "false",
    "Log one line per mutation made through the worker (caller, client address, operation, "
    "source, destination; allowed, or why not) to worker.audit, as HDFS's hdfs-audit.log. Off "
    "by default, as stock Hadoop sends its audit logger to a NullAppender.",
)
MAX_WRITE_SIZE: PropertyKey[int] = PropertyKey(
    "dora.worker.http.max.write.size",
    KeyType.SIZE,
    "5GB",
    "Largest request body /v1/write accepts.",
    minimum=0,
)
CACHE_INCLUDE: PropertyKey[list[str]] = PropertyKey(
    "dora.worker.cache.include",
    KeyType.LIST,
    "",
    "Glob patterns of URIs to cache (empty: all); others are served pass-through.",
)
CACHE_EXCLUDE: PropertyKey[list[str]] = PropertyKey(
    "dora.worker.cache.exclude",
    KeyType.LIST,
    "",
    "Glob patterns of URIs never cached; they are served pass-through.",
)
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

KEYS: list[PropertyKey[Any]] = [
    BIND_HOST,
    BIND_PORT,
    TOKEN,
    MAX_WRITE_SIZE,
    CACHE_INCLUDE,
    CACHE_EXCLUDE,
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
    api_keys.ACCESS_LOG,
    AUDIT_LOG,
    logs.LOG_FORMAT,
]


def build_registry() -> Registry:
    """Every key of every component, in one registry that rejects duplicates."""
    registry = Registry()
    for component in (
        config.core_keys.KEYS,
        ufs.keys.KEYS,
        pagestore.keys.KEYS,
        meta_keys.KEYS,
        load_keys.KEYS,
        cluster_keys.KEYS,
        feed_keys.KEYS,
        alluxio_keys.KEYS,
        s3_keys.KEYS,
        tls_keys.KEYS,
    ):
        registry.extend(component)
    return (
        registry.extend(KEYS).extend(pathconf.KEYS).extend(pathrules.KEYS).extend(api_keys.LIMITS)
    )
