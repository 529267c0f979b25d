"""The worker's ASGI app: the surfaces over one :class:`WorkerService`, mounted in one place
(:data:`SURFACES`), with what every route shares put around them once:

- the token check (when ``dora.worker.security.token`` is set): one middleware covering every
  path but the probes ``/healthz`` and ``/readyz`` — unknown paths and ``/openapi.json``
  included;
- error answers: an exception a route raises is looked up in the error catalogue
  (``worker.errors``) and written in the shape of the surface that owns the path; an unknown
  exception is a bug, logged and answered 500 without internals; unknown paths and methods get
  the catalogue's NoSuchRoute / MethodNotAllowed;
- request latency and error metrics;
- the access log (``dora.worker.http.access.log``), outermost, so refusals are logged too.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from worker import errors as catalogue
from worker import keys
from worker.api import alluxio, rest_v1
from worker.api.access import ACCESS_LOG, AccessLog
from worker.api.surface import Handler, Surface
from worker.metrics import Metrics
from worker.service import WorkerService

log = logging.getLogger(__name__)

SURFACES: tuple[Surface, ...] = (rest_v1.SURFACE, alluxio.SURFACE)
"""Every surface the worker serves. A new protocol is one more entry here."""

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
"""Paths answered without a token: orchestrators probe them with no credentials."""


def create_app(service: WorkerService, surfaces: tuple[Surface, ...] = SURFACES) -> FastAPI:
    """The ASGI app serving ``surfaces`` over ``service``."""
    app = FastAPI(
        title="doracache worker",
        version="1",
        docs_url=None,
        redoc_url=None,
        exception_handlers={HTTPException: _unrouted(surfaces, service.metrics)},
    )
    for surface in surfaces:
        for route in surface.routes:
            handle = _guarded(service, surface, route.path, route.handler)
            app.add_api_route(route.path, handle, methods=[route.method])
    token = (service.config.get(keys.TOKEN) or "").encode()
    if token:
        app.add_middleware(TokenCheck, token=token, surfaces=surfaces, metrics=service.metrics)
    if service.config.get(ACCESS_LOG):
        app.add_middleware(AccessLog)  # outermost: refused requests are logged too
    return app


def owner(surfaces: tuple[Surface, ...], path: str) -> Surface:
    """The surface whose prefix is the longest one matching ``path`` (the first on a tie)."""
    matching = [s for s in surfaces if path.startswith(s.prefix)] or list(surfaces)
    return max(matching, key=lambda s: len(s.prefix))


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
    service: WorkerService, surface: Surface, path: str, handler: Handler
) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` with error answers and latency metrics around it."""
    metrics = service.metrics

    async def handle(request: Request) -> Response:
        started = time.perf_counter()
        try:
            response = await handler(service, request)
        except Exception as exc:  # noqa: BLE001 — every error becomes an answer; bugs are logged
            response = _answer_error(surface, exc, metrics)
        metrics.request_latency.labels(path).observe(time.perf_counter() - started)
        return response

    return handle


def _unrouted(
    surfaces: tuple[Surface, ...], metrics: Metrics
) -> Callable[[Request, HTTPException], Coroutine[Any, Any, Response]]:
    """The answer when no route matches the path (404) or the method (405)."""

    async def handle(request: Request, exc: HTTPException) -> Response:
        what = f"{request.method} {request.url.path}"
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            kind = catalogue.kind_for_code("MethodNotAllowed")
            message = f"{what}: method not allowed; allowed: {headers.get('Allow', '')}"
        else:
            kind = catalogue.kind_for_code("NoSuchRoute")
            message = f"{what}: no such route"
        metrics.errors.labels(kind.code).inc()
        return owner(surfaces, request.url.path).render_error(kind, message, headers)

    return handle


class TokenCheck:
    """Pure ASGI middleware: a request to any path but :data:`OPEN_PATHS` must carry the token
    the way the surface owning its path takes credentials (:attr:`Surface.credential`; a
    bearer header by default), else it is answered 401 in that surface's shape. Stateless, so
    safe for concurrent requests."""

    def __init__(
        self, app: ASGIApp, token: bytes, surfaces: tuple[Surface, ...], metrics: Metrics
    ) -> None:
        self.app = app
        self._token = token
        self._surfaces = surfaces
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        surface = owner(self._surfaces, scope["path"])
        given = surface.credential(scope)
        if given is not None and hmac.compare_digest(given, self._token):
            await self.app(scope, receive, send)
            return
        refused = catalogue.Unauthorized(f"missing or wrong token ({surface.credential_hint})")
        await _answer_error(surface, refused, self._metrics)(scope, receive, send)
