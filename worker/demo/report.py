"""What the demo shows: progress while it works, then one table row per run."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class RunResult:
    """One run of the query through the cache, with the worker's counters over the run."""

    name: str
    sync_interval: str
    seconds: float
    bytes_from_ufs: int
    bytes_from_cache: int
    metadata_hits: int
    metadata_misses: int
    metadata_ufs_calls: int
    checksum: str
    reference: str

    @property
    def matches(self) -> bool:
        return self.checksum == self.reference

    @property
    def hit_ratio(self) -> float | None:
        lookups = self.metadata_hits + self.metadata_misses
        return self.metadata_hits / lookups if lookups else None

    @classmethod
    def from_stats(
        cls,
        name: str,
        sync_interval: str,
        seconds: float,
        delta: Mapping[str, int],
        checksum: str,
        reference: str,
    ) -> RunResult:
        return cls(
            name,
            sync_interval,
            seconds,
            delta.get("bytes_from_ufs", 0),
            delta.get("bytes_from_cache", 0),
            delta.get("metadata_hits", 0),
            delta.get("metadata_misses", 0),
            delta.get("metadata_ufs_calls", 0),
            checksum,
            reference,
        )


def megabytes(count: int) -> str:
    return f"{count / (1 << 20):,.1f} MB"


def render(results: list[RunResult]) -> str:
    """The results as an aligned text table."""
    header = (
        "run",
        "sync",
        "wall",
        "from UFS",
        "from cache",
        "meta hit ratio",
        "UFS meta calls",
        "checksum",
        "matches direct read",
    )
    rows = [header]
    for r in results:
        ratio = "-" if r.hit_ratio is None else f"{r.hit_ratio:.0%}"
        verdict = "yes" if r.matches else f"NO (want {r.reference})"
        rows.append(
            (
                r.name,
                r.sync_interval,
                f"{r.seconds:.1f}s",
                megabytes(r.bytes_from_ufs),
                megabytes(r.bytes_from_cache),
                ratio,
                str(r.metadata_ufs_calls),
                r.checksum,
                verdict,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    numeric = {2, 3, 4, 5, 6}
    lines = []
    for n, row in enumerate(rows):
        cells = [
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


class Progress:
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
