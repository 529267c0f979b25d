"""The worker's ASGI app: the surfaces over one :class:`WorkerService`, mounted in one place
(:data:`SURFACES`), with what every route shares put around them once:

- the token check (when ``dora.worker.security.token`` is set): one middleware covering every
  path but the probes ``/healthz`` and ``/readyz`` and a surface's own ``open_paths`` — unknown
  paths and ``/openapi.json`` included;
- error answers: an exception a route raises is looked up in the error catalogue
  (``worker.common.errors``) and written in the shape of the surface that owns the path; an unknown
  exception is a bug, logged and answered 500 without internals; unknown paths and methods get
  the catalogue's NoSuchRoute / MethodNotAllowed;
- errors raised after an answer started cut the body short with a one-line log
  (:class:`CutShort`);
- request latency and error metrics;
- the access log (``dora.worker.http.access.log``), outermost, so refusals are logged too.
"""

from __future__ import annotations

import hmac
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import FastAPI, Security
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route as StarletteRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from config import Config
from worker import keys
from worker.api import alluxio, console, events, numbers, rest_v1, webhdfs
from worker.api.access import AccessLog
from worker.api.contract import UNAUTHORIZED
from worker.api.keys import (
    ACCESS_LOG,
    BODY_IDLE_TIMEOUT,
    BODY_MIN_RATE,
    BODY_MIN_RATE_GRACE,
    MAX_UPLOADS,
)
from worker.api.limits import BodyLimits, BodyPace, UploadGauge
from worker.api.params import Lean
from worker.api.s3 import routing as s3
from worker.api.surface import Route, Surface
from worker.common import errors as catalogue
from worker.metrics import Metrics
from worker.service import WorkerService
from worker.tls import keys as tls_keys
from worker.tls.clientcert import ClientCertCheck

log = logging.getLogger(__name__)

SURFACES: tuple[Surface, ...] = (
    rest_v1.SURFACE,
    alluxio.SURFACE,
    webhdfs.SURFACE,
    events.SURFACE,
    console.SURFACE,
    s3.SURFACE,
)
"""Every surface the worker serves. A new protocol is one more entry here."""

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
"""Paths answered without a token: orchestrators probe them with no credentials."""


def create_app(service: WorkerService, surfaces: tuple[Surface, ...] = SURFACES) -> FastAPI:
    """The ASGI app serving ``surfaces`` over ``service``."""
    app = FastAPI(
        title="doracache worker",
        version="1",
        docs_url="/docs",
        redoc_url=None,
        exception_handlers={
            HTTPException: _unrouted(surfaces, service.metrics),
            RequestValidationError: _invalid(surfaces, service.metrics),
        },
    )
    token = (service.config.get(keys.TOKEN) or "").encode()
    lean_routes = 0
    for surface in surfaces:
        target = service if surface.bind is None else surface.bind(service)
        for route in surface.routes:
            declared = dict(route.declared)
            if token and route.path not in OPEN_PATHS and not surface.own_credentials:
                declared["dependencies"] = [Security(surface.scheme)]
                declared["responses"] = {**declared.get("responses", {}), **UNAUTHORIZED}
            if route.lean is not None:
                # In front of every declared route: a request matches it without trying the
                # others in turn, and the declared one is only the document.
                endpoint = _lean(service, surface, route, target, route.lean)
                plain = StarletteRoute(route.path, endpoint, include_in_schema=False)
                plain.methods = {route.method}  # Starlette would add HEAD to GET; FastAPI does not
                app.router.routes.insert(lean_routes, plain)
                lean_routes += 1
            handle = _guarded(service, surface, route, target)
            app.add_api_route(
                route.path, handle, methods=[route.method], tags=[surface.name], **declared
            )
    app.openapi = lambda: _contract(app)  # type: ignore[method-assign]
    _limit_bodies(app, service, surfaces)  # inside the token check: refused callers take no place
    app.add_middleware(CutShort)
    if token:
        app.add_middleware(TokenCheck, token=token, surfaces=surfaces, metrics=service.metrics)
    if service.config.get(tls_keys.WORKER_CLIENT_CA):
        app.add_middleware(ClientCertCheck, refuse=_refuser(surfaces, service.metrics))
    if service.config.get(ACCESS_LOG):
        app.add_middleware(AccessLog)  # outermost: refused requests are logged too
    return app


def _limit_bodies(app: FastAPI, service: WorkerService, surfaces: tuple[Surface, ...]) -> None:
    metrics = service.metrics
    metrics.uploads_in_flight.set(0)

    answer = _refuser(surfaces, metrics)

    def refuse(scope: Scope, exc: Exception) -> ASGIApp:
        if isinstance(exc, catalogue.WorkerBusy):
            metrics.uploads_refused.inc()
        return answer(scope, exc)

    app.add_middleware(
        BodyLimits,
        uploads=UploadGauge(service.config.get(MAX_UPLOADS), metrics.uploads_in_flight.set),
        pace=body_pace(service.config),
        refuse=refuse,
        timed_out=lambda phase: metrics.idle_timeouts.labels(phase).inc(),
    )


def body_pace(config: Config) -> BodyPace:
    """How slow a request body may come, as ``config`` says (every surface's app uses it)."""
    return BodyPace(
        idle=config.get(BODY_IDLE_TIMEOUT) / 1000,
        min_rate=config.get(BODY_MIN_RATE),
        grace=config.get(BODY_MIN_RATE_GRACE) / 1000,
    )


def _refuser(
    surfaces: tuple[Surface, ...], metrics: Metrics
) -> Callable[[Scope, Exception], ASGIApp]:
    """What answers a request refused before any route: ``exc`` in its path's surface shape."""
    return lambda scope, exc: _answer_error(owner(surfaces, scope["path"]), exc, metrics)


def owner(surfaces: tuple[Surface, ...], path: str) -> Surface:
    """The surface whose prefix is the longest one matching ``path`` (the first on a tie)."""
    matching = [s for s in surfaces if path.startswith(s.prefix)] or list(surfaces)
    return max(matching, key=lambda s: len(s.prefix))


def _answer_error(surface: Surface, exc: BaseException, metrics: Metrics) -> Response:
    if isinstance(exc, ClientDisconnect):
        # Not a bug: the client went away mid-body. The answer goes nowhere.
        exc = catalogue.InvalidRequest("the client closed the connection before its body ended")
    kind = catalogue.kind_of(exc)
    if kind is None:
        log.exception("unexpected error", exc_info=exc)
        kind, message = catalogue.INTERNAL, f"internal error: {type(exc).__name__}"
    else:
        message = str(exc)
    metrics.error_answered(kind.code, message)
    return surface.render_error(kind, message, catalogue.headers_for(exc))


def _guarded(
    service: WorkerService, surface: Surface, route: Route, target: Any
) -> Callable[..., Awaitable[Response]]:
    """The route's handler with ``target`` given (the service, or what the surface binds to
    it), error answers and latency metrics around it. It keeps the handler's other
    parameters, so FastAPI declares and parses them."""
    latency = service.metrics.request_latency.labels(route.path)
    handler = route.handler

    async def handle(**declared: Any) -> Response:
        return await _answered(
            service.metrics, surface, latency, lambda: handler(target, **declared)
        )

    handle.__name__ = handler.__name__  # FastAPI names the operation after it
    signature = inspect.signature(handler, eval_str=True)
    handle.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=list(signature.parameters.values())[1:]
    )
    return handle


def _lean(
    service: WorkerService, surface: Surface, route: Route, target: Any, lean: Lean
) -> Callable[[Request], Awaitable[Response]]:
    """The route's handler as a plain Starlette endpoint: ``lean`` parses its
    parameters; the same error answers and latency metrics as :func:`_guarded`. The token is
    the middleware's to check (the declared route's security dependency only documents it)."""
    latency = service.metrics.request_latency.labels(route.path)
    handler = route.handler

    async def endpoint(request: Request) -> Response:
        return await _answered(
            service.metrics, surface, latency, lambda: handler(target, **lean(request))
        )

    return endpoint


async def _answered(
    metrics: Metrics, surface: Surface, latency: Any, call: Callable[[], Awaitable[Response]]
) -> Response:
    """What ``call`` answers, or its error in the surface's shape; its time into ``latency``."""
    started = time.perf_counter()
    try:
        response = await call()
    except Exception as exc:  # noqa: BLE001 — every error becomes an answer; bugs are logged
        response = _answer_error(surface, exc, metrics)
    latency.observe(time.perf_counter() - started)
    return response


def _contract(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, built once. A request breaking a declared rule is answered 400
    in the error shape (:func:`_invalid`), so FastAPI's generic 422 answer is left out."""
    if app.openapi_schema is None:
        document = get_openapi(title=app.title, version=app.version, routes=app.routes)
        for operations in document.get("paths", {}).values():
            for operation in operations.values():
                _errors_are_json(operation.get("responses", {}))
        schemas = document.get("components", {}).get("schemas", {})
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        app.openapi_schema = document
    return app.openapi_schema


def _errors_are_json(responses: dict[str, Any]) -> None:
    """Error answers are JSON whatever the route's success answers are (FastAPI documents a
    route's extra answers in its response class's media type: bytes for /v1/read); no 422."""
    responses.pop("422", None)
    for status, answer in responses.items():
        content = answer.get("content")
        if status[0] in "45" and content and "application/json" not in content:
            answer["content"] = {"application/json": next(iter(content.values()))}


def _invalid(
    surfaces: tuple[Surface, ...], metrics: Metrics
) -> Callable[[Request, RequestValidationError], Coroutine[Any, Any, Response]]:
    """The answer to a request that breaks a declared parameter's rule: BadRequest naming it."""

    async def handle(request: Request, exc: RequestValidationError) -> Response:
        kind = catalogue.kind_for_code("BadRequest")
        message = "; ".join(_broken_rule(error) for error in exc.errors())
        metrics.error_answered(kind.code, message)
        return owner(surfaces, request.url.path).render_error(kind, message, {})

    return handle


def _broken_rule(error: Any) -> str:
    """One validation error as the parameter it names and what was expected."""
    where, name = (error["loc"][0], str(error["loc"][-1])) if error["loc"] else ("", "")
    what = "header" if where == "header" else "query parameter"
    given = error.get("input")
    if error["type"] == "missing" or given == "":
        return f"missing {what} {name!r}"
    cause = error.get("ctx", {}).get("error")
    expected = str(cause) if isinstance(cause, ValueError) else error["msg"]
    shown = numbers.shown(given) if isinstance(given, str) else repr(given)
    return f"{what} {name}={shown}: {expected}"


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
        metrics.error_answered(kind.code, message)
        return owner(surfaces, request.url.path).render_error(kind, message, headers)

    return handle


class CutShort:
    """Pure ASGI middleware for errors raised once an answer has started (a file that changed
    under a stream pinned to its version, a UFS that failed mid-body): they can no longer be
    answered, and the server closes the connection short of the Content-Length, so the client
    sees a cut body, never mixed bytes. A catalogued error is the UFS's doing, not a bug: it is
    logged as one line, and only an unknown one keeps its traceback. (Errors raised before an
    answer started never get here: each route answers them.) Stateless."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except Exception as exc:
            if catalogue.kind_of(exc) is None:
                raise
            log.warning("%s %s: answer cut short: %s", scope.get("method"), scope["path"], exc)


class TokenCheck:
    """Pure ASGI middleware: a request to any path but :data:`OPEN_PATHS` and the surfaces'
    ``open_paths`` must carry the token
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
        self._open = OPEN_PATHS.union(*(surface.open_paths for surface in surfaces))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._open:
            await self.app(scope, receive, send)
            return
        surface = owner(self._surfaces, scope["path"])
        if surface.own_credentials:
            await self.app(scope, receive, send)
            return
        given = surface.credential(scope)
        if given is not None and hmac.compare_digest(given, self._token):
            await self.app(scope, receive, send)
            return
        refused = catalogue.Unauthorized(f"missing or wrong token ({surface.credential_hint})")
        await _answer_error(surface, refused, self._metrics)(scope, receive, send)
