"""Load jobs' settings, built once from the configuration."""

from __future__ import annotations

from dataclasses import dataclass

from config import Config
from worker.load import keys


@dataclass(frozen=True)
class LoadOptions:
    """Bounds of the load-job executor (jobs at once, and listings and fills per job at once)
    and of the history of finished jobs (durations in ms)."""

    threads: int = 2
    parallelism: int = 8
    queue_size: int = 64
    history_size: int = 100
    history_ttl_ms: int = 3_600_000
    stop_timeout_ms: int = 10_000

    @classmethod
    def from_config(cls, config: Config) -> LoadOptions:
        return cls(
            threads=config.get(keys.THREADS),
            parallelism=config.get(keys.PARALLELISM),
            queue_size=config.get(keys.QUEUE_SIZE),
            history_size=config.get(keys.HISTORY_SIZE),
            history_ttl_ms=config.get(keys.HISTORY_TTL),
            stop_timeout_ms=config.get(keys.STOP_TIMEOUT),
        )
