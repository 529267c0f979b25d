"""Property keys owned by the multi-process worker (:mod:`worker.procs`)."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey

PROCESSES: PropertyKey[int] = PropertyKey(
    "dora.worker.processes",
    KeyType.INT,
    "1",
    "Processes serving the worker's port (SO_REUSEPORT spreads connections over them): the "
    "primary, which owns the metastore, the page index, feeds, load jobs and the console, and "
    "N-1 front processes that answer REST v1 status, list and read and WebHDFS GETFILESTATUS, "
    "LISTSTATUS and OPEN from the near-cache and the page files and pass every other call to "
    "the primary. 1: the primary alone (the default: on the 2-core host measured, more did "
    "not clearly pay; see docs/operations.md).",
    minimum=1,
    maximum=256,
)

KEYS: list[PropertyKey[Any]] = [PROCESSES]
