"""The access log: one line per request, written when the answer is complete, to the
``worker.access`` logger: method, path (with query; credentials left out), status, body bytes
sent, duration, the caller where the surface verified one (the S3 endpoint's access key id;
never a signature), and for a read the cache outcome (``hit``: every byte from the page store,
``miss``: every byte from the UFS, ``partial``: both; ``-``: no file bytes). The caller's
address is a field of the record (a key of the JSON line), so bytes served can be split by the
host they went to. Switched by :data:`worker.api.keys.ACCESS_LOG`."""

from __future__ import annotations

import logging
import time
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.request import exchange

log = logging.getLogger("worker.access")

# Query parameters that carry a credential in some client's protocol, in lower case: never
# logged in any capitalisation or percent-encoding, since the surfaces' credential readers
# (``worker.api.webhdfs_errors.credential``) decode names the same way and ignore their case.
# S3's presigned URLs carry their signature and session token in the query.
SECRET_PARAMS = frozenset(
    {"token", "delegation", "access_token", "x-amz-signature", "x-amz-security-token"}
)


def loggable_path(scope: Scope) -> str:
    """The request's path and query, without any credential parameter."""
    query = scope.get("query_string", b"").decode("latin-1")
    if not query:
        return str(scope["path"])
    pairs = parse_qsl(query, keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if k.strip().lower() not in SECRET_PARAMS]
    return f"{scope['path']}?{urlencode(kept)}" if kept else str(scope["path"])


class AccessLog:
    """Pure ASGI middleware writing the access log. A request whose answer never started
    (the client went away) is logged with status 0. Stateless, so safe for concurrent
    requests."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status, sent = 0, 0

        async def counting(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, counting)
        finally:
            write(scope, status, sent, (time.perf_counter() - started) * 1000)


def write(scope: Scope, status: int, sent: int, millis: float) -> None:
    """The access-log line of the request ``scope``: its ``status``, the ``sent`` body bytes
    and its duration (also written by a front process, :mod:`worker.procs.front`, for the
    calls it answers itself)."""
    record = exchange(scope)
    path = loggable_path(scope)
    cache = outcome(record.served)
    log.info(
        "%s %s %d %dB %.1fms caller=%s cache=%s",
        scope["method"],
        path,
        status,
        sent,
        millis,
        record.caller,
        cache,
        extra={
            "method": scope["method"],
            "path": path,
            "status": status,
            "bytes": sent,
            "duration_ms": round(millis, 3),
            "cache": cache,
            "caller": record.caller,
            "client": (scope.get("client") or ("-",))[0],
        },
    )


def outcome(served: dict[str, int]) -> str:
    """``hit``, ``miss``, ``partial`` or ``-`` for a request's bytes by source."""
    cached, fetched = served.get("cache", 0), served.get("ufs", 0)
    if cached and fetched:
        return "partial"
    return "hit" if cached else "miss" if fetched else "-"
