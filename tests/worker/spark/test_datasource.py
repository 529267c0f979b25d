"""The ``dora`` data source in local-mode Spark over a local-directory UFS: the same rows and
aggregates as a direct read, one sidecar shared by concurrent tasks and owned by the executor
JVM, and the sync interval deciding whether a change in the UFS is seen."""

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from worker.devlab.demo import pipeline
from worker.devlab.demo.dataset import trips
from worker.devlab.demo.spec import DatasetSpec
from worker.spark import procs
from worker.spark.mapfiles import map_files
from worker.spark.session import local_session
from worker.spark.sidecar import OWNERS_DIR, running_worker, stop_worker, worker_pids

pytestmark = pytest.mark.integration
SPEC = DatasetSpec(files=4, rows_per_file=3000, seed=11)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session(2, "doracache-tests", progress=False)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def ufs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ufs")


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    state = tmp_path_factory.mktemp("sidecar")
    yield state
    stop_worker(state)


@pytest.fixture(scope="module")
def taxi(ufs: Path) -> Path:
    directory = ufs / "taxi"
    directory.mkdir()
    for index in range(SPEC.files):
        pq.write_table(trips(SPEC, index), directory / SPEC.file_name(index))
    (directory / "_SUCCESS").write_bytes(b"")  # a job marker, not data
    return directory


def reader(spark: Any, ufs: Path, state_dir: Path, fmt: str, **options: str) -> Any:
    return (
        spark.read.format("dora")
        .option("format", fmt)
        .option("state_dir", str(state_dir))
        .option("dora.worker.ufs.roots", f"file://{ufs}")
        .options(**options)
    )


def direct(directory: Path) -> pa.Table:
    return pa.concat_tables(pq.read_table(p) for p in sorted(directory.glob("*.parquet")))


def test_parquet_rows_and_aggregates_equal_a_direct_read(
    spark: Any, ufs: Path, state_dir: Path, taxi: Path
) -> None:
    df = reader(spark, ufs, state_dir, "parquet", maxPartitionBytes="64KB").load(f"file://{taxi}")
    assert df.rdd.getNumPartitions() == SPEC.files
    expected = direct(taxi)
    assert df.columns == expected.column_names
    got = sorted(tuple(row) for row in df.collect())
    assert got == sorted(tuple(row.values()) for row in expected.to_pylist())
    assert pipeline.spark_aggregate(df) == pipeline.arrow_aggregate([expected])


def test_csv_with_a_header_equals_a_direct_read(
    spark: Any, ufs: Path, state_dir: Path, taxi: Path
) -> None:
    directory = ufs / "csv"
    directory.mkdir()
    columns = ["pickup_at", "pickup_zone", "passenger_count", "fare_amount", "payment_type"]
    for index in range(2):
        table = trips(SPEC, index).select(columns)
        table = table.set_column(4, "payment_type", table["payment_type"].cast(pa.string()))
        pacsv.write_csv(table, directory / f"part-{index}.csv")
    df = reader(spark, ufs, state_dir, "csv", header="true").load(f"file://{directory}")
    expected = pa.concat_tables(pacsv.read_csv(p) for p in sorted(directory.glob("*.csv")))
    assert df.columns == columns
    assert sorted(tuple(r) for r in df.collect()) == sorted(
        tuple(r.values()) for r in expected.to_pylist()
    )
    totals = df.groupBy("payment_type").agg(F.count("*"), F.sum("fare_amount")).collect()
    by_type = {r[0]: (r[1], r[2]) for r in totals}
    frame = expected.to_pandas().groupby("payment_type")["fare_amount"].agg(["count", "sum"])
    assert by_type.keys() == set(frame.index)
    for kind, (count, total) in by_type.items():
        assert count == frame.loc[kind, "count"]
        assert total == pytest.approx(frame.loc[kind, "sum"], rel=1e-12)


def test_json_text_and_binary_files(spark: Any, ufs: Path, state_dir: Path) -> None:
    directory = ufs / "mixed"
    directory.mkdir()
    (directory / "a.jsonl").write_text('{"id": 1, "name": "x"}\n{"id": 2, "name": "y"}\n')
    load = f"file://{directory}/a.jsonl"
    rows = reader(spark, ufs, state_dir, "json").load(load).orderBy("id").collect()
    assert [(r["id"], r["name"]) for r in rows] == [(1, "x"), (2, "y")]
    text = reader(spark, ufs, state_dir, "text").load(load).collect()
    assert [r["value"] for r in text] == ['{"id": 1, "name": "x"}', '{"id": 2, "name": "y"}']
    blob = reader(spark, ufs, state_dir, "binaryFile").load(load).collect()
    assert [(r["path"], r["length"], r["content"]) for r in blob] == [
        (load, (directory / "a.jsonl").stat().st_size, (directory / "a.jsonl").read_bytes())
    ]


def test_sql_view_using_dora(spark: Any, ufs: Path, state_dir: Path, taxi: Path) -> None:
    spark.sql(
        f"""CREATE OR REPLACE TEMPORARY VIEW trips USING dora OPTIONS (
            path 'file://{taxi}', format 'parquet', state_dir '{state_dir}',
            dora.worker.ufs.roots 'file://{ufs}')"""
    )
    count = spark.sql("SELECT count(*) AS n FROM trips WHERE passenger_count > 0").first()["n"]
    table = direct(taxi)
    assert count == sum(1 for n in table["passenger_count"].to_pylist() if n > 0)


def rows_per_file(state_dir: str, path: str, handle: IO[bytes]) -> list[dict[str, Any]]:
    """Runs on an executor: which Python process read which file through which worker."""
    owners = Path(state_dir, OWNERS_DIR)
    info = running_worker(state_dir)
    return [
        {
            "path": path,
            "rows": pq.ParquetFile(handle).metadata.num_rows,
            "python_pid": os.getpid(),
            "worker_pid": info.pid if info else -1,
            "owners": ",".join(sorted(p.name for p in owners.iterdir())),
        }
    ]


def test_concurrent_tasks_share_one_sidecar_owned_by_the_executor_jvm(
    spark: Any, ufs: Path, taxi: Path, tmp_path: Path
) -> None:
    fresh = tmp_path / "fresh-sidecar"
    try:
        options = {
            "state_dir": str(fresh),
            "dora.worker.ufs.roots": f"file://{ufs}",
            "maxPartitionBytes": "1KB",  # one file per task, two tasks at a time
        }
        schema = "path string, rows long, python_pid long, worker_pid long, owners string"
        per_file = functools.partial(rows_per_file, str(fresh))
        rows = map_files(spark, f"file://{taxi}", per_file, schema, options).collect()
        assert {r["rows"] for r in rows} == {SPEC.rows_per_file}
        assert len(rows) == SPEC.files
        worker = {r["worker_pid"] for r in rows}
        assert len(worker) == 1 and worker_pids(fresh) == sorted(worker)
        jvm = str(spark.sparkContext._gateway.proc.pid)
        assert {r["owners"] for r in rows} == {jvm}
        # The Python workers that started it are not what keeps it alive.
        assert all(int(r["python_pid"]) != int(jvm) for r in rows)
        assert procs.process_alive(worker.pop())
    finally:
        stop_worker(fresh)


def test_sync_interval_zero_sees_a_change_and_minus_one_keeps_the_cached_file(
    spark: Any, ufs: Path, state_dir: Path
) -> None:
    directory = ufs / "changing"
    directory.mkdir()
    for index in range(2):
        pq.write_table(trips(SPEC, index), directory / f"{index}.parquet")
    path = f"file://{directory}"

    def answer(sync_interval: str) -> list[pipeline.Row]:
        df = reader(spark, ufs, state_dir, "parquet", sync_interval=sync_interval).load(path)
        return pipeline.spark_aggregate(df)

    before = answer("-1")
    assert before == pipeline.arrow_aggregate([direct(directory)])
    # Replaced from outside the cache, with other rows (and another size).
    pq.write_table(trips(SPEC, 1, revision=1).slice(0, 2000), directory / "1.parquet")
    after = pipeline.arrow_aggregate([direct(directory)])
    assert after != before
    assert answer("-1") == before
    assert answer("0") == after


def test_an_empty_directory_reads_as_no_rows_with_a_given_schema(
    spark: Any, ufs: Path, state_dir: Path
) -> None:
    empty = ufs / "empty"
    empty.mkdir()
    given = reader(spark, ufs, state_dir, "parquet").schema("id long").load(f"file://{empty}")
    assert given.collect() == []
    with pytest.raises(Exception, match="no files under"):
        reader(spark, ufs, state_dir, "parquet").load(f"file://{empty}").collect()


def ufs_bytes(state_dir: Path) -> int:
    """Bytes the sidecar has served from pages it fetched from the UFS."""
    info = running_worker(state_dir)
    assert info is not None
    headers = {"Authorization": f"Bearer {info.token}"} if info.token else {}
    stats = httpx.get(f"http://{info.address}/v1/stats", headers=headers, timeout=10).json()
    return int(stats["bytes_from_ufs"])


def test_hive_partitions_are_columns_and_a_partition_filter_reads_one_partition(
    spark: Any, ufs: Path, state_dir: Path
) -> None:
    directory = ufs / "zoned"
    sizes = {}
    for zone in (1, 2, 3):
        (directory / f"zone={zone}").mkdir(parents=True)
        target = directory / f"zone={zone}" / "part-0.parquet"
        pq.write_table(trips(SPEC, zone).select(["pickup_zone", "fare_amount"]), target)
        sizes[zone] = target.stat().st_size
    df = reader(spark, ufs, state_dir, "parquet", filterPushdown="true").load(f"file://{directory}")
    assert df.columns == ["pickup_zone", "fare_amount", "zone"]
    before = ufs_bytes(state_dir)
    zone_two = df.filter("zone = 2").collect()
    assert len(zone_two) == SPEC.rows_per_file
    assert sorted(r["fare_amount"] for r in zone_two) == sorted(
        trips(SPEC, 2)["fare_amount"].to_pylist()
    )
    # Cold, the filtered query read zone=2's file and nothing else.
    assert 0 < ufs_bytes(state_dir) - before <= sizes[2]
    # A fresh DataFrame: pyspark 4.3 reuses a relation's pushed-down read for its later
    # queries (see the module docstring of worker.spark.datasource).
    again = reader(spark, ufs, state_dir, "parquet").load(f"file://{directory}")
    assert {r["zone"] for r in again.select("zone").distinct().collect()} == {1, 2, 3}


def test_a_data_filter_skips_parquet_row_groups(spark: Any, ufs: Path, state_dir: Path) -> None:
    directory = ufs / "sorted"
    directory.mkdir()
    n = 400_000
    table = pa.table({"id": pa.array(range(n), pa.int64()),
                      "x": pa.array(np.random.default_rng(1).random(n))})  # fmt: skip
    pq.write_table(table, directory / "part-0.parquet", row_group_size=50_000)
    size = (directory / "part-0.parquet").stat().st_size
    df = reader(spark, ufs, state_dir, "parquet", filterPushdown="true").load(f"file://{directory}")
    before = ufs_bytes(state_dir)
    assert sorted(r["id"] for r in df.filter("id < 10").collect()) == list(range(10))
    # The footer and the first of eight row groups, not the whole file.
    assert ufs_bytes(state_dir) - before < size // 3
