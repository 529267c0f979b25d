"""The worker's side of the generation counters (the format, and the clients' side, are in
:mod:`worker.common.generations`): it creates the file in its first page directory and bumps
the counters whenever cached metadata changes."""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
import threading
import time
from pathlib import Path

from pagestore import modes
from pagestore.layout import GENERATIONS
from ufs import uri as uris
from worker.common.generations import DEFAULT_BUCKETS, EPOCH, GLOBAL, HEADER_WORDS, MAGIC, bucket_of

FILE_NAME = GENERATIONS  # in the first page directory, which the page store leaves alone


class GenerationFile:
    """The worker's side: creates (or reopens in place, so clients' mappings stay valid across
    worker restarts) and bumps the counters. Thread-safe: one lock around every bump.

    Raises OSError when the file cannot be created or its blocks allocated (a full or failing
    disk): the worker then runs without it, and same-host clients without a near-cache."""

    def __init__(self, path: Path, buckets: int = DEFAULT_BUCKETS) -> None:
        self.path = path
        size = 8 * (HEADER_WORDS + buckets)
        fd = modes.create(path, os.O_RDWR | os.O_CLOEXEC, modes.SHARED_FILE)
        try:
            current = os.fstat(fd).st_size
            if current != size or _magic(fd) != MAGIC:
                # Another layout or a torn file: start over on the same inode.
                os.ftruncate(fd, 0)
                os.ftruncate(fd, size)
            _allocate(fd, size)
            self._map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self._words = memoryview(self._map).cast("Q")
        self._buckets = buckets
        self._lock = threading.Lock()
        self._words[0], self._words[1] = MAGIC, buckets
        # Counts before this run may have missed changes (a crash): move everything on.
        self._words[GLOBAL] += 1
        self._words[EPOCH] = time.time_ns()

    def bump(self, uri: str) -> None:
        """Count a change to canonical ``uri``: its bucket and its parent's."""
        parent = uris.parent(uri)
        with self._lock:
            self._words[HEADER_WORDS + bucket_of(uri, self._buckets)] += 1
            if parent is not None:
                self._words[HEADER_WORDS + bucket_of(parent, self._buckets)] += 1

    def bump_all(self) -> None:
        """Count a change that may touch any path."""
        with self._lock:
            self._words[GLOBAL] += 1

    def close(self) -> None:
        """Tell readers no worker counts changes any more. Idempotent."""
        with self._lock:
            if self._map.closed:
                return
            self._words[EPOCH] = 0
            self._words.release()
            self._map.close()


def _allocate(fd: int, size: int) -> None:
    """Give every mapped byte its block now. A store into a hole of a sparse file that the
    disk has no room for is a SIGBUS, which kills the worker, at start or at the first bump
    that reaches an untouched page; here it is an OSError. On failure the epoch is cleared
    (best effort), so that clients still mapping a crashed worker's file trust none of it."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError:
        with contextlib.suppress(OSError):
            os.pwrite(fd, bytes(8), 8 * EPOCH)
        raise


def _magic(fd: int) -> int:
    head = os.pread(fd, 8, 0)
    return int.from_bytes(head, sys.byteorder) if len(head) == 8 else 0
