"""What the demo shows: progress while it works, then one table row per run."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO

from worker.devlab.demo.link import UfsCost


@dataclass(frozen=True)
class RunResult:
    """One run of the query by one contender: wall time, what the object store saw (requests
    and bytes through the proxy; None where nothing counted), what the worker served from its
    cache, what the Spark driver's JVM read straight from the worker's page files (the
    short-circuit client), and the answer's checksum against the reference."""

    contender: str
    run: str
    sync: str
    seconds: float
    ufs: UfsCost
    bytes_from_cache: int
    bytes_from_page_files: int
    bytes_from_ufs: int
    checksum: str
    reference: str

    @property
    def matches(self) -> bool:
        return self.checksum == self.reference


def megabytes(count: int) -> str:
    return f"{count / (1 << 20):,.1f} MB"


HEADER = ("run", "contender", "sync", "wall", "UFS requests", "UFS read", "from cache",
          "from page files", "checksum", "matches direct read")  # fmt: skip
NUMERIC = {3, 4, 5, 6, 7}


def _row(r: RunResult) -> tuple[str, ...]:
    # Without a proxy the store's own count is unknown: the worker's is the next best.
    read = r.ufs.bytes if r.ufs.bytes is not None else r.bytes_from_ufs
    return (
        r.run,
        r.contender,
        r.sync,
        f"{r.seconds:.1f}s",
        "-" if r.ufs.requests is None else f"{r.ufs.requests:,}",
        megabytes(read),
        megabytes(r.bytes_from_cache),
        megabytes(r.bytes_from_page_files),
        r.checksum,
        "yes" if r.matches else f"NO (want {r.reference})",
    )


def render(results: list[RunResult]) -> str:
    """The results as an aligned text table, runs grouped so that contenders sit side by
    side."""
    order = {run: n for n, run in enumerate(dict.fromkeys(r.run for r in results))}
    ordered = sorted(results, key=lambda r: order[r.run])
    rows = [HEADER, *(_row(r) for r in ordered)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = []
    for n, row in enumerate(rows):
        if n > 1 and row[0] != rows[n - 1][0]:
            lines.append("")
        cells = [c.rjust(w) if i in NUMERIC else c.ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths, strict=True))]  # fmt: skip
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


class DemoProgress:
    """Step-by-step progress lines; counters redraw in place on a terminal."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.tty = self.out.isatty()

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    @contextmanager
    def step(self, text: str) -> Iterator[Callable[[int, int], None]]:
        """Announce a step; the yielded ``counter(done, total)`` reports its advance."""
        started = time.monotonic()
        last = [-1.0]

        def counter(done: int, total: int) -> None:
            now = time.monotonic()
            # On a terminal redraw the line; in a log, one line every few seconds is plenty.
            if self.tty:
                print(f"\r  {text}: {done}/{total}", end="", file=self.out, flush=True)
            elif done == total or now - last[0] >= 5.0:
                last[0] = now
                self.say(f"  {text}: {done}/{total}")

        print(f"  {text} ...", end="" if self.tty else "\n", file=self.out, flush=True)
        prefix = "\r" if self.tty else ""
        try:
            yield counter
        except BaseException:
            print(f"{prefix}  {text}: failed" + " " * 12, file=self.out, flush=True)
            raise
        elapsed = time.monotonic() - started
        print(f"{prefix}  {text}: done in {elapsed:.1f}s" + " " * 12, file=self.out, flush=True)
