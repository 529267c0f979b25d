"""What an operator looks at beyond the running totals: the counters over the last hour, the
files read most, and the UFS's latency quantiles. The console draws them; the REST API serves
them as JSON (``worker.api.insight``), so nothing is computed only for the page."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

HISTORY_PERIOD_S = 5.0
HISTORY_SIZE = 720
"""One sample every 5 s for an hour: the console's charts without a Prometheus server."""

TOP_FILES_KEPT = 2000
"""Files whose reads are counted at once; past it the least-read half is forgotten."""


class History:
    """Samples of a counter snapshot (``read()``, e.g. ``WorkerService.stats``) every
    ``period_s`` seconds, the newest ``size`` kept.

    Thread-safe: the ring is guarded by one lock; one daemon thread samples after
    :meth:`start` until :meth:`close`. A sample that fails to be read is skipped and the next
    one tried: a chart with a gap, never a stopped sampler.
    """

    def __init__(
        self,
        read: Callable[[], dict[str, int]],
        period_s: float = HISTORY_PERIOD_S,
        size: int = HISTORY_SIZE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._read = read
        self.period_s = period_s
        self._clock = clock
        self._lock = threading.Lock()
        self._samples: deque[dict[str, Any]] = deque(maxlen=size)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        """Take one sample now."""
        snapshot: dict[str, Any] = {"at": self._clock(), **self._read()}
        with self._lock:
            self._samples.append(snapshot)

    def samples(self, since: float | None = None) -> list[dict[str, Any]]:
        """The samples, oldest first; only those taken after ``since`` (epoch s) if given."""
        with self._lock:
            kept = list(self._samples)
        return kept if since is None else [s for s in kept if s["at"] > since]

    def start(self) -> None:
        """Sample now and then every ``period_s`` on a daemon thread. Idempotent."""
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._run, name="dora-history", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                self.sample()
            except Exception as exc:  # noqa: BLE001 — a failed read is a gap in the chart
                log.debug("history: no sample this time: %s", exc)
            if self._stop.wait(self.period_s):
                return

    def close(self) -> None:
        """Stop sampling. Idempotent."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()


@dataclass(frozen=True)
class FileReads:
    """How often a file was read through this worker since it was first counted."""

    uri: str
    reads: int
    bytes: int


class TopFiles:
    """Reads per file, for the most-read files. Bounded: past ``kept`` files the least-read
    half is forgotten (a file read since counts from zero again), so a scan of a million files
    costs a bounded table.

    Thread-safe: one lock around the table, held for a dict update per read call.
    """

    def __init__(self, kept: int = TOP_FILES_KEPT) -> None:
        self._kept = kept
        self._lock = threading.Lock()
        self._reads: dict[str, list[int]] = {}

    def record(self, uri: str, nbytes: int) -> None:
        with self._lock:
            counts = self._reads.get(uri)
            if counts is None:
                if len(self._reads) >= self._kept:
                    self._forget_half()
                counts = self._reads[uri] = [0, 0]
            counts[0] += 1
            counts[1] += nbytes

    def _forget_half(self) -> None:
        ranked = sorted(self._reads.items(), key=lambda item: (item[1][0], item[1][1]))
        for uri, _ in ranked[: len(ranked) // 2 or 1]:
            del self._reads[uri]

    def top(self, limit: int) -> list[FileReads]:
        """The ``limit`` most-read files, most reads first (then most bytes)."""
        with self._lock:
            items = [(uri, reads, size) for uri, (reads, size) in self._reads.items()]
        items.sort(key=lambda item: (-item[1], -item[2], item[0]))
        return [FileReads(uri, reads, size) for uri, reads, size in items[:limit]]

    def forget(self, uri: str) -> None:
        """Stop counting ``uri`` (it was deleted)."""
        with self._lock:
            self._reads.pop(uri, None)


def histogram_quantiles(
    buckets: Iterable[tuple[float, float]], quantiles: Iterable[float]
) -> dict[float, float | None]:
    """Quantiles (seconds) of a Prometheus histogram from its cumulative ``(upper bound,
    count)`` buckets, interpolated linearly inside a bucket as Prometheus's
    ``histogram_quantile`` does; None for each when nothing was observed. A quantile in the
    ``+Inf`` bucket is answered with the highest finite bound."""
    ordered = sorted(buckets)
    total = ordered[-1][1] if ordered else 0
    answers: dict[float, float | None] = {}
    for q in quantiles:
        answers[q] = None if total <= 0 else _quantile(ordered, q * total)
    return answers


def _quantile(ordered: list[tuple[float, float]], rank: float) -> float:
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in ordered:
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            inside = count - lower_count
            share = 0.0 if inside <= 0 else (rank - lower_count) / inside
            return lower_bound + (bound - lower_bound) * share
        lower_bound, lower_count = bound, count
    return lower_bound
