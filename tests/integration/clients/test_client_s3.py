"""The ``dora`` filesystem against a worker fronting a real S3 server (SeaweedFS): fsspec's
abstract suite (with SeaweedFS's known quirk marked xfail, with the reason), outside changes,
pandas/pyarrow, DuckDB, Polars, zarr and xarray through dora URLs, the asynchronous API, and the
UFS fallback's version pinning."""

import asyncio
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import httpx
import numpy as np
import pandas as pd
import polars as pl
import polars.testing
import pyarrow.dataset as ds
import pytest
import s3fs
import xarray as xr
import zarr
from fsspec.tests.abstract import (
    AbstractCopyTests,
    AbstractFixtures,
    AbstractGetTests,
    AbstractOpenTests,
    AbstractPipeTests,
    AbstractPutTests,
)

from tests.integration.conftest import BUCKET
from tests.integration.harness import WorkerProcess
from tests.worker.client.conftest import (
    DUCKDB_QUERIES,
    client_config,
    duckdb_frame,
    refusing,
    replace_before_later_chunk,
    write_tables,
)
from tests.worker.conftest import open_service
from worker.api.app import create_app
from worker.client import DoraFileSystem, VersionMismatch
from worker.devlab.local.s3 import LocalS3
from worker.service import WorkerService

pytestmark = pytest.mark.integration


@pytest.fixture
def s3_service(tmp_path: Path, seaweedfs: LocalS3) -> Iterator[WorkerService]:
    service = open_service(
        tmp_path / "work",
        f"s3://{BUCKET}",
        "dora.worker.page.store.page.size=64KB",
        *seaweedfs.storage_defines(),
    )
    yield service
    service.close()


@pytest.fixture
def storage_options(s3_service: WorkerService, seaweedfs: LocalS3) -> dict[str, Any]:
    # The fallback's own UFS settings, as a client on a worker's host would have them.
    return {
        "transport": httpx.ASGITransport(app=create_app(s3_service)),
        "config": client_config(*seaweedfs.storage_defines()),
        "skip_instance_cache": True,
    }


@pytest.fixture
def dora(storage_options: dict[str, Any]) -> DoraFileSystem:
    return DoraFileSystem(**storage_options)


@pytest.fixture
def plain_root(request: pytest.FixtureRequest) -> str:
    """A fresh prefix whose name has no glob characters (test ids carry ``[...]``, which the
    glob tests would read as patterns)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "-", request.node.name)[:40]
    return f"s3://{BUCKET}/{name}-{uuid.uuid4().hex[:8]}"


SEAWEEDFS_EMPTIED_DIRECTORIES = (
    "SeaweedFS keeps a directory entry after the last object under it is deleted: delimiter "
    "listings keep showing it and a HEAD of its key answers as a 0-byte object. These tests "
    "delete a target and reuse its name, so listings through the worker (directory by directory) "
    "still show the old subdirectories. Plain s3fs against SeaweedFS fails the same tests, except "
    "the glob edge cases, which its find passes only because it uses one flat listing."
)
# Measured: these fail on SeaweedFS for the reason above, with plain s3fs run as the control.
SEAWEEDFS_XFAILS = frozenset(
    f"test_{verb}_{case}"
    for verb in ("copy", "put")
    for case in (
        "directory_to_existing_directory",
        "directory_to_new_directory",
        "directory_without_files_with_same_name_prefix",
        "glob_edge_cases",
        "glob_to_existing_directory",
        "glob_to_new_directory",
    )
) | {"test_put_directory_recursive"}


class DoraS3Fixtures(AbstractFixtures):  # type: ignore[misc]
    @pytest.fixture(autouse=True)
    def _seaweedfs_quirks(self, request: pytest.FixtureRequest) -> None:
        if request.node.originalname in SEAWEEDFS_XFAILS:
            # Not run: they are the slowest of the suite and known to fail on this server.
            marker = pytest.mark.xfail(reason=SEAWEEDFS_EMPTIED_DIRECTORIES, run=False)
            request.node.add_marker(marker)

    @pytest.fixture
    def fs(self, dora: DoraFileSystem) -> DoraFileSystem:
        return dora

    @pytest.fixture
    def fs_path(self, plain_root: str) -> str:
        return plain_root

    @pytest.fixture
    def fs_join(self) -> Callable[..., str]:
        return lambda *parts: "/".join(parts)

    @pytest.fixture
    def supports_empty_directories(self) -> bool:
        return False  # S3 has no directories, only key prefixes


class TestDoraS3Copy(AbstractCopyTests, DoraS3Fixtures):  # type: ignore[misc]
    pass


class TestDoraS3Get(AbstractGetTests, DoraS3Fixtures):  # type: ignore[misc]
    pass


class TestDoraS3Put(AbstractPutTests, DoraS3Fixtures):  # type: ignore[misc]
    pass


class TestDoraS3Pipe(AbstractPipeTests, DoraS3Fixtures):  # type: ignore[misc]
    pass


class TestDoraS3Open(AbstractOpenTests, DoraS3Fixtures):  # type: ignore[misc]
    pass


def test_outside_changes_are_seen_with_sync_interval_zero(
    dora: DoraFileSystem, s3_raw: s3fs.S3FileSystem, s3_root: str
) -> None:
    uri = f"{s3_root}/outside.txt"
    assert not dora.exists(uri)
    s3_raw.pipe_file(uri.removeprefix("s3://"), b"one")
    assert dora.exists(uri, sync_interval=0)
    assert dora.cat_file(uri) == b"one"
    old = dora.info(uri)
    s3_raw.pipe_file(uri.removeprefix("s3://"), b"two!")
    assert dora.info(uri)["version"] == old["version"]  # the default trusts the cache
    fresh = dora.info(uri, sync_interval=0)
    assert (fresh["size"], fresh["version"]) == (4, fresh["content_hash"])
    assert fresh["version"] != old["version"]
    assert dora.cat_file(uri, sync_interval=0) == b"two!"


def test_pandas_and_pyarrow_through_dora_urls(
    storage_options: dict[str, Any], s3_raw: s3fs.S3FileSystem, s3_root: str
) -> None:
    df = pd.DataFrame({"id": range(3000), "year": [2023, 2024, 2025] * 1000})
    df["name"] = "row-" + df["id"].astype(str)
    url = f"dora://{s3_root}/table.parquet"
    df.to_parquet(url, storage_options=storage_options)
    with s3_raw.open(f"{s3_root}/table.parquet".removeprefix("s3://"), "rb") as handle:
        direct = pd.read_parquet(handle)
    pd.testing.assert_frame_equal(pd.read_parquet(url, storage_options=storage_options), direct)
    df.to_parquet(f"dora://{s3_root}/ds", partition_cols=["year"], storage_options=storage_options)
    fs, path = fsspec.core.url_to_fs(f"dora::{s3_root}/ds", **storage_options)
    table = ds.dataset(path, filesystem=fs, format="parquet", partitioning="hive").to_table()
    got = table.to_pandas().sort_values("id").reset_index(drop=True)
    assert got["id"].tolist() == df["id"].tolist()
    assert got["name"].tolist() == df["name"].tolist()


@pytest.fixture
def s3_tables(tmp_path: Path, s3_raw: s3fs.S3FileSystem, plain_root: str) -> str:
    """The tables of ``write_tables`` under a fresh prefix; its URI."""
    local = tmp_path / "tables"
    local.mkdir()
    write_tables(local)
    s3_raw.put(str(local), plain_root.removeprefix("s3://"), recursive=True)
    return plain_root


@pytest.mark.parametrize("query", DUCKDB_QUERIES.values(), ids=DUCKDB_QUERIES.keys())
def test_duckdb_through_dora_reads_what_it_reads_from_s3_directly(
    query: str, dora: DoraFileSystem, s3_raw: s3fs.S3FileSystem, s3_tables: str
) -> None:
    through = duckdb_frame(query.format(root=f"dora://{s3_tables}"), dora)
    direct = duckdb_frame(query.format(root=s3_tables), s3_raw)
    assert len(direct) == 3000
    pd.testing.assert_frame_equal(through, direct)


def test_polars_with_string_storage_options_against_a_worker_process(
    tmp_path: Path,
    seaweedfs: LocalS3,
    s3_raw: s3fs.S3FileSystem,
    s3_tables: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Polars passes ``storage_options`` as strings only: every option works in that form."""
    for name in [name for name in os.environ if name.startswith("DORA_")]:
        monkeypatch.delenv(name)
    worker = WorkerProcess(
        tmp_path, f"dora.worker.ufs.roots=s3://{BUCKET}", *seaweedfs.storage_defines()
    )
    try:
        options = {
            "workers": f"{worker.address},127.0.0.1:1",  # the second never answers
            "timeout": "30",
            "sync_interval": "0",
            "fallback_to_ufs": "false",
            "virtual_nodes": "16",
        }
        url = f"dora://{s3_tables}/t.parquet"
        with s3_raw.open(f"{s3_tables}/t.parquet", "rb") as handle:
            direct = pl.read_parquet(handle)
        through = pl.read_parquet(url, use_pyarrow=True, storage_options=options)
        polars.testing.assert_frame_equal(through, direct)
        with s3_raw.open(f"{s3_tables}/csv/c1.csv", "rb") as handle:
            direct_csv = pl.read_csv(handle)
        csv = pl.read_csv(
            f"dora://{s3_tables}/csv/c1.csv", use_pyarrow=True, storage_options=options
        )
        polars.testing.assert_frame_equal(csv, direct_csv)
    finally:
        worker.stop()


@pytest.fixture
def worker_process(
    tmp_path: Path, seaweedfs: LocalS3, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """A ``dora worker start`` process in front of SeaweedFS; its address."""
    for name in [name for name in os.environ if name.startswith("DORA_")]:
        monkeypatch.delenv(name)
    worker = WorkerProcess(
        tmp_path, f"dora.worker.ufs.roots=s3://{BUCKET}", *seaweedfs.storage_defines()
    )
    try:
        yield worker.address
    finally:
        worker.stop()


def test_zarr_and_xarray_through_dora_urls_store_what_s3_holds(
    worker_process: str, s3_raw: s3fs.S3FileSystem, plain_root: str
) -> None:
    """zarr 3 builds the filesystem itself from the ``dora::`` URL (``asynchronous=True``)."""
    options = {"workers": worker_process, "sync_interval": "0"}
    url = f"dora::{plain_root}/a.zarr"
    values = np.random.default_rng(5).normal(size=(120, 90))
    array = zarr.open_array(
        url, mode="w", shape=values.shape, chunks=(40, 30), dtype="float64",
        storage_options=options,
    )  # fmt: skip
    array[:] = values
    np.testing.assert_array_equal(
        zarr.open_array(url, mode="r", storage_options=options)[:], values
    )
    keys = s3_raw.find(f"{plain_root}/a.zarr".removeprefix("s3://"))
    assert len(keys) == 1 + 3 * 3  # zarr.json and the chunks
    dora = DoraFileSystem(workers=worker_process, skip_instance_cache=True)
    assert dora.cat([f"s3://{key}" for key in keys]) == {
        f"s3://{key}": data for key, data in s3_raw.cat(keys).items()
    }

    dataset = xr.Dataset({"t": (("time", "x"), values)}, coords={"time": np.arange(120)})
    dataset.to_zarr(
        f"dora::{plain_root}/d.zarr", mode="w", storage_options=options, consolidated=False
    )
    through = xr.open_zarr(
        f"dora::{plain_root}/d.zarr", storage_options=options, consolidated=False
    ).load()
    xr.testing.assert_identical(through, dataset)


def test_the_asynchronous_api_reads_what_s3_holds(
    worker_process: str, s3_raw: s3fs.S3FileSystem, plain_root: str
) -> None:
    contents = {f"{plain_root}/f{i:02d}.bin": os.urandom(50_000 + i) for i in range(24)}
    for uri, data in contents.items():
        s3_raw.pipe_file(uri.removeprefix("s3://"), data)
    uris = list(contents)

    async def scenario() -> None:
        afs = DoraFileSystem(workers=worker_process, asynchronous=True, skip_instance_cache=True)
        assert await afs._cat(uris) == contents
        ranges = await afs._cat_ranges(uris, [10] * len(uris), [1010] * len(uris))
        assert ranges == [contents[uri][10:1010] for uri in uris]
        assert sorted(await afs._find(plain_root)) == uris
        info = await afs._info(uris[0])
        assert (info["size"], info["type"]) == (50_000, "file")

    asyncio.run(scenario())


def test_put_file_into_a_prefix_keeps_the_file_name(
    dora: DoraFileSystem, s3_raw: s3fs.S3FileSystem, s3_root: str, tmp_path: Path
) -> None:
    local = tmp_path / "x.txt"
    local.write_bytes(b"hello")
    dora.put_file(str(local), f"{s3_root}/dir/")
    assert s3_raw.cat_file(f"{s3_root}/dir/x.txt".removeprefix("s3://")) == b"hello"
    assert not s3_raw.isfile(f"{s3_root}/dir".removeprefix("s3://"))


def test_warm_reads_come_from_the_cache(dora: DoraFileSystem, s3_root: str) -> None:
    data = bytes(range(256)) * 4096
    uri = f"{s3_root}/warm.bin"
    dora.pipe_file(uri, data)
    assert dora.cat_file(uri) == data
    deadline = time.monotonic() + 10
    while dora.info(uri)["cached_bytes"] < len(data) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dora.info(uri)["cached_bytes"] == len(data)
    assert dora.cat_file(uri, 1000, 2000) == data[1000:2000]


def test_the_ufs_fallback_never_mixes_two_versions_of_an_object(
    seaweedfs: LocalS3,
    s3_raw: s3fs.S3FileSystem,
    s3_root: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = f"{s3_root}/replaced.bin".removeprefix("s3://")
    s3_raw.pipe_file(key, b"a" * 30_000)
    # Two chunks, the second read after the object is replaced (see test_fallback.py).
    replace_before_later_chunk(monkeypatch, lambda: s3_raw.pipe_file(key, b"b" * 30_000))
    offline = DoraFileSystem(
        transport=refusing(),
        config=client_config(*seaweedfs.storage_defines(), "dora.user.client.read.chunk.size=16KB"),
        skip_instance_cache=True,
    )
    with pytest.raises(VersionMismatch):
        offline.cat_file(f"s3://{key}")
    assert offline.cat_file(f"s3://{key}") == b"b" * 30_000
