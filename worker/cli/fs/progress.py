"""The progress line of long ``dora fs`` operations (copies, ``load``): a bar, the share done,
bytes and files done of the total, and the rate, redrawn in place on stderr."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from fsspec.callbacks import Callback

from worker.cli.fs.formats import size_text

BAR_WIDTH = 30
# Redrawing on every chunk would cost more than the copy on a fast link.
REDRAW_S = 0.1


def progress_line(
    bytes_done: int, bytes_total: int, files_done: int, files_total: int, seconds: float
) -> str:
    """``[#####     ]  45.0%  1.2 MiB/2.7 MiB  3/7 files  2.0 MiB/s``."""
    fraction = (
        min(1.0, bytes_done / bytes_total) if bytes_total else files_done / (files_total or 1)
    )
    bar = "#" * int(BAR_WIDTH * fraction)
    rate = f"  {size_text(bytes_done / seconds, True)}/s" if seconds > 0 else ""
    return (
        f"[{bar:<{BAR_WIDTH}}] {100 * fraction:5.1f}%  "
        f"{size_text(bytes_done, True)}/{size_text(bytes_total, True)}  "
        f"{files_done}/{files_total} files{rate}"
    )


class Progress:
    """The progress of a copy of ``total_files`` files of ``total_bytes`` bytes, shown on
    ``stream`` only when ``enabled`` (a terminal, no ``-q``), at most every ``REDRAW_S``.

    Not thread-safe: the command's thread drives it (fsspec calls its callbacks there too)."""

    def __init__(
        self,
        total_bytes: int,
        total_files: int,
        *,
        enabled: bool,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total_bytes = total_bytes
        self.total_files = total_files
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.started = clock()
        self.files_done = 0
        self.bytes_done = 0  # of finished files
        self.current = 0  # bytes of the file being copied
        self._drawn_at: float | None = None

    def file_callback(self, size: int) -> Callback:
        """An fsspec callback that feeds the bytes of one file of ``size`` into this line."""
        return _FileBytes(self, size)

    def advance(self, current: int) -> None:
        """``current`` bytes of the file being copied are done."""
        self.current = current
        self._draw(force=False)

    def file_done(self, size: int) -> None:
        """A file of ``size`` bytes is copied (or a directory created, with size 0)."""
        self.files_done += 1
        self.bytes_done += size
        self.current = 0
        self._draw(force=self.files_done == self.total_files)

    def note(self, line: str) -> None:
        """Print ``line`` on stdout, above the progress line."""
        if self._drawn_at is not None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
        print(line, flush=True)
        if self._drawn_at is not None:
            self._draw(force=True)

    def close(self) -> None:
        """End the progress line (the last state stays on screen)."""
        if self._drawn_at is not None:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self, *, force: bool) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if not force and self._drawn_at is not None and now - self._drawn_at < REDRAW_S:
            return
        self._drawn_at = now
        line = progress_line(
            self.bytes_done + self.current,
            self.total_bytes,
            self.files_done,
            self.total_files,
            now - self.started,
        )
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()


class _FileBytes(Callback):  # type: ignore[misc]  # fsspec is untyped
    """Bytes of one file, as fsspec's ``put_file``/``get_file`` report them. A retried upload
    reports its bytes again: the count is capped at the file's size."""

    def __init__(self, progress: Progress, size: int) -> None:
        super().__init__(size=size)
        self.progress = progress
        self.limit = size

    def call(self, hook_name: str | None = None, **kwargs: Any) -> None:
        self.progress.advance(min(int(self.value), self.limit))
