"""SIGHUP: read the files the worker serves by again, now, as nginx and HAProxy do.

The worker watches its TLS files (every ``dora.worker.tls.reload.interval``) and its path rules
file (at most once a second, on lookups) anyway, and goes on doing so; a hangup makes it read
them at once, whether or not they look changed, and log what changed. Without a handler the
default action of SIGHUP ends the process: an operator's reload, or a terminal closed on a
worker started from it, would take the cache down.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from worker.rules.live import Rules
from worker.tls.server import ServerTls

log = logging.getLogger(__name__)


class Hangups:
    """Reloads ``tls`` and ``rules`` (either may be None) on each SIGHUP. Thread-safe: the
    signal handler only sets an event; one daemon thread does the reloading, so a reload never
    runs on the event loop and hangups that come while one runs make one more."""

    def __init__(self, tls: ServerTls | None, rules: Rules | None) -> None:
        self.tls = tls
        self.rules = rules
        self._wanted = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="dora-sighup", daemon=True)

    def reload(self) -> None:
        """Read the TLS files and the rules file again, logging what changed."""
        log.info("worker received SIGHUP: reloading its TLS files and path rules")
        if self.tls is not None:
            self.tls.reload(force=True)
        if self.rules is not None:
            self.rules.reload()
        if self.tls is None and self.rules is None:
            log.info("nothing to reload: no TLS files and no path rules file are set")

    def _handle(self, _sig: int, _frame: FrameType | None) -> None:
        self._wanted.set()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            if self._closed:
                return
            self._wanted.clear()
            try:
                self.reload()
            except Exception:  # a reload must never end the watching, nor the worker
                log.exception("reloading on SIGHUP failed")

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGHUP while the block runs (call from the main thread), then restore the
        handler there was."""
        previous = signal.signal(signal.SIGHUP, self._handle)
        self._thread.start()
        try:
            yield
        finally:
            signal.signal(signal.SIGHUP, previous)
            self._closed = True
            self._wanted.set()
            self._thread.join()
