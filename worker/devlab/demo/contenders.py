"""The ways the demo reads the dataset, run side by side on the same data:

- **native**: ``spark.read.parquet("webhdfs://worker/...")``, Spark's own Parquet reader
  through the cache (path rule: re-check metadata on every call, so a change is seen);
- **native, pass-through**: the same reader and HTTP hop on a copy of the dataset whose path
  rule turns caching off (``NO_CACHE``): only the cache differs;
- **python dora source**: ``format("dora")``, whole files through the worker into Python;
- **local copy**: Spark reading a copy on local disk, the machine's limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from worker.spark.webhdfs import webhdfs_url

CACHED, PASSTHROUGH = "taxi", "taxi-passthrough"
SYNC = "dora.user.file.metadata.sync.interval"
READ_TYPE = "dora.user.file.readtype.default"


def path_rules(base: str, sync: str = "0") -> str:
    """The worker's ``dora.worker.path.conf`` for the two dataset copies: metadata re-checked
    as ``sync`` says (``0``: on every call, so a change is seen), the copy not cached."""
    return (
        f"dora.worker.path.conf={base}/{CACHED} {SYNC}={sync}, "
        f"{base}/{PASSTHROUGH} {SYNC}={sync} {READ_TYPE}=NO_CACHE"
    )


@dataclass(frozen=True)
class Worker:
    """The running worker the contenders read through."""

    address: str
    token: str | None
    s3_endpoint: str | None = None
    """The worker's S3 endpoint (``http://host:port``), when the demo turned it on."""
    s3_secret: str | None = None
    """The secret of the endpoint's key pair (made per run)."""

    def invalidate(self, uri: str) -> None:
        """Drop the worker's metadata and pages under ``uri`` (the next run starts cold)."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        answer = httpx.post(
            f"http://{self.address}/v1/invalidate",
            params={"path": uri, "recursive": "true"},
            headers=headers,
            timeout=60.0,
        )
        answer.raise_for_status()


class Contender(Protocol):
    @property
    def name(self) -> str: ...

    def make_cold(self) -> None:
        """Forget what the cache holds for this contender's data."""
        ...

    def load(self, spark: Any, run: str) -> Any:
        """The dataset as a DataFrame for run ``cold``, ``warm`` or ``changed``."""
        ...

    def sync(self, run: str) -> str:
        """How freshness is decided for ``run``, as the table shows it."""
        ...


@dataclass(frozen=True)
class Native:
    """Spark's Parquet reader over ``webhdfs://`` (cached or pass-through by path rule)."""

    name: str
    worker: Worker
    uri: str
    cached: bool
    rule: str = "0"

    def make_cold(self) -> None:
        if self.cached:
            self.worker.invalidate(self.uri)

    def load(self, spark: Any, run: str) -> Any:
        return spark.read.parquet(webhdfs_url(self.worker.address, self.uri))

    def sync(self, run: str) -> str:
        return f"rule {self.rule}"


@dataclass(frozen=True)
class PythonSource:
    """The ``dora`` Python data source against the same worker, sync interval per call."""

    name: str
    worker: Worker
    uri: str
    max_partition_bytes: str

    def make_cold(self) -> None:
        self.worker.invalidate(self.uri)

    def load(self, spark: Any, run: str) -> Any:
        reader = (
            spark.read.format("dora")
            .option("format", "parquet")
            .option("workers", self.worker.address)
            .option("sync_interval", self.sync(run))
            .option("maxPartitionBytes", self.max_partition_bytes)
        )
        if self.worker.token:
            reader = reader.option("token", self.worker.token)
        return reader.load(self.uri)

    def sync(self, run: str) -> str:
        return "0" if run == "changed" else "-1"


@dataclass(frozen=True)
class LocalCopy:
    """Spark reading a copy of the dataset on local disk: no cache, no network."""

    name: str
    directory: Path

    def make_cold(self) -> None:
        """The OS page cache is not ours to drop: local reads are as warm as the disk is."""

    def load(self, spark: Any, run: str) -> Any:
        return spark.read.parquet(f"file://{self.directory}")

    def sync(self, run: str) -> str:
        return "-"


def contenders(
    worker: Worker, base: str, local: Path, partition_bytes: str, rule: str = "0"
) -> list[Contender]:
    """The four contenders over the dataset copies under ``base`` and the local copy."""
    return [
        Native("native (webhdfs)", worker, f"{base}/{CACHED}", cached=True, rule=rule),
        Native("native, pass-through", worker, f"{base}/{PASSTHROUGH}", cached=False, rule=rule),
        PythonSource("python dora source", worker, f"{base}/{CACHED}", partition_bytes),
        LocalCopy("spark on a local copy", local),
    ]
