"""A request's freshness, resolved once (DESIGN.md, "One request, one context").

How old a cached answer a request may get used to be decided in four places (the surface's
parameter, the per-path rules, the feed revision the client saw, the metadata default), and a
fast path that forgot one answered stale. Now :func:`resolve` is called once per request, when
the surface builds its context (``worker.request.context``), and the :class:`Freshness` it
gets goes down in that context; below it, nothing decides again.

The order, most specific first: the per-call option (``sync_interval``), else the longest
matching per-path rule (``dora.worker.path.conf``), else the configured default
(``dora.user.file.metadata.sync.interval``). Above all of them, a request whose client saw a
feed revision this worker has not applied re-checks the UFS (0): read-your-writes across
workers outranks even a caller's "never".

Serve-while-revalidate (``serve_stale``) is resolved in the same order: the per-call option
(``serve_stale``), else the first matching line of the rules file (``serve-stale``), else
``dora.user.file.metadata.sync.serve.stale``. The last two allow it only for calls that send no
``sync_interval`` of their own: one that does (a caller asking for the truth with 0, as a create
checks whether its file exists) gets a stale answer only if it says so. A request that must
sync never serves stale.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from config import Config
from worker import pathconf
from worker.common.client_keys import SERVE_STALE, SYNC_INTERVAL
from worker.common.sync import stricter


class Source(enum.Enum):
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
    by it), ``cache`` (False: a per-path rule serves reads pass-through) and ``serve_stale``
    (an expired status may be answered at once while one background re-check runs).
    Immutable."""

    sync_interval: int
    source: Source
    path_interval: int
    cache: bool
    serve_stale: bool = False


def resolve(
    config: Config,
    uri: str,
    given: int | None = None,
    *,
    must_sync: bool = False,
    serve_stale: bool | None = None,
) -> Freshness:
    """The freshness of a request for canonical ``uri`` (``ufs.uri.normalize``): ``given`` is
    its per-call sync interval (None: it sent none), ``must_sync`` that its client saw a feed
    revision this worker has not applied, ``serve_stale`` its per-call serve-while-revalidate
    option (None: it sent none).

    Raises ConfigError for a bad rule table."""
    settings = pathconf.settings(config, uri)
    path_interval: int = (
        config.get(SYNC_INTERVAL) if settings.sync_interval is None else settings.sync_interval
    )
    if must_sync:
        return Freshness(0, Source.REVISION, path_interval, settings.cache)
    if serve_stale is None:
        serve_stale = given is None and (settings.serve_stale or config.get(SERVE_STALE))
    if given is not None:
        return Freshness(given, Source.CALL, path_interval, settings.cache, serve_stale)
    source = Source.DEFAULT if settings.sync_interval is None else Source.RULE
    return Freshness(path_interval, source, path_interval, settings.cache, serve_stale)


def listed(config: Config, directory: Freshness, children: Sequence[str]) -> list[int]:
    """For each of ``children`` (canonical URIs) of a directory resolved as ``directory``, the
    stricter of the directory's ``path_interval`` and the child's own: a near-cache keeps a
    child's status from a listing by it, and the listing by the strictest. A child's own
    differs from its directory's only where a rule names the child itself (a rule deeper down
    matches neither), so only those are resolved again."""
    named = {
        rule.prefix for rule in pathconf.table(config).rules if rule.key.name == SYNC_INTERVAL.name
    }
    kept = directory.path_interval
    return [
        stricter(kept, resolve(config, child).path_interval) if child in named else kept
        for child in children
    ]
