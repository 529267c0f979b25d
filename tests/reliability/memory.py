"""Reading what a worker's memory tracing wrote (``worker/memtrace.py``): its figures at a
moment, and the allocation sites whose Python memory grew between two of its snapshots."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from worker.memtrace import FIGURES_FILE, TRACE_DIR

PROJECT = ("/worker/", "/pagestore/", "/ufs/", "/config/")


class MemoryRecord:
    """The snapshots and figures a worker wrote under ``<work dir>/memtrace``, each numbered by
    the order it was taken in. Not thread-safe."""

    def __init__(self, work: Path) -> None:
        self.directory = work / TRACE_DIR
        lines = (self.directory / FIGURES_FILE).read_text().splitlines()
        self.lines: list[dict[str, float]] = [json.loads(line) for line in lines]
        self.traced = (self.directory / "0000.snapshot").exists()

    def at(self, seconds: float) -> int:
        """The last record taken ``seconds`` or less after tracing started (the first if none)."""
        taken = [n for n, line in enumerate(self.lines) if line["seconds"] <= seconds]
        return taken[-1] if taken else 0

    def growth(self, start: int, end: int, figure: str) -> float:
        """How much ``figure`` grew from record ``start`` to record ``end``."""
        return self.lines[end].get(figure, 0) - self.lines[start].get(figure, 0)

    def snapshot(self, index: int) -> tracemalloc.Snapshot:
        return tracemalloc.Snapshot.load(str(self.directory / f"{index:04d}.snapshot"))

    def grown_sites(self, start: int, end: int, count: int) -> list[tuple[str, int, int]]:
        """The ``count`` allocation sites (whole tracebacks) whose memory grew most from record
        ``start`` to ``end``: each as (where, bytes grown, blocks grown). ``where`` names the
        line that allocated and, when that is outside the project (a container, a library),
        the last project line that led to it."""
        stats = self.snapshot(end).compare_to(self.snapshot(start), "traceback")
        return [(where(stat.traceback), stat.size_diff, stat.count_diff) for stat in stats[:count]]

    def report(self, start: int, end: int, count: int) -> str:
        """The top ``count`` growing sites from ``start`` to ``end`` with their tracebacks."""
        stats = self.snapshot(end).compare_to(self.snapshot(start), "traceback")
        parts = []
        for stat in stats[:count]:
            parts.append(f"{stat.size_diff / 1024:+.1f} KiB, {stat.count_diff:+d} blocks")
            parts.extend(stat.traceback.format())
        return "\n".join(parts)


def where(traceback: tracemalloc.Traceback) -> str:
    innermost = traceback[-1]
    named = f"{short(innermost.filename)}:{innermost.lineno}"
    if any(part in innermost.filename for part in PROJECT):
        return named
    for frame in reversed(traceback):
        if any(part in frame.filename for part in PROJECT):
            return f"{named} via {short(frame.filename)}:{frame.lineno}"
    return named


def short(filename: str) -> str:
    """A file name from its package on (``worker/meta/cache.py``, ``httpx/_models.py``)."""
    for marker in PROJECT:
        if marker in filename:
            return marker.strip("/") + "/" + filename.rsplit(marker, 1)[1]
    if "site-packages/" in filename:
        return filename.rsplit("site-packages/", 1)[1]
    return filename.rsplit("/lib/python3", 1)[-1]
