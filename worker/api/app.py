"""The worker's ASGI app: the surfaces over one :class:`WorkerService`, mounted in one place
(:data:`SURFACES`), with what every route shares put around them once: the token check (when
``dora.worker.security.token`` is set; every route but the probes ``/healthz`` and ``/readyz``),
error answers (an exception a route raises is looked up in the error catalogue,
``worker.errors``, and written in its surface's shape; an unknown exception is a bug, logged and
answered 500 without internals) and request latency and error metrics.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Awaitable, Callable

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

from worker import errors as catalogue
from worker import keys
from worker.api import rest_v1
from worker.api.surface import Handler, Surface
from worker.metrics import Metrics
from worker.service import WorkerService

log = logging.getLogger(__name__)

SURFACES: tuple[Surface, ...] = (rest_v1.SURFACE,)
"""Every surface the worker serves. A new protocol is one more entry here."""

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
"""Paths answered without a token: orchestrators probe them with no credentials."""


def create_app(service: WorkerService, surfaces: tuple[Surface, ...] = SURFACES) -> FastAPI:
    """The ASGI app serving ``surfaces`` over ``service``."""
    app = FastAPI(title="doracache worker", version="1", docs_url=None, redoc_url=None)
    token = (service.config.get(keys.TOKEN) or "").encode()
    for surface in surfaces:
        for route in surface.routes:
            handle = _guarded(service, surface, route.path, route.handler, token)
            app.add_api_route(route.path, handle, methods=[route.method])
    return app


def _answer_error(surface: Surface, exc: BaseException, metrics: Metrics) -> Response:
    kind = catalogue.kind_of(exc)
    if kind is None:
        log.exception("unexpected error", exc_info=exc)
        kind, message = catalogue.INTERNAL, f"internal error: {type(exc).__name__}"
    else:
        message = str(exc)
    metrics.errors.labels(kind.code).inc()
    return surface.render_error(kind, message, catalogue.headers_for(exc))


def _guarded(
    service: WorkerService, surface: Surface, path: str, handler: Handler, token: bytes
) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` with the token check, error answers and latency metrics around it."""
    metrics = service.metrics

    async def handle(request: Request) -> Response:
        started = time.perf_counter()
        try:
            if token and path not in OPEN_PATHS:
                _check_token(request, token)
            response = await handler(service, request)
        except Exception as exc:  # noqa: BLE001 — every error becomes an answer; bugs are logged
            response = _answer_error(surface, exc, metrics)
        metrics.request_latency.labels(path).observe(time.perf_counter() - started)
        return response

    return handle


def _check_token(request: Request, token: bytes) -> None:
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token):
        raise catalogue.Unauthorized(
            "missing or wrong bearer token (Authorization: Bearer <token>)"
        )
