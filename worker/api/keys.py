"""Property keys of the HTTP surfaces that the key registry lists: a module of declarations
only, so that a client building the registry imports no server code (Starlette, the read path)."""

from __future__ import annotations

from config.keys import KeyType, PropertyKey

ACCESS_LOG: PropertyKey[bool] = PropertyKey(
    "dora.worker.http.access.log",
    KeyType.BOOL,
    "false",
    "Log one line per request (method, path, status, bytes, duration, cache outcome) to "
    "worker.access.",
)

HEAD_TIMEOUT: PropertyKey[int] = PropertyKey(
    "dora.worker.http.head.timeout",
    KeyType.DURATION,
    "20s",
    "Time a client has to send a whole request head, from the connection opening (or, on a "
    "kept-alive connection, from the head's first byte); past it the connection is closed.",
    minimum=1,
)
BODY_IDLE_TIMEOUT: PropertyKey[int] = PropertyKey(
    "dora.worker.http.body.idle.timeout",
    KeyType.DURATION,
    "30s",
    "Longest pause in a request body the worker waits out while reading it; past it the "
    "request is answered 408 and the connection closed.",
    minimum=1,
)
BODY_MIN_RATE: PropertyKey[int] = PropertyKey(
    "dora.worker.http.body.min.rate",
    KeyType.SIZE,
    "1KB",
    "Slowest request body the worker waits for, in bytes a second (as Apache's "
    "mod_reqtimeout MinRate): reading a body may take the grace period plus a second per this "
    "many bytes received; past it the request is answered 408 and the connection closed. 0 "
    "turns the rule off (the idle timeout still applies).",
    minimum=0,
)
BODY_MIN_RATE_GRACE: PropertyKey[int] = PropertyKey(
    "dora.worker.http.body.min.rate.grace",
    KeyType.DURATION,
    "20s",
    "Time a request body may take before dora.worker.http.body.min.rate starts to count "
    "against it (a client's first bytes and a slow start).",
    minimum=0,
)
MAX_UPLOADS: PropertyKey[int] = PropertyKey(
    "dora.worker.http.max.concurrent.uploads",
    KeyType.INT,
    "32",
    "Requests with a body (writes, WebHDFS CREATE, Alluxio page writes) served at once; one "
    "more is answered 503 with Retry-After.",
    minimum=1,
)
LIMITS = [HEAD_TIMEOUT, BODY_IDLE_TIMEOUT, BODY_MIN_RATE, BODY_MIN_RATE_GRACE, MAX_UPLOADS]
"""The slow-client limits (``worker.api.limits``, ``worker.httpproto``)."""
