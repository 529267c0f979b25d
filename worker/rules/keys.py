"""The property keys the rules model reads rules from (the rules file is the full form); the
client's keys it also reads (the sync interval, serve-stale, the read type) are in
:mod:`worker.common.client_keys`."""

from __future__ import annotations

from typing import Any

from config import KeyType, PropertyKey

PATH_CONF: PropertyKey[list[str]] = PropertyKey(
    "dora.worker.path.conf",
    KeyType.LIST,
    "",
    "Per-path properties (Alluxio's fs pathConf), comma-separated rules "
    "'<uri prefix> <key>=<value> ...' for dora.user.file.metadata.sync.interval and "
    "dora.user.file.readtype.default; the longest matching prefix wins, per-call options win "
    "over it. Shown by `dora conf paths`.",
)
RULES_FILE: PropertyKey[str | None] = PropertyKey(
    "dora.worker.path.rules.file",
    KeyType.STRING,
    None,
    "A file of path rules '<pattern> <directive>...' (immutable, max-age=, serve-stale, "
    "admission=, window=, pin, ttl=, quota=), one per line, and 'caller:<identity> quota=<size>' "
    "lines (a client certificate's identity, mutual TLS); per directive the first matching "
    "line wins, and the file wins over the other rule sources. Re-read when it changes.",
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
TTL_CHECK_INTERVAL: PropertyKey[int] = PropertyKey(
    "dora.worker.ttl.check.interval",
    KeyType.DURATION,
    "10s",
    "How often the worker frees the files whose rule's ttl has run out since they were loaded.",
    minimum=1,
)
KEYS: list[PropertyKey[Any]] = [
    PATH_CONF,
    RULES_FILE,
    CACHE_INCLUDE,
    CACHE_EXCLUDE,
    TTL_CHECK_INTERVAL,
]
