"""Property keys owned by the under-storage adapter, and (last) those of every storage kind."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey
from ufs import kinds

ROOTS: PropertyKey[list[str]] = PropertyKey(
    "dora.worker.ufs.roots",
    KeyType.LIST,
    "",
    "Mount roots the worker may serve (full URIs, comma separated); anything else is refused. "
    "s3:// alone is the whole store dora.ufs.s3.endpoint names: every bucket in it.",
)
RETRY_ATTEMPTS: PropertyKey[int] = PropertyKey(
    "dora.ufs.retry.max.attempts",
    KeyType.INT,
    "3",
    "Attempts for a UFS call that fails because the UFS is unavailable.",
    minimum=1,
)
RETRY_BASE_DELAY: PropertyKey[int] = PropertyKey(
    "dora.ufs.retry.base.delay",
    KeyType.DURATION,
    "100ms",
    "First backoff between UFS retries; doubles each attempt.",
    minimum=0,
)
CONNECT_TIMEOUT: PropertyKey[int] = PropertyKey(
    "dora.ufs.connect.timeout", KeyType.DURATION, "5s", "Connect timeout for UFS calls.", minimum=1
)
READ_TIMEOUT: PropertyKey[int] = PropertyKey(
    "dora.ufs.read.timeout", KeyType.DURATION, "60s", "Read timeout for UFS calls.", minimum=1
)

CALL_DEADLINE: PropertyKey[int] = PropertyKey(
    "dora.ufs.call.deadline",
    KeyType.DURATION,
    "10s",
    "Longest a UFS call may take, retries included (a streamed write: longest without "
    "progress); past it the caller gets 503 with Retry-After.",
    minimum=1,
)

APPEND_REWRITE_MAX: PropertyKey[int] = PropertyKey(
    "dora.ufs.append.rewrite.max.size",
    KeyType.SIZE,
    "64MB",
    "Largest file an append may produce on an object store, which has no append: each "
    "append there reads the whole object and writes it back, pinned to the version read.",
    minimum=0,
    maximum=5 << 30,
)

KEYS: list[PropertyKey[Any]] = [
    ROOTS,
    RETRY_ATTEMPTS,
    RETRY_BASE_DELAY,
    CONNECT_TIMEOUT,
    READ_TIMEOUT,
    CALL_DEADLINE,
    APPEND_REWRITE_MAX,
    *kinds.keys(),
]
