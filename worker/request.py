"""One request, one context (DESIGN.md): what a surface knows about a call, decided once.

A surface turns each call into a :class:`RequestContext` with :func:`context` (through
``WorkerService.request``) and passes it to the service's operations; nothing below decides
the request's URI or freshness again, and nothing reads per-request state from a module
global or a context variable to do it.

What the HTTP layer and the request's work tell each other lives in one :class:`Exchange` per
HTTP request, kept in the ASGI scope (:func:`exchange`) and reached by the work only through the
context it is given: the revision middleware (``worker.cluster.http``) says whether the call
must re-check the UFS, the reader counts the bytes it served for the access log, and the
service records the feed revision of the changes the call made or found
(:meth:`RequestContext.observed`), which the middleware puts on the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pagestore.quota import NO_CHARGE, Charge
from ufs import uri as uris
from ufs.deadline import Deadline
from worker.freshness import Freshness, resolve
from worker.rules.live import Rules
from worker.rules.model import Policy

SCOPE_KEY = "dora.exchange"
UNKNOWN_CALLER = "-"
"""The ``caller`` of a call whose surface cannot tell who made it."""


@dataclass(slots=True)
class Exchange:
    """One HTTP request's record, shared by the middlewares (on the event loop) and the
    request's work (in a thread). Each field has one writer: ``must_sync`` the revision
    middleware before the request runs (the worker could not apply the feed revision the
    client named in time, so this request re-checks the UFS); ``revision`` the request's work
    through :meth:`RequestContext.observed` (the newest feed revision the answer depends on:
    of a change it made, or one a sync of it found), or a call with no context (the change-feed
    webhook) through :meth:`observed`; ``served`` the reader (bytes served by source, ``cache``
    or ``ufs``, for the access log); ``caller`` the surface, once it has verified who made the
    request (the S3 endpoint: the access key id that signed it; ``-``: unknown), for the access
    log. ``client`` is the address the request came from (empty: unknown), set when the
    exchange is made."""

    must_sync: bool = False
    revision: int = 0
    served: dict[str, int] = field(default_factory=dict)
    client: str = ""
    caller: str = UNKNOWN_CALLER

    def count(self, source: str, n: int) -> None:
        self.served[source] = self.served.get(source, 0) + n

    def observed(self, revision: int | None) -> None:
        """The answer depends on feed revision ``revision`` (None: nothing was published):
        ``revision`` rises to it."""
        if revision is not None:
            self.revision = max(self.revision, revision)


def exchange(scope: Any) -> Exchange:
    """The :class:`Exchange` of the request whose ASGI scope is ``scope``, made on first use
    (whichever middleware, or the surface, comes first)."""
    found: Exchange | None = scope.get(SCOPE_KEY)
    if found is None:
        client = scope.get("client")
        found = scope[SCOPE_KEY] = Exchange(client=client[0] if client else "")
    return found


@dataclass(frozen=True, slots=True)
class RequestContext:
    """One call: ``uri`` in canonical form (the mount roots are checked by the operation that
    uses it, since for a local path that means looking at the disk), what the rules say for
    it (``policy``: admission, pinning, TTL, quota; ``worker.rules``), its :class:`Freshness`,
    the ``version`` it pins (None: the current one), the HTTP ``exchange`` it answers (None: a
    call from inside the worker, such as a load job), its ``caller``: who made it, as the
    surface could tell (``worker.api.caller``; ``-``: unknown), for the audit log, and its
    ``deadline``: how long the client waits for an answer (``worker.common.deadlines``; None: it
    did not say), which bounds the UFS calls made for it, their retries included; ``charge``
    is the quotas the pages it stores count against (its rule's, and its caller's when a client
    certificate proved who that is: ``worker.rules``). Immutable; the exchange is the one
    mutable part, written as :class:`Exchange` says."""

    uri: str
    policy: Policy
    fresh: Freshness
    version: str | None = None
    exchange: Exchange | None = None
    caller: str = UNKNOWN_CALLER
    deadline: Deadline | None = None
    charge: Charge = NO_CHARGE

    def renewed(self) -> RequestContext:
        """This call with its deadline counted again from now (itself without one): for
        work that starts once the client has sent its body, since a client's timeout counts
        from then. (A streamed read renews it per UFS fetch: ``Reader.chunks``'s ``wait``.)"""
        if self.deadline is None:
            return self
        return replace(self, deadline=self.deadline.restarted())

    def served(self, source: str, n: int) -> None:
        """``n`` bytes of the answer came from ``source`` (``cache`` or ``ufs``)."""
        if self.exchange is not None:
            self.exchange.count(source, n)

    def observed(self, revision: int | None) -> None:
        """The answer depends on feed revision ``revision`` (None: nothing was published, as
        without a cluster): the exchange's revision rises to it. A no-op without an exchange.
        With ``deadline``, satisfies ``worker.meta.listeners.LookupCall``."""
        if self.exchange is not None:
            self.exchange.observed(revision)


def context(
    rules: Rules,
    uri: str,
    sync_interval: int | None = None,
    version: str | None = None,
    exchange: Exchange | None = None,
    serve_stale: bool | None = None,
    caller: str = UNKNOWN_CALLER,
    deadline: Deadline | None = None,
    identity: str | None = None,
) -> RequestContext:
    """The context of a call to ``uri``: the URI normalised once, the ``rules`` resolved once
    into its policy, and its freshness from that (``worker.freshness.resolve``: the per-call
    ``sync_interval`` and ``serve_stale``, the path's rules, the feed revision the exchange
    says was not applied, the default). An empty
    ``version`` is none; ``caller`` is who made the call (``-``: unknown), ``deadline`` how
    long it waits for the answer (None: it did not say), ``identity`` who a client certificate
    proved the caller is (None: nothing proved it), whose quota the call's pages count against
    with the path's.

    Raises UfsInvalidPath for a malformed URI."""
    canonical = uris.normalize(uri)
    policy = rules.resolve(canonical)
    must_sync = exchange is not None and exchange.must_sync
    fresh = resolve(policy, sync_interval, must_sync=must_sync, serve_stale=serve_stale)
    quotas = (policy.quota, None if identity is None else rules.caller_quota(identity))
    charge = tuple(quota.account for quota in quotas if quota is not None)
    return RequestContext(
        canonical, policy, fresh, version or None, exchange, caller, deadline, charge
    )
