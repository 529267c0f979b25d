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
        return self.parallelism_local if _local(uri) else self.parallelism

    @staticmethod
    def fill_batch_for(uri: str) -> int:
        """Files one fill task of a job on ``uri`` reads. On a local UFS the small ones are one
        request (``Ufs.read_files``), so a batch amortises the hops to the pool and to the UFS
        thread; on an object store each file is a request of its own, and batches stay small
        so that the fills of a large directory spread over the pool."""
        return LOCAL_FILL_BATCH if _local(uri) else FILL_BATCH


FILL_BATCH = 32
LOCAL_FILL_BATCH = 256


def _local(uri: str) -> bool:
    return uris.split(uri)[0] == "file"
