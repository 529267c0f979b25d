"""A request's freshness, resolved once (DESIGN.md, "One request, one context").

How old a cached answer a request may get used to be decided in four places (the surface's
parameter, the per-path rules, the feed revision the client saw, the metadata default), and a
fast path that forgot one answered stale. Now :func:`resolve` is called once per request, when
the surface builds its context (``worker.request.context``), and the :class:`Freshness` it
gets goes down in that context; below it, nothing decides again.

The order, most specific first: the per-call option (``sync_interval``), else the path's
:class:`~worker.rules.model.Policy` (the first rule that sets a sync interval, in the rules
model's one precedence: ``worker.rules.ruleset``), else the configured default
(``dora.user.file.metadata.sync.interval``, which the policy carries). Above all of them, a
request whose client saw a feed revision this worker has not applied re-checks the UFS (0):
read-your-writes across workers outranks even a caller's "never".

Serve-while-revalidate (``serve_stale``) is resolved in the same order: the per-call option
(``serve_stale``), else the path's policy (a rule's ``serve-stale``, else
``dora.user.file.metadata.sync.serve.stale``). The policy allows it only for calls that send no
``sync_interval`` of their own: one that does (a caller asking for the truth with 0, as a create
checks whether its file exists) gets a stale answer only if it says so. A request that must
sync never serves stale.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from worker.common.sync import stricter
from worker.rules.live import Rules
from worker.rules.model import Policy


class IntervalSource(enum.Enum):
    """Where a request's sync interval came from."""

    CALL = "call"
    RULE = "rule"
    REVISION = "revision"
    DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class Freshness:
    """One request's freshness: ``sync_interval`` (ms; -1 never re-check, 0 always, N when
    older than N), where it came from, ``path_interval`` (what a call to this path without a
    ``sync_interval`` gets: the rule's, else the default; a same-host near-cache keeps answers
    by it) and ``serve_stale`` (an expired status may be answered at once while one background
    re-check runs). Immutable."""

    sync_interval: int
    source: IntervalSource
    path_interval: int
    serve_stale: bool = False


def resolve(
    policy: Policy,
    given: int | None = None,
    *,
    must_sync: bool = False,
    serve_stale: bool | None = None,
) -> Freshness:
    """The freshness of a request to a path whose rules resolved to ``policy``: ``given`` is
    its per-call sync interval (None: it sent none), ``must_sync`` that its client saw a feed
    revision this worker has not applied, ``serve_stale`` its per-call serve-while-revalidate
    option (None: it sent none)."""
    path_interval = policy.sync_interval
    if must_sync:
        return Freshness(0, IntervalSource.REVISION, path_interval)
    if serve_stale is None:
        serve_stale = given is None and policy.serve_stale
    if given is not None:
        return Freshness(given, IntervalSource.CALL, path_interval, serve_stale)
    source = IntervalSource.RULE if policy.sync_by_rule else IntervalSource.DEFAULT
    return Freshness(path_interval, source, path_interval, serve_stale)


def listed(rules: Rules, directory: Freshness, children: Sequence[str]) -> list[int]:
    """For each of ``children`` (canonical URIs) of a directory resolved as ``directory``, the
    stricter of the directory's ``path_interval`` and the child's own: a near-cache keeps a
    child's status from a listing by it, and the listing by the strictest. A child's own
    differs from its directory's only where a rule names the child itself or a glob sets
    intervals (a prefix rule deeper down matches neither), so only then is it resolved again."""
    kept = directory.path_interval
    current = rules.current()
    return [
        stricter(kept, current.resolve(child).sync_interval) if current.names(child) else kept
        for child in children
    ]
