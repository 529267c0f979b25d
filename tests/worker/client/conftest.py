"""Client fixtures: client configs, and a ``dora`` filesystem over the real worker app in process
(``httpx.ASGITransport``) fronting a local directory."""

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import httpx
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fsspec.spec import AbstractFileSystem

from config import Config, load_config
from ufs.adapter import Ufs
from worker.api.app import create_app
from worker.client import DoraFileSystem
from worker.keys import build_registry
from worker.service import WorkerService

WORKER = "worker-0:28080"


def client_config(*defines: str, workers: str = WORKER) -> Config:
    """A client config independent of the environment running the tests."""
    return load_config(
        build_registry(), environ={}, defines=[f"dora.user.workers={workers}", *defines]
    )


def dora_fs(service: WorkerService, *defines: str, **options: object) -> DoraFileSystem:
    """A fresh (uncached) filesystem talking to ``service`` through its ASGI app."""
    return DoraFileSystem(
        transport=httpx.ASGITransport(app=create_app(service)),
        config=client_config(*defines),
        skip_instance_cache=True,
        **options,
    )


@pytest.fixture
def make_fs(service: WorkerService) -> Callable[..., DoraFileSystem]:
    def make(*defines: str, **options: object) -> DoraFileSystem:
        return dora_fs(service, *defines, **options)

    return make


@pytest.fixture
def fs(service: WorkerService) -> DoraFileSystem:
    return dora_fs(service)


@pytest.fixture
def root(data_dir: Path) -> str:
    """The worker's mount root as a URI."""
    return f"file://{data_dir}"


def write_outside(path: Path, data: bytes) -> None:
    """Change a file behind the worker's back, with an mtime it cannot confuse."""
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_bytes(data)
    os.utime(path, ns=(time.time_ns(), max(time.time_ns(), before + 1_000_000)))


def refusing() -> httpx.MockTransport:
    """A transport on which every worker refuses connections (none is reachable)."""

    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    return httpx.MockTransport(handler)


def replace_before_later_chunk(
    monkeypatch: pytest.MonkeyPatch, replace: Callable[[], None]
) -> None:
    """Run ``replace`` (which replaces a real file) once, just before the first UFS read past
    offset 0, once the read at offset 0 is done: in a chunked read through the UFS fallback, the
    moment the second chunk's version is checked and its bytes are about to be read; in a
    worker's read, once the first page is ready to stream and the next are being fetched."""
    real_read = Ufs.read
    lock = threading.Lock()
    first_read = threading.Event()
    done: list[bool] = []

    def read(self: Ufs, uri: str, offset: int, *args: Any, **kwargs: Any) -> bytes:
        if offset > 0:
            first_read.wait(timeout=60)
            with lock:
                if not done:
                    done.append(True)
                    replace()
        try:
            return real_read(self, uri, offset, *args, **kwargs)
        finally:
            if offset == 0:
                first_read.set()

    monkeypatch.setattr(Ufs, "read", read)


class BeforeRead(httpx.BaseTransport):
    """Sends every request through ``inner``, and runs ``hook`` once, just before the
    ``nth`` read (``/v1/read``) is sent."""

    def __init__(self, inner: httpx.BaseTransport, nth: int, hook: Callable[[], object]) -> None:
        self.inner = inner
        self.nth = nth
        self.hook = hook
        self.reads = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/read":
            self.reads += 1
            if self.reads == self.nth:
                self.hook()
        return self.inner.handle_request(request)


def frame(rows: int = 5000) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "id": np.arange(rows),
            "value": rng.normal(size=rows),
            "name": [f"row-{i}" for i in range(rows)],
            "year": rng.choice([2023, 2024, 2025], size=rows),
        }
    )


DUCKDB_QUERIES = {
    "one file": "select * from read_parquet('{root}/t.parquet')",
    "glob": "select * from read_parquet('{root}/parts/*.parquet')",
    "recursive glob with hive partitions": (
        "select * from read_parquet('{root}/ds/**/*.parquet', hive_partitioning=true)"
    ),
    "csv glob": "select * from read_csv('{root}/csv/*.csv')",
}


def write_tables(root: Path) -> None:
    """One Parquet file, three Parquet parts, a hive-partitioned dataset and two CSV files."""
    df = frame(3000)
    df.to_parquet(root / "t.parquet")
    for path in (root / "parts", root / "csv"):
        path.mkdir()
    for i in range(3):
        df[i * 1000 : (i + 1) * 1000].to_parquet(root / "parts" / f"part-{i}.parquet")
    pq.write_to_dataset(
        pa.Table.from_pandas(df, preserve_index=False), root / "ds", partition_cols=["year"]
    )
    for i in range(2):
        df[i * 1500 : (i + 1) * 1500].to_csv(root / "csv" / f"c{i}.csv", index=False)


def duckdb_frame(query: str, fs: AbstractFileSystem | None = None) -> pd.DataFrame:
    """The rows of ``query`` sorted by ``id``, run with ``fs`` registered (if given)."""
    connection = duckdb.connect()
    if fs is not None:
        connection.register_filesystem(fs)
    return connection.sql(query).df().sort_values("id").reset_index(drop=True)
