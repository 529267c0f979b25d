"""TTL: data and metadata of a path whose rule says ``ttl=<duration>`` are freed that long
after they were loaded (Alluxio's TTL with its ``FREE`` action: the cache forgets, the UFS is
untouched).

A file counts as loaded from the first time a request looks it up through the worker (a status
or a read, which loads its metadata and, admitted, its pages) after it was last freed; a sweep
every ``dora.worker.ttl.check.interval`` frees what is due, by the rules in force then (a rule
edited to a longer TTL keeps the file longer, one that no longer gives a TTL forgets it). The
record lives in memory: after a restart the clock of a file starts again at its next lookup.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from worker.rules.live import Rules

log = logging.getLogger(__name__)


class Expiry:
    """When each file under a TTL rule was loaded, and the sweep that frees those past it.

    ``free(uri)`` drops the file's metadata and pages; ``clock`` is wall-clock seconds
    (injectable for tests). Thread-safe: ``_lock`` guards the table, and a sweep frees outside
    it; one daemon thread sweeps after :meth:`start` until :meth:`close`."""

    def __init__(
        self,
        rules: Rules,
        free: Callable[[str], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._rules = rules
        self._free = free
        self._clock = clock
        self._loaded: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def loaded(self, canonical_uri: str, ttl: int | None) -> None:
        """A request looked ``canonical_uri`` up, and its policy's TTL is ``ttl`` (ms; None:
        none, nothing recorded). The first lookup since it was last freed starts its clock."""
        if ttl is None:
            return
        with self._lock:
            self._loaded.setdefault(canonical_uri, self._clock())

    def sweep(self, now: float | None = None) -> list[str]:
        """Free every file whose TTL, by the rules in force now, has run out at ``now`` (None:
        the clock's time); returns their URIs. A file no rule gives a TTL any more is
        forgotten, not freed."""
        now = self._clock() if now is None else now
        due: list[str] = []
        with self._lock:
            for uri, since in list(self._loaded.items()):
                ttl = self._rules.resolve(uri).ttl
                if ttl is None:
                    del self._loaded[uri]
                elif (now - since) * 1000 >= ttl:
                    del self._loaded[uri]
                    due.append(uri)
        for uri in due:
            self._free(uri)
        return due

    def __len__(self) -> int:
        with self._lock:
            return len(self._loaded)

    def start(self, every_s: float) -> None:
        """Sweep every ``every_s`` seconds in a daemon thread, until :meth:`close`."""
        self._thread = threading.Thread(
            target=self._run, args=(every_s,), name="ttl-sweep", daemon=True
        )
        self._thread.start()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            try:
                self.sweep()
            except Exception:  # one failed sweep must not end the sweeper
                log.exception("TTL sweep failed; the next one retries")

    def close(self) -> None:
        """Stop the sweeper. Idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
