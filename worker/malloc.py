"""Giving back the memory glibc's allocator keeps once it is free.

Under mixed load the worker's threads allocate and free many blocks of 64 KB to a few MB (pages,
request bodies, upload buffers). glibc serves blocks that large from ``mmap`` at first, but each
``free`` of such a block raises its threshold (the dynamic ``M_MMAP_THRESHOLD``, up to 32 MB), so
after the first few they come from the heaps of the allocator's arenas, where a freed block
stays resident unless it happens to lie at the top of a heap. The resident set then creeps up
while the bytes in use stay flat: measured in the mixed-load soak (RELIABILITY.md, issue 36
item 9), glibc's free-but-kept bytes went from 16 to 37 MiB in 300 s, all of the resident
growth past the first minute, while Python's live blocks did not grow.

Two remedies were measured: a fixed ``M_MMAP_THRESHOLD`` (128 KB) stops the creep but makes
every page-sized block a fresh mapping, ten to twenty times slower to fill; ``malloc_trim``
now and then keeps the fast reuse and hands whole free pages back to the kernel. The worker
does the latter, from one daemon thread."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from config import Config
from config.keys import KeyType, PropertyKey

log = logging.getLogger(__name__)

TRIM_INTERVAL: PropertyKey[int] = PropertyKey(
    "dora.worker.memory.trim.interval",
    KeyType.DURATION,
    "10s",
    "How often the worker hands the memory its allocator keeps free back to the system "
    "(glibc's malloc_trim): without it, blocks freed by many threads (pages, request bodies) "
    "stay resident and the resident set creeps up under load. 0: never.",
    minimum=0,
)
KEYS: list[PropertyKey[Any]] = [TRIM_INTERVAL]


def malloc_trim() -> Callable[[], bool] | None:
    """glibc's ``malloc_trim(0)`` as a function that says whether it gave memory back; None
    where the C library has none (musl, macOS). ctypes releases the GIL around the call."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def call() -> bool:
        return bool(trim(0))

    return call


class Trimmer:
    """Calls ``trim`` every ``interval`` seconds on a daemon thread until closed. Thread-safe:
    :meth:`close` may be called from any thread, once."""

    def __init__(self, trim: Callable[[], bool], interval: float) -> None:
        self._trim = trim
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="malloc-trim", daemon=True)

    def start(self) -> Trimmer:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._trim()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


@contextlib.contextmanager
def trimming(config: Config) -> Iterator[Trimmer | None]:
    """A running :class:`Trimmer` while the block runs, unless the config turns it off or the
    C library cannot trim."""
    interval = config.get(TRIM_INTERVAL)
    trim = malloc_trim() if interval > 0 else None
    if trim is None:
        if interval > 0:
            log.info("this C library has no malloc_trim: free memory is left to the allocator")
        yield None
        return
    trimmer = Trimmer(trim, interval / 1000).start()
    try:
        yield trimmer
    finally:
        trimmer.close()
