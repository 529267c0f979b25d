"""Generation counters in a small memory-mapped file: the worker bumps them whenever cached
metadata changes, so a client on the same host can keep statuses and listings in its own
near-cache and check, with a few memory reads and no call, that nothing changed since it asked.

The file (the worker's :class:`worker.meta.generations.GenerationFile`, in its first page
directory, which same-host clients can read; a client finds its path in the worker's
``/v1/local``) holds, as native-endian unsigned 64-bit words:

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

import mmap
import sys
from pathlib import Path

import xxhash

MAGIC = int.from_bytes(b"DORAGEN1", sys.byteorder)
DEFAULT_BUCKETS = 4096
HEADER_WORDS = 4
EPOCH, GLOBAL = 2, 3
"""The indexes of the worker's epoch and of the global counter among the header's words."""

Stamp = tuple[int, int, int]
"""What a reader saw for one path: (epoch, global counter, the path's bucket counter)."""


def bucket_of(uri: str, buckets: int) -> int:
    """The bucket of a canonical URI (the same on the worker and in every client)."""
    return int(xxhash.xxh3_64_intdigest(uri.encode())) % buckets


class GenerationView:
    """A client's read-only view of a worker's counters. Thread-safe (reads only).

    Raises OSError if the file cannot be opened or mapped, ValueError if it is not a
    generation file."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ)
        size = len(self._map)
        if size < 8 * HEADER_WORDS or size % 8:
            self._map.close()
            raise ValueError(f"{path} is not a generation file (size {size})")
        self._words = memoryview(self._map).cast("Q")
        if self._words[0] != MAGIC or len(self._words) != HEADER_WORDS + self._words[1]:
            self._words.release()
            self._map.close()
            raise ValueError(f"{path} is not a generation file of this version")
        self._buckets = self._words[1]

    def stamp(self, uri: str) -> Stamp | None:
        """The counters that cover canonical ``uri`` now; None while no worker counts."""
        words = self._words
        epoch = words[EPOCH]
        if epoch == 0:
            return None
        return (epoch, words[GLOBAL], words[HEADER_WORDS + bucket_of(uri, self._buckets)])

    def close(self) -> None:
        self._words.release()
        self._map.close()
