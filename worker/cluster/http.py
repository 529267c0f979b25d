"""The HTTP side of the cross-worker guarantees: an ASGI middleware around the worker's app.

A client sends ``X-Dora-Revision: R``, the newest feed revision it has seen (its last write's,
or the last answer's). Before the request runs, the worker waits until it has applied R
(bounded by ``dora.cluster.read.wait``, without holding a thread); if it cannot, the request
re-checks the UFS instead (sync interval 0). Every answer carries ``X-Dora-Revision``: the
revision of the newest feed write it reflects, which the client sends on its next call to any
worker — read-your-writes and monotonic reads across workers. Only feed writes: etcd's own
revision also counts membership and position writes, which no follower waits on.

The revision of a change the request made or found reaches the answer through the request's
:class:`~worker.request.Exchange` (in the ASGI scope): the surface passes it down in the
request's context, and the service raises it (``RequestContext.observed``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from worker.cluster.follower import Follower
from worker.common.revision import REVISION_HEADER
from worker.request import exchange

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_HEADER = REVISION_HEADER.lower().encode()


class RevisionMiddleware:
    """Waits for the revision a request names and stamps answers with theirs. ``outcomes``
    counts the waits: ``applied`` (reached in time), ``synced`` (answered by a UFS re-check)."""

    def __init__(self, app: ASGIApp, follower: Follower, wait_s: float) -> None:
        self.app = app
        self.follower = follower
        self.wait_s = wait_s
        self.outcomes = {"applied": 0, "synced": 0}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            wanted = _wanted(scope)
        except ValueError as exc:
            await _bad_request(send, str(exc))
            return
        state = exchange(scope)
        if wanted > self.follower.applied:
            reached = await self.follower.wait_applied_async(wanted, self.wait_s)
            self.outcomes["applied" if reached else "synced"] += 1
            state.must_sync = not reached

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                # Only feed writes: a revision past the last one (membership, positions) would
                # make the next worker wait for an event that never comes.
                revision = max(state.revision, self.follower.feed_revision)
                headers = [*message.get("headers", []), (_HEADER, str(revision).encode())]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, stamped)


def _wanted(scope: Scope) -> int:
    for name, value in scope.get("headers", []):
        if name == _HEADER:
            text = value.decode("latin-1").strip()
            # ASCII digits only ("²" passes str.isdigit), and no more than an int64 has.
            if not (text.isascii() and text.isdigit() and len(text) <= 19):
                shown = text if len(text) <= 40 else text[:40] + "..."
                raise ValueError(
                    f"{REVISION_HEADER}: expected a non-negative integer, got {shown!r}"
                )
            return int(text)
    return 0


async def _bad_request(send: Send, message: str) -> None:
    body = json.dumps({"error": "BadRequest", "message": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 400,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
