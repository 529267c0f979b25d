"""What one request knows about the feed, shared between the HTTP layer and the service.

The revision middleware (:mod:`worker.cluster.http`) opens a :class:`RequestState` per request;
the surface reads it once, resolving the request's freshness (must this call sync with the
UFS?), and the publisher writes to it (the revision of this request's own changes). A context
variable carries it into the thread the request's blocking work runs in (Starlette copies the
context into its thread pool), and the state object is shared, not copied, so what the thread
writes the middleware reads.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

REVISION_HEADER = "X-Dora-Revision"


@dataclass
class RequestState:
    """``must_sync``: the worker could not apply the revision the client named in time, so
    this request re-checks the UFS instead. ``revision``: the newest feed revision this
    request's answer depends on (its own changes' revision once published)."""

    must_sync: bool = False
    revision: int = 0


_CURRENT: ContextVar[RequestState | None] = ContextVar("dora_cluster_request", default=None)


def current() -> RequestState | None:
    return _CURRENT.get()


def enter(state: RequestState) -> object:
    """Make ``state`` the current request's; returns the token :func:`leave` takes."""
    return _CURRENT.set(state)


def leave(token: object) -> None:
    _CURRENT.reset(token)  # type: ignore[arg-type]


def must_sync() -> bool:
    """Whether the current request must re-check the UFS (``worker.freshness`` reads it once
    per request)."""
    state = _CURRENT.get()
    return state is not None and state.must_sync


def observed(revision: int) -> None:
    """This request's answer depends on feed revision ``revision``."""
    state = _CURRENT.get()
    if state is not None and revision > state.revision:
        state.revision = revision
