"""Background re-checks for serve-while-revalidate (``docs/consistency.md``).

A caller that allows it gets an expired status at once, and the read side asks this module to
re-check that path in the background. At most one re-check runs per path: a second caller that
finds the same expired entry is answered stale too, and starts nothing. A re-check is the read
side's own sync (the UFS call with its deadline, the new state stored, a changed file's pages
dropped, the cluster told); one that fails leaves the entry expired and is remembered, so the
next caller re-checks synchronously, as without the option, and sees the failure itself.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from worker.meta.counters import MetaCounters

log = logging.getLogger(__name__)

# Re-checks are UFS round trips; a few threads keep up with a worker's expiring entries, and
# past this many waiting a caller re-checks synchronously (the queue never grows unbounded).
_THREADS = 4
_MAX_PENDING = 256
# Failed re-checks remembered (per path and entry): a forgotten one costs one more attempt.
_FAILURES_KEPT = 4096


class Revalidations:
    """Runs ``recheck(uri)`` in the background, once per path at a time.

    Thread-safe: ``_lock`` guards the paths in flight and the failures; it is a leaf, never
    held while a re-check runs or is submitted.
    """

    def __init__(self, recheck: Callable[[str], object], counters: MetaCounters) -> None:
        self._recheck = recheck
        self._counters = counters
        self._lock = threading.Lock()
        self._running: set[str] = set()
        # uri -> loaded_at of the entry whose re-check failed: that entry is not served stale.
        self._failed: OrderedDict[str, int] = OrderedDict()
        self._closed = False
        self._pool = ThreadPoolExecutor(_THREADS, thread_name_prefix="dora-revalidate")

    def start(self, uri: str, loaded_at: int) -> bool:
        """Make sure a background re-check of ``uri`` runs, for its entry loaded at
        ``loaded_at``: True when one runs (started now or already running), so the caller may
        answer stale; False when the caller must re-check synchronously (the last background
        re-check of this entry failed, too many wait, or the worker is closing)."""
        with self._lock:
            if self._closed or self._failed.get(uri) == loaded_at:
                return False
            if uri in self._running:
                return True
            if len(self._running) >= _MAX_PENDING:
                return False
            self._running.add(uri)
        self._counters.add("revalidations")
        self._pool.submit(self._run, uri, loaded_at)
        return True

    def _run(self, uri: str, loaded_at: int) -> None:
        error: Exception | None = None
        try:
            self._recheck(uri)
        except Exception as exc:  # noqa: BLE001 - a background thread has no caller to raise to
            error = exc
        finally:
            with self._lock:
                self._running.discard(uri)
                if error is not None:
                    self._failed[uri] = loaded_at
                    self._failed.move_to_end(uri)
                    while len(self._failed) > _FAILURES_KEPT:
                        self._failed.popitem(last=False)
        if error is not None:
            log.warning(
                "background re-check of %s failed, the next call re-checks it: %s: %s",
                uri,
                type(error).__name__,
                error,
            )
            # Counted last: whoever sees the count sees the entry left to the next call, and
            # the line in the log.
            self._counters.add("revalidations_failed")

    def close(self) -> None:
        """Start no more re-checks; cancel those waiting, wait for those running (each within
        the UFS deadline). Idempotent."""
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=True, cancel_futures=True)
