"""Opt-in memory figures of the worker process, for finding where its memory grows (the soak
of ``tests/reliability/test_mixed_load.py`` turns them on; RELIABILITY.md, issue 36 item 9).

With ``dora.worker.debug.memory.trace.interval`` positive, the worker writes, every interval
and once at start and at exit, one line of ``<work dir>/memtrace/memory.jsonl``: where its
memory is, split so that Python heap growth can be told from the allocator's and the kernel's
share. The resident set, anonymous and file-backed (``/proc/self/status``); glibc's own account
of its heap (``mallinfo2``: bytes in use, bytes free but kept, bytes in their own mappings),
which also holds what C libraries (RocksDB, OpenSSL) allocate; Python's live blocks
(``sys.getallocatedblocks``).

With ``dora.worker.debug.memory.trace.frames`` too, the worker traces its Python allocations
(:mod:`tracemalloc`) and writes ``NNNN.snapshot`` with each line (``tracemalloc.Snapshot.load``
reads it back), so the top allocation sites of any two moments can be compared offline; the
line then also has what tracemalloc traces and what tracing itself costs. Tracing slows every
allocation, and taking a snapshot holds the process still for seconds: for investigations
only."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import logging
import os
import pickle
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from config import Config
from config.core_keys import WORK_DIR
from config.keys import KeyType, PropertyKey
from pagestore import modes

log = logging.getLogger(__name__)

TRACE_INTERVAL: PropertyKey[int] = PropertyKey(
    "dora.worker.debug.memory.trace.interval",
    KeyType.DURATION,
    "0",
    "Debugging aid: write a line of memory figures (resident set, malloc heap, and the Python "
    "heap when dora.worker.debug.memory.trace.frames is set) every interval into "
    "<work dir>/memtrace/memory.jsonl. 0: off.",
    minimum=0,
)
TRACE_FRAMES: PropertyKey[int] = PropertyKey(
    "dora.worker.debug.memory.trace.frames",
    KeyType.INT,
    "0",
    "Debugging aid, with dora.worker.debug.memory.trace.interval: trace the worker's Python "
    "allocations (tracemalloc) keeping this many frames each, and write a snapshot with each "
    "line of figures. Slows the worker several times over and costs memory. 0: no tracing.",
    minimum=0,
    maximum=100,
)
KEYS: list[PropertyKey[Any]] = [TRACE_INTERVAL, TRACE_FRAMES]

TRACE_DIR = "memtrace"
FIGURES_FILE = "memory.jsonl"


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (glibc 2.33 and later)."""

    _FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
    _fields_ = [(name, ctypes.c_size_t) for name in _FIELDS.split()]


def malloc_heap() -> dict[str, int]:
    """glibc's account of its heap over every arena, in bytes: ``malloc_in_use``,
    ``malloc_free`` (freed, kept by the allocator) and ``malloc_mmapped`` (large blocks in
    their own mappings). Empty where the C library has no ``mallinfo2`` (musl, macOS)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    mallinfo2 = getattr(libc, "mallinfo2", None)
    if mallinfo2 is None:
        return {}
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return {
        "malloc_in_use": info.uordblks,
        "malloc_free": info.fordblks,
        "malloc_mmapped": info.hblkhd,
    }


def resident() -> dict[str, int]:
    """The resident set of this process, in bytes: ``rss``, ``rss_anon``, ``rss_file``."""
    wanted = {"VmRSS:": "rss", "RssAnon:": "rss_anon", "RssFile:": "rss_file"}
    figures = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        field, _, rest = line.partition("\t")
        if field in wanted:
            figures[wanted[field]] = int(rest.split()[0]) * 1024
    return figures


def figures(started: float) -> dict[str, float]:
    """One line of ``memory.jsonl``: the moment (seconds since ``started``, monotonic) and
    where the memory is."""
    traced, traced_peak = tracemalloc.get_traced_memory()
    return {
        "seconds": round(time.monotonic() - started, 1),
        **resident(),
        "python_blocks": sys.getallocatedblocks(),
        "python_traced": traced,
        "python_traced_peak": traced_peak,
        "tracemalloc_overhead": tracemalloc.get_tracemalloc_memory(),
        **malloc_heap(),
        "threads": threading.active_count(),
    }


class MemoryTrace:
    """Writes a line of figures every ``interval`` seconds into ``directory`` from a daemon
    thread, and a last one when closed; with ``frames``, traces Python allocations meanwhile
    and writes a snapshot with each line. Thread-safe: :meth:`close` may be called from any
    thread, once."""

    def __init__(self, directory: Path, interval: float, frames: int = 0) -> None:
        self.directory = directory
        self.interval = interval
        self.frames = frames
        self._started = time.monotonic()
        self._count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memtrace", daemon=True)

    def start(self) -> MemoryTrace:
        modes.make_dirs(self.directory, modes.PRIVATE_DIR)
        if self.frames:
            tracemalloc.start(self.frames)
        self._started = time.monotonic()
        self.record()
        self._thread.start()
        log.info("memory figures every %.1f s into %s (tracemalloc: %s)", self.interval,
                 self.directory, f"{self.frames} frames" if self.frames else "off")  # fmt: skip
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.record()

    def record(self) -> None:
        """Write the next line of figures (and snapshot, when tracing) now."""
        began = time.monotonic()
        snapshot = tracemalloc.take_snapshot() if self.frames else None
        line = figures(self._started)
        written = os.O_WRONLY | os.O_CLOEXEC
        if snapshot is not None:
            path = self.directory / f"{self._count:04d}.snapshot"
            fd = modes.create(path, written | os.O_TRUNC, modes.PRIVATE_FILE)
            with os.fdopen(fd, "wb") as out:
                pickle.dump(snapshot, out, pickle.HIGHEST_PROTOCOL)  # as Snapshot.dump does
        self._count += 1
        # The process stands still while a snapshot is taken: how long says what it cost.
        line["record_seconds"] = round(time.monotonic() - began, 2)
        path = self.directory / FIGURES_FILE
        with os.fdopen(modes.create(path, written | os.O_APPEND, modes.PRIVATE_FILE), "w") as out:
            out.write(json.dumps(line) + "\n")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.record()
        if self.frames:
            tracemalloc.stop()


@contextlib.contextmanager
def tracing(config: Config) -> Iterator[MemoryTrace | None]:
    """A running :class:`MemoryTrace` while the block runs, if the config asks for one."""
    interval = config.get(TRACE_INTERVAL)
    if interval <= 0:
        yield None
        return
    directory = Path(config.get(WORK_DIR)).expanduser() / TRACE_DIR
    trace = MemoryTrace(directory, interval / 1000, config.get(TRACE_FRAMES)).start()
    try:
        yield trace
    finally:
        trace.close()
