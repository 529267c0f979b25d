"""pandas, pyarrow, DuckDB and Polars through dora URLs read the same data as direct reads.

pandas (2.x) only hands URLs of the form ``scheme://`` to fsspec, so pandas is given
``dora://file:///...`` (the same filesystem and path as ``dora::file:///...``); pyarrow and
``fsspec.open`` take the chained ``dora::`` form. DuckDB routes only ``dora://`` URLs to a
filesystem registered with ``register_filesystem``, globs included. Polars sends no unknown
scheme to fsspec natively: it reads ``dora://`` URLs with ``use_pyarrow=True`` (through
``fsspec.open`` with ``storage_options``), and datasets through ``scan_pyarrow_dataset``.
"""

from pathlib import Path
from typing import Any

import fsspec
import pandas as pd
import polars as pl
import polars.testing
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from tests.worker.client.conftest import (
    DUCKDB_QUERIES,
    client_config,
    duckdb_frame,
    frame,
    write_tables,
)
from worker.api.app import create_app
from worker.client import DoraFileSystem
from worker.service import WorkerService


@pytest.fixture
def storage_options(service: WorkerService) -> dict[str, Any]:
    import httpx

    return {
        "transport": httpx.ASGITransport(app=create_app(service)),
        "config": client_config(),
        "skip_instance_cache": True,
    }


def test_pandas_parquet_round_trip(data_dir: Path, storage_options: dict[str, Any]) -> None:
    df = frame()
    url = f"dora://file://{data_dir}/t.parquet"
    df.to_parquet(url, storage_options=storage_options)
    assert (data_dir / "t.parquet").exists()
    through = pd.read_parquet(url, storage_options=storage_options)
    direct = pd.read_parquet(data_dir / "t.parquet")
    pd.testing.assert_frame_equal(through, direct)
    pd.testing.assert_frame_equal(through, df)
    columns = pd.read_parquet(url, columns=["id", "name"], storage_options=storage_options)
    pd.testing.assert_frame_equal(columns, df[["id", "name"]])
    with fsspec.open(f"dora::file://{data_dir}/t.parquet", **storage_options) as handle:
        pd.testing.assert_frame_equal(pd.read_parquet(handle), df)


def test_pyarrow_dataset_with_hive_partitions(
    data_dir: Path, storage_options: dict[str, Any]
) -> None:
    table = pa.Table.from_pandas(frame(), preserve_index=False)
    pq.write_to_dataset(table, data_dir / "ds", partition_cols=["year"])
    fs, path = fsspec.core.url_to_fs(f"dora::file://{data_dir}/ds", **storage_options)
    through = ds.dataset(path, filesystem=fs, format="parquet", partitioning="hive")
    direct = ds.dataset(data_dir / "ds", format="parquet", partitioning="hive")
    assert sorted(through.files) != [] and len(through.files) == len(direct.files)
    got = through.to_table().sort_by("id")
    want = direct.to_table().sort_by("id")
    assert got.equals(want)
    filtered = through.to_table(filter=ds.field("year") == 2024).num_rows
    assert filtered == direct.to_table(filter=ds.field("year") == 2024).num_rows > 0


def test_pandas_reads_a_partitioned_directory_and_csv(
    data_dir: Path, storage_options: dict[str, Any]
) -> None:
    df = frame(1000)
    pq.write_to_dataset(
        pa.Table.from_pandas(df, preserve_index=False), data_dir / "p", partition_cols=["year"]
    )
    through = pd.read_parquet(f"dora://file://{data_dir}/p", storage_options=storage_options)
    direct = pd.read_parquet(data_dir / "p")
    pd.testing.assert_frame_equal(
        through.sort_values("id").reset_index(drop=True),
        direct.sort_values("id").reset_index(drop=True),
    )
    df.to_csv(data_dir / "t.csv", index=False)
    csv = pd.read_csv(f"dora://file://{data_dir}/t.csv", storage_options=storage_options)
    pd.testing.assert_frame_equal(csv, pd.read_csv(data_dir / "t.csv"))


@pytest.mark.parametrize("query", DUCKDB_QUERIES.values(), ids=DUCKDB_QUERIES.keys())
def test_duckdb_reads_files_globs_and_hive_partitions(
    query: str, data_dir: Path, storage_options: dict[str, Any]
) -> None:
    write_tables(data_dir)
    fs = DoraFileSystem(**storage_options)
    through = duckdb_frame(query.format(root=f"dora://file://{data_dir}"), fs)
    direct = duckdb_frame(query.format(root=data_dir))
    assert len(direct) == 3000
    pd.testing.assert_frame_equal(through, direct)


def test_polars_reads_files_through_fsspec_and_datasets_through_pyarrow(
    data_dir: Path, storage_options: dict[str, Any]
) -> None:
    write_tables(data_dir)
    root = f"dora://file://{data_dir}"
    through = pl.read_parquet(
        f"{root}/t.parquet", use_pyarrow=True, storage_options=storage_options
    )
    polars.testing.assert_frame_equal(through, pl.read_parquet(data_dir / "t.parquet"))
    csv = pl.read_csv(f"{root}/csv/c0.csv", use_pyarrow=True, storage_options=storage_options)
    polars.testing.assert_frame_equal(csv, pl.read_csv(data_dir / "csv" / "c0.csv"))
    fs, path = fsspec.core.url_to_fs(f"{root}/ds", **storage_options)
    dataset = ds.dataset(path, filesystem=fs, format="parquet", partitioning="hive")
    lazy = pl.scan_pyarrow_dataset(dataset).filter(pl.col("year") == 2024).sort("id").collect()
    direct = ds.dataset(data_dir / "ds", format="parquet", partitioning="hive")
    want = pl.scan_pyarrow_dataset(direct).filter(pl.col("year") == 2024).sort("id").collect()
    assert len(want) > 0
    polars.testing.assert_frame_equal(lazy, want)
