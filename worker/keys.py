"""Property keys owned by the worker service and its clients, and the registry of every key."""

from __future__ import annotations

from typing import Any

import config.core_keys
import pagestore.keys
import ufs.keys
from config.keys import KeyType, PropertyKey, Registry
from worker.meta import keys as meta_keys

BIND_HOST: PropertyKey[str] = PropertyKey(
    "dora.worker.http.bind.host", KeyType.STRING, "127.0.0.1", "Address the REST API listens on."
)
BIND_PORT: PropertyKey[int] = PropertyKey(
    "dora.worker.http.port",
    KeyType.INT,
    "28080",
    "Port the REST API listens on (0: any free).",
    minimum=0,
)
TOKEN: PropertyKey[str | None] = PropertyKey(
    "dora.worker.security.token",
    KeyType.STRING,
    None,
    "Bearer token every call but /healthz must carry (empty: no token needed).",
    secret=True,
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

KEYS: list[PropertyKey[Any]] = [
    BIND_HOST,
    BIND_PORT,
    TOKEN,
    MAX_WRITE_SIZE,
    CACHE_INCLUDE,
    CACHE_EXCLUDE,
    USER_WORKERS,
]


def build_registry() -> Registry:
    """Every key of every component, in one registry that rejects duplicates."""
    registry = Registry()
    for component in (config.core_keys.KEYS, ufs.keys.KEYS, pagestore.keys.KEYS, meta_keys.KEYS):
        registry.extend(component)
    return registry.extend(KEYS)
