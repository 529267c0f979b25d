"""The subscribers told when a file version is gone (the page store evicts its pages), and
who a lookup is made for: the deadline its UFS calls keep, and who hears the feed revision of
what its sync found."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

from ufs.deadline import Deadline

log = logging.getLogger(__name__)

Listener = Callable[[str, str], None]


class LookupCall(Protocol):
    """The call a lookup is made for (a request's context, ``worker.request.RequestContext``):
    the ``deadline`` by which the call's UFS requests must be done (None: only each request's
    own), and who is told the feed revision under which a sync the lookup made published the
    change it found, so that the call's answer can name it (read-your-writes across workers)."""

    @property
    def deadline(self) -> Deadline | None:
        """The time the call has for the UFS, its retries included."""

    def observed(self, revision: int | None) -> None:
        """The answer depends on feed revision ``revision`` (None: nothing was published)."""


class Listeners:
    """Callbacks ``fn(uri, version)``, each meaning "version ``version`` of file ``uri`` is gone".

    Thread-safe: adding swaps in a new tuple under a lock; notifying reads the current tuple
    without one and runs the callbacks with no lock held, so a callback may call back into the
    metadata manager.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: tuple[Listener, ...] = ()

    def add(self, fn: Listener) -> None:
        with self._lock:
            self._listeners = (*self._listeners, fn)

    def notify(self, gone: Iterable[tuple[str, str]]) -> None:
        """Tell every listener of every version in ``gone``, then raise the first failure.

        Every listener hears of every version even if one fails, so one broken subscriber
        does not leave another with pages of a dead version; further failures are logged.
        """
        failures: list[Exception] = []
        listeners = self._listeners
        for uri, version in gone:
            for listener in listeners:
                try:
                    listener(uri, version)
                except Exception as exc:  # noqa: BLE001 - re-raised below, after the others ran
                    failures.append(exc)
        for extra in failures[1:]:
            log.error("a metadata listener failed as well", exc_info=extra)
        if failures:
            raise failures[0]
