"""Property keys owned by the worker service, and the registry of every key, which the entry
points build (the worker, the ``dora`` command); the keys a client reads are in
:mod:`worker.common.client_keys`."""

from __future__ import annotations

from typing import Any

import config.core_keys
import pagestore.keys
import ufs.keys
from config.keys import KeyType, PropertyKey, Registry
from worker import logs, malloc, memtrace
from worker.api import alluxio_keys
from worker.api import keys as api_keys
from worker.api.s3 import keys as s3_keys
from worker.cluster import keys as cluster_keys
from worker.common import client_keys
from worker.feeds import keys as feed_keys
from worker.load import keys as load_keys
from worker.meta import keys as meta_keys
from worker.procs import keys as procs_keys
from worker.rules import keys as rules_keys
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

KEYS: list[PropertyKey[Any]] = [
    BIND_HOST,
    BIND_PORT,
    TOKEN,
    MAX_WRITE_SIZE,
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
        rules_keys.KEYS,
        client_keys.KEYS,
        procs_keys.KEYS,
        malloc.KEYS,
        memtrace.KEYS,
    ):
        registry.extend(component)
    return registry.extend(KEYS).extend(api_keys.LIMITS)
