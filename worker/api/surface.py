"""What a surface is: a set of routes speaking one protocol over the one :class:`WorkerService`,
and how that protocol writes an error. The app assembly (``worker.api.app``) mounts surfaces and
puts the token check, error answers and request metrics around every route, so a surface is
only a thin adapter: parse the request, call the service, shape the answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi.security import HTTPBearer
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from worker.api.caller import caller_of
from worker.api.params import Lean
from worker.common.deadlines import TIMEOUT_HEADER, request_deadline
from worker.common.errors import ErrorKind
from worker.request import RequestContext, exchange
from worker.service import WorkerService
from worker.tls.clientcert import subject_name

Handler = Callable[..., Awaitable[Response]]
"""A route: the service (or what the surface's ``bind`` made of it) in, the answer out; errors
are raised, not answered. Its other parameters are FastAPI's: the ``Request``, or declared
query parameters and headers."""

ErrorRenderer = Callable[[ErrorKind, str, dict[str, str]], Response]
"""How a surface answers an error: the catalogue's kind, a message, extra headers."""

Credential = Callable[[Scope], bytes | None]
"""The token a request carries, the way a surface's clients send it (None: none)."""


def context(
    service: WorkerService,
    request: Request,
    uri: str,
    sync_interval: int | None = None,
    version: str | None = None,
    serve_stale: bool | None = None,
) -> RequestContext:
    """The one context of a call to ``uri`` that ``request`` makes (``WorkerService.request``),
    with the request's exchange, caller and deadline (its ``X-Dora-Timeout-Ms``, counted from
    now: a surface that reads a body first renews it after, ``RequestContext.renewed``): what
    every surface passes to the service's operations. Raises InvalidRequest for a malformed
    deadline header."""
    call = exchange(request.scope)
    deadline = request_deadline(request.headers.get(TIMEOUT_HEADER))
    return service.request(
        uri,
        sync_interval,
        version,
        call,
        serve_stale,
        caller_of(request),
        deadline,
        identity=subject_name(request.scope),
    )


def bearer_token(scope: Scope) -> bytes | None:
    """The token of an ``Authorization: Bearer <token>`` header."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, given = value.partition(b" ")
            return given.strip() if scheme.lower() == b"bearer" else None
    return None


@dataclass(frozen=True)
class Route:
    """One route of a surface. ``declared`` are FastAPI's route options that make up its
    contract (``summary``, ``response_model``, ``responses``, ``response_class``,
    ``status_code``), passed to ``add_api_route`` as they are. With ``lean``, requests are
    served by a plain route that parses the declared parameters by hand, and the declared one
    only makes up the document: on a hot route FastAPI's per-request dependency solving and
    validation cost more than the work (``bench/RESULTS.md``, "REST contract")."""

    method: str
    path: str
    handler: Handler
    declared: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    lean: Lean | None = field(default=None, hash=False, compare=False)


@dataclass(frozen=True)
class Surface:
    """A protocol the worker speaks. ``prefix`` is the part of the URL space it owns: errors
    on paths under it that no route of it raised (a missing token, an unknown path) are written
    by its ``render_error`` too (the longest matching prefix wins), and when the worker has a
    token, requests under it must carry it as ``credential`` reads it (``credential_hint``
    says how, in the 401's message; ``scheme`` is how the OpenAPI document says it).
    ``open_paths`` are paths of it answered without the token because they check a credential
    of their own (WebHDFS's OAuth2 token grant checks its client secret); with
    ``own_credentials``, no path of it takes the token: its clients prove who they are in its
    own protocol (S3's signatures), which its routes check. ``bind`` makes what
    the routes take in place of the service, once, when the app is built (WebHDFS's namespace
    and ring over it); None: the routes take the service itself."""

    name: str
    prefix: str
    routes: tuple[Route, ...]
    render_error: ErrorRenderer
    credential: Credential = bearer_token
    credential_hint: str = "Authorization: Bearer <token>"
    open_paths: frozenset[str] = frozenset()
    own_credentials: bool = False
    bind: Callable[[WorkerService], Any] | None = None
    scheme: Callable[..., Any] = field(
        default_factory=lambda: HTTPBearer(
            auto_error=False, description="The worker's dora.worker.security.token."
        )
    )
