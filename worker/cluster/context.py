"""Where a request's own feed revision goes: from the publisher to the request's answer.

A change this worker publishes, or a sync that finds a change (the metadata manager's sync
listener, deep in a lookup), gets a feed revision that the request's answer must name
(``worker.cluster.http``). The publisher is called from inside the service with no request at
hand, so the revision middleware makes the request's :class:`~worker.request.Exchange`
current in a context variable (Starlette copies the context into the thread the request's
blocking work runs in; the exchange is shared, not copied, so what the thread writes the
middleware reads). This is write-only: no request reads its state from here; a surface reads
the exchange from the ASGI scope (``worker.request.exchange``).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the client imports REVISION_HEADER from here: no server module at run time
    from worker.request import Exchange

REVISION_HEADER = "X-Dora-Revision"

_CURRENT: ContextVar[Exchange | None] = ContextVar("dora_cluster_request", default=None)


def enter(exchange: Exchange) -> object:
    """Make ``exchange`` the current request's; returns the token :func:`leave` takes."""
    return _CURRENT.set(exchange)


def leave(token: object) -> None:
    _CURRENT.reset(token)  # type: ignore[arg-type]


def observed(revision: int) -> None:
    """The current request's answer depends on feed revision ``revision``."""
    exchange = _CURRENT.get()
    if exchange is not None and revision > exchange.revision:
        exchange.revision = revision
