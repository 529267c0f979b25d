"""Keys shared by every component: where the worker keeps its state."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey

WORK_DIR: PropertyKey[str] = PropertyKey(
    "dora.work.dir",
    KeyType.STRING,
    "~/.cache/doracache",
    "Directory under which the worker keeps its metastore and pages unless they are set apart.",
)

KEYS: list[PropertyKey[Any]] = [WORK_DIR]
