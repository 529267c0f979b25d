"""Generation counters in a small memory-mapped file: the worker bumps them whenever cached
metadata changes, so a client on the same host can keep statuses and listings in its own
near-cache and check, with a few memory reads and no call, that nothing changed since it asked.

The file (:data:`FILE_NAME`, in the worker's first page directory, which same-host clients can
read) holds, as native-endian unsigned 64-bit words:

- ``[0]`` magic, ``[1]`` the number of buckets;
- ``[2]`` the worker's epoch: set when a worker opens the file, 0 once it closed it (a client
  trusts nothing then, since changes may be made that no one counts);
- ``[3]`` the global counter, bumped for changes that touch many paths (a recursive
  invalidation, a feed gap);
- ``[4 + b]`` the counter of bucket ``b``: paths hash (xxh3 of the canonical URI) to buckets.

A change to a path bumps its bucket and its parent's (the parent's listing changed). Counters
only grow, and an aligned 8-byte store or load through a ``memoryview`` of format ``Q`` is one
machine instruction on the platforms the worker runs on, so a reader never sees a torn value.
The worker bumps a counter *after* the cache holds the new state; a client reads the counters
*before* it asks, so an answer older than a change is always stamped older than it.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
import threading
import time
from pathlib import Path

import xxhash

from pagestore import modes
from pagestore.layout import GENERATIONS
from ufs import uri as uris

FILE_NAME = GENERATIONS  # in the first page directory, which the page store leaves alone
MAGIC = int.from_bytes(b"DORAGEN1", sys.byteorder)
DEFAULT_BUCKETS = 4096
_HEADER_WORDS = 4
_EPOCH, _GLOBAL = 2, 3

Stamp = tuple[int, int, int]
"""What a reader saw for one path: (epoch, global counter, the path's bucket counter)."""


def bucket_of(uri: str, buckets: int) -> int:
    """The bucket of a canonical URI (the same on the worker and in every client)."""
    return int(xxhash.xxh3_64_intdigest(uri.encode())) % buckets


class GenerationFile:
    """The worker's side: creates (or reopens in place, so clients' mappings stay valid across
    worker restarts) and bumps the counters. Thread-safe: one lock around every bump.

    Raises OSError when the file cannot be created or its blocks allocated (a full or failing
    disk): the worker then runs without it, and same-host clients without a near-cache."""

    def __init__(self, path: Path, buckets: int = DEFAULT_BUCKETS) -> None:
        self.path = path
        size = 8 * (_HEADER_WORDS + buckets)
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
        self._words[_GLOBAL] += 1
        self._words[_EPOCH] = time.time_ns()

    def bump(self, uri: str) -> None:
        """Count a change to canonical ``uri``: its bucket and its parent's."""
        parent = uris.parent(uri)
        with self._lock:
            self._words[_HEADER_WORDS + bucket_of(uri, self._buckets)] += 1
            if parent is not None:
                self._words[_HEADER_WORDS + bucket_of(parent, self._buckets)] += 1

    def bump_all(self) -> None:
        """Count a change that may touch any path."""
        with self._lock:
            self._words[_GLOBAL] += 1

    def close(self) -> None:
        """Tell readers no worker counts changes any more. Idempotent."""
        with self._lock:
            if self._map.closed:
                return
            self._words[_EPOCH] = 0
            self._words.release()
            self._map.close()


class GenerationView:
    """A client's read-only view of a worker's counters. Thread-safe (reads only).

    Raises OSError if the file cannot be opened or mapped, ValueError if it is not a
    generation file."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ)
        size = len(self._map)
        if size < 8 * _HEADER_WORDS or size % 8:
            self._map.close()
            raise ValueError(f"{path} is not a generation file (size {size})")
        self._words = memoryview(self._map).cast("Q")
        if self._words[0] != MAGIC or len(self._words) != _HEADER_WORDS + self._words[1]:
            self._words.release()
            self._map.close()
            raise ValueError(f"{path} is not a generation file of this version")
        self._buckets = self._words[1]

    def stamp(self, uri: str) -> Stamp | None:
        """The counters that cover canonical ``uri`` now; None while no worker counts."""
        words = self._words
        epoch = words[_EPOCH]
        if epoch == 0:
            return None
        return (epoch, words[_GLOBAL], words[_HEADER_WORDS + bucket_of(uri, self._buckets)])

    def close(self) -> None:
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
            os.pwrite(fd, bytes(8), 8 * _EPOCH)
        raise


def _magic(fd: int) -> int:
    head = os.pread(fd, 8, 0)
    return int.from_bytes(head, sys.byteorder) if len(head) == 8 else 0
