"""Property keys owned by the metadata tiers."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey

STATUS_CACHE_SIZE: PropertyKey[int] = PropertyKey(
    "dora.worker.ufs.file.status.cache.size",
    KeyType.INT,
    "100000",
    "Maximum number of file statuses kept in memory.",
    alias="alluxio.dora.ufs.file.status.cache.size",
    minimum=1,
)
STATUS_CACHE_TTL: PropertyKey[int] = PropertyKey(
    "dora.worker.ufs.file.status.cache.ttl",
    KeyType.DURATION,
    "1h",
    "How long a status stays in memory.",
    alias="alluxio.dora.ufs.file.status.cache.ttl",
    minimum=1,
)
LIST_CACHE_TTL: PropertyKey[int] = PropertyKey(
    "dora.worker.ufs.list.status.cache.ttl",
    KeyType.DURATION,
    "1h",
    "How long a cached directory listing lives.",
    alias="alluxio.dora.ufs.list.status.cache.ttl",
    minimum=1,
)
LIST_CACHE_DIRS: PropertyKey[int] = PropertyKey(
    "dora.worker.ufs.list.status.cache.nr.dirs",
    KeyType.INT,
    "1000",
    "Maximum number of cached directory listings.",
    alias="alluxio.dora.ufs.list.status.cache.nr.dirs",
    minimum=1,
)
NEGATIVE_CACHE_TTL: PropertyKey[int] = PropertyKey(
    "dora.worker.ufs.negative.cache.ttl",
    KeyType.DURATION,
    "10s",
    "How long a not-found answer is remembered. A cached listing of the parent also answers "
    "not found for a name it lacks, for the listing's own life.",
    minimum=0,
)
METASTORE_DIR: PropertyKey[str] = PropertyKey(
    "dora.worker.metastore.rocksdb.dir",
    KeyType.STRING,
    "",
    "RocksDB metastore directory (empty: <work dir>/metastore).",
)
METASTORE_TTL: PropertyKey[int] = PropertyKey(
    "dora.worker.metastore.rocksdb.ttl",
    KeyType.DURATION,
    "24h",
    "How long a persisted status lives.",
    alias="alluxio.dora.worker.metastore.rocksdb.ttl",
    minimum=1,
)
METASTORE_RECOVER: PropertyKey[str] = PropertyKey(
    "dora.worker.metastore.rocksdb.recover",
    KeyType.STRING,
    "wipe",
    "What to do when the metastore cannot be opened: wipe it and start cold, or fail.",
    choices=("wipe", "fail"),
)
METASTORE_FLUSH_INTERVAL: PropertyKey[int] = PropertyKey(
    "dora.worker.metastore.flush.interval",
    KeyType.DURATION,
    "100ms",
    "How often the flusher commits buffered metastore writes.",
    minimum=1,
)

KEYS: list[PropertyKey[Any]] = [
    STATUS_CACHE_SIZE,
    STATUS_CACHE_TTL,
    LIST_CACHE_TTL,
    LIST_CACHE_DIRS,
    NEGATIVE_CACHE_TTL,
    METASTORE_DIR,
    METASTORE_TTL,
    METASTORE_RECOVER,
    METASTORE_FLUSH_INTERVAL,
]
