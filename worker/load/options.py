"""Load jobs' settings, built once from the configuration."""

from __future__ import annotations

from dataclasses import dataclass

from config import Config
from ufs import uri as uris
from worker.load import keys


@dataclass(frozen=True)
class LoadOptions:
    """Bounds of the load-job executor (jobs at once, and listings and fills per job at once,
    with a bound of their own on a local UFS) and of the history of finished jobs (durations in
    ms)."""

    threads: int = 2
    parallelism: int = 8
    parallelism_local: int = 1
    queue_size: int = 64
    history_size: int = 100
    history_ttl_ms: int = 3_600_000
    stop_timeout_ms: int = 10_000

    @classmethod
    def from_config(cls, config: Config) -> LoadOptions:
        return cls(
            threads=config.get(keys.THREADS),
            parallelism=config.get(keys.PARALLELISM),
            parallelism_local=config.get(keys.PARALLELISM_LOCAL),
            queue_size=config.get(keys.QUEUE_SIZE),
            history_size=config.get(keys.HISTORY_SIZE),
            history_ttl_ms=config.get(keys.HISTORY_TTL),
            stop_timeout_ms=config.get(keys.STOP_TIMEOUT),
        )

    def parallelism_for(self, uri: str) -> int:
        """Listings and fills at once for a job on ``uri`` (a canonical URI)."""
        return self.parallelism_local if uris.split(uri)[0] == "file" else self.parallelism
