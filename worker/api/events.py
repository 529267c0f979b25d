"""The change-feed webhook: ``POST /v1/events``, where a store (MinIO, Ceph RGW, SeaweedFS's
filer, an S3 → SNS relay) sends its object events (``worker.feeds.webhook`` reads them).

It answers only when ``dora.ufs.change.feeds`` names ``webhook``, and checks its own token,
``dora.ufs.change.webhook.token`` (a store is given that one, never the worker's own token, so
the route is open to the worker-wide token check). Bodies are bounded (:data:`MAX_BODY`). In a
cluster (etcd), what the events changed is published to the invalidation feed with the events'
own times, so the store needs to know one worker only, every worker measures the feed's lag, and
the answer names the feed revision (``X-Dora-Revision``) as every other change's does.
"""

from __future__ import annotations

import hmac

import orjson
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from worker.api import contract as c
from worker.api.body import spool_body
from worker.api.errors import error_response
from worker.api.jsonbody import json_response
from worker.api.surface import Route, Surface, bearer_token
from worker.common.errors import InvalidRequest, NotFound, Unauthorized
from worker.feeds.keys import FEEDS, WEBHOOK, WEBHOOK_TOKEN, feed_specs
from worker.feeds.webhook import changes_of
from worker.request import exchange
from worker.service import WorkerService

PATH = "/v1/events"
MAX_BODY = 4 << 20
"""Largest event body taken: S3 sends one record per message, MinIO and SeaweedFS one event
per request; a few MB leaves room for batching relays."""


class EventsTaken(BaseModel):
    changes: int = Field(description="Object changes the events named (applied at once).")


async def receive(service: WorkerService, request: Request) -> Response:
    config = service.config
    if not feed_specs(config).webhook:
        raise NotFound(f"the webhook feed is off: {FEEDS.name} does not name webhook")
    token = (config.get(WEBHOOK_TOKEN) or "").encode()
    given = bearer_token(request.scope)
    if given is None or not hmac.compare_digest(given, token):
        raise Unauthorized(f"missing or wrong token (Authorization: Bearer <{WEBHOOK_TOKEN.name}>)")
    with await spool_body(request, service.spool, MAX_BODY) as body:
        raw = body.read()
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"the event body is not JSON: {exc}") from None
    try:
        changes = changes_of(payload)
    except ValueError as exc:
        raise InvalidRequest(f"the event body is not an event: {exc}") from None

    # Only this worker hears the store: in a cluster, the etcd feed tells the others, as an
    # elected feed's consumer does (worker.feeds.elected.RepublishingSink). The answer names
    # the feed revision of the changes (X-Dora-Revision), as a write's does: a caller that
    # reads next from any worker sees them.
    revision = await run_in_threadpool(service.apply_changes, WEBHOOK, changes)
    exchange(request.scope).observed(revision)
    return json_response({"changes": len(changes)})


SURFACE = Surface(
    name="events",
    prefix=PATH,
    routes=(
        Route(
            "POST",
            PATH,
            receive,
            {
                "response_model": EventsTaken,
                "summary": "Object events from the UFS (S3 event notifications, SeaweedFS)",
                "responses": c.errors(400, 401, 404, 413),
            },
        ),
    ),
    render_error=error_response,
    open_paths=frozenset({PATH}),
)
