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
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from config import Config
from worker import pathconf
from worker.meta.entry import stricter
from worker.meta.keys import SYNC_INTERVAL


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
    by it) and ``cache`` (False: a per-path rule serves reads pass-through). Immutable."""

    sync_interval: int
    source: Source
    path_interval: int
    cache: bool


def resolve(
    config: Config, uri: str, given: int | None = None, *, must_sync: bool = False
) -> Freshness:
    """The freshness of a request for canonical ``uri`` (``ufs.uri.normalize``): ``given`` is
    its per-call sync interval (None: it sent none), ``must_sync`` that its client saw a feed
    revision this worker has not applied.

    Raises ConfigError for a bad rule table."""
    settings = pathconf.settings(config, uri)
    path_interval: int = (
        config.get(SYNC_INTERVAL) if settings.sync_interval is None else settings.sync_interval
    )
    if must_sync:
        return Freshness(0, Source.REVISION, path_interval, settings.cache)
    if given is not None:
        return Freshness(given, Source.CALL, path_interval, settings.cache)
    source = Source.DEFAULT if settings.sync_interval is None else Source.RULE
    return Freshness(path_interval, source, path_interval, settings.cache)


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
