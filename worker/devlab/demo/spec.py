"""What the demo runs on, without importing anything heavy (the ``dora`` command line builds
its options from these defaults)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

# Bumped when the generator changes, so a cached dataset of the old generator is not reused.
GENERATOR_VERSION = 1


@dataclass(frozen=True)
class DatasetSpec:
    """What to generate: ``files`` Parquet files of ``rows_per_file`` trips each."""

    files: int = 64
    rows_per_file: int = 52_000
    seed: int = 7

    def digest(self) -> str:
        text = json.dumps({**asdict(self), "generator": GENERATOR_VERSION}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def file_name(self, index: int) -> str:
        return f"trips-{index:04d}.parquet"


def default_work_dir() -> Path:
    """Where datasets are cached and runs keep their state: ``$XDG_CACHE_HOME/doracache-demo``
    (``~/.cache/doracache-demo``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "doracache-demo"
