"""Property keys owned by load jobs (prewarming metadata and pages)."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey

THREADS: PropertyKey[int] = PropertyKey(
    "dora.worker.load.threads",
    KeyType.INT,
    "2",
    "Load jobs that run at once; later ones wait in a queue.",
    minimum=1,
)
PARALLELISM: PropertyKey[int] = PropertyKey(
    "dora.worker.load.parallelism",
    KeyType.INT,
    "8",
    "Directory listings and file fills one load job runs at once.",
    minimum=1,
)
PARALLELISM_LOCAL: PropertyKey[int] = PropertyKey(
    "dora.worker.load.parallelism.local",
    KeyType.INT,
    "1",
    "Directory listings and file fills one load job runs at once on a local (file://) UFS. "
    "There they are CPU work in the worker's own process, and more threads contend for "
    "Python's GIL instead of overlapping waits (100k files, metadata only: 2.2 s with one "
    "thread, 3.5 s with 8).",
    minimum=1,
)
QUEUE_SIZE: PropertyKey[int] = PropertyKey(
    "dora.worker.load.queue.size",
    KeyType.INT,
    "64",
    "Load jobs that may wait for a thread; a submission beyond it is refused.",
    minimum=0,
)
HISTORY_SIZE: PropertyKey[int] = PropertyKey(
    "dora.worker.load.history.size",
    KeyType.INT,
    "100",
    "Finished load jobs kept for progress queries (the oldest go first).",
    minimum=0,
)
HISTORY_TTL: PropertyKey[int] = PropertyKey(
    "dora.worker.load.history.ttl",
    KeyType.DURATION,
    "1h",
    "How long a finished load job stays queryable.",
    minimum=0,
)
STOP_TIMEOUT: PropertyKey[int] = PropertyKey(
    "dora.worker.load.stop.timeout",
    KeyType.DURATION,
    "10s",
    "How long stopping the worker waits for cancelled load jobs to end.",
    minimum=0,
)

KEYS: list[PropertyKey[Any]] = [
    THREADS,
    PARALLELISM,
    PARALLELISM_LOCAL,
    QUEUE_SIZE,
    HISTORY_SIZE,
    HISTORY_TTL,
    STOP_TIMEOUT,
]
