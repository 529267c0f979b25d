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
