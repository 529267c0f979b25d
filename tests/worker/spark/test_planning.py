"""Planning without Spark: option parsing, packing files into partitions, schemas and batch
conformance."""

import datetime

import pyarrow as pa
import pytest
from pyspark.sql.types import DecimalType, LongType, TimestampNTZType, TimestampType

from worker.spark.formats import arrow_target, conform, spark_schema
from worker.spark.listing import FileRef, pack
from worker.spark.options import OptionError, ReadOptions, default_root


def ref(name: str, size: int) -> FileRef:
    return FileRef(f"s3://b/{name}", size, 0, "v1")


def test_small_files_share_partitions_up_to_the_byte_budget() -> None:
    files = [ref(f"f{i}", 10) for i in range(10)]
    groups = pack(files, max_bytes=45, open_cost=5)
    assert [len(group) for group in groups] == [3, 3, 3, 1]
    assert sorted(f.uri for group in groups for f in group) == sorted(f.uri for f in files)


def test_a_file_larger_than_the_budget_gets_a_partition_of_its_own() -> None:
    groups = pack([ref("big", 1000), ref("a", 10), ref("b", 10)], max_bytes=100, open_cost=0)
    assert [[f.uri for f in g] for g in groups] == [["s3://b/big"], ["s3://b/a", "s3://b/b"]]


def test_options_split_worker_settings_from_read_options() -> None:
    options = ReadOptions.parse(
        {
            "path": "s3://bucket/trips/",
            "format": "CSV",
            "header": "true",
            "maxPartitionBytes": "64MB",
            "sync_interval": "30s",
            "dora.ufs.s3.endpoint": "http://127.0.0.1:9000",
        }
    )
    assert options.path == "s3://bucket/trips"
    assert options.format == "csv" and options.header
    assert options.max_partition_bytes == 64 << 20
    assert options.sync_interval == "30s"
    assert options.defines == (
        "dora.ufs.s3.endpoint=http://127.0.0.1:9000",
        "dora.worker.ufs.roots=s3://bucket",
    )


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"format": "parquet"}, "needs a path"),
        ({"path": "s3://b/p", "format": "orc"}, "unknown format 'orc'"),
        ({"path": "s3://b/p", "sync_interval": "soon"}, "sync_interval"),
        ({"path": "s3://b/p", "maxPartitionBytes": "0"}, "maxpartitionbytes"),
        ({"path": "s3://b/p", "header": "yes"}, "header"),
    ],
)
def test_bad_options_are_named(given: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        ReadOptions.parse(given)


def test_default_root_is_the_bucket_or_the_local_path_itself() -> None:
    assert default_root("s3://bucket/a/b/") == "s3://bucket"
    assert default_root("file:///data/x") == "file:///data/x"


def test_spark_schema_widens_types_spark_lacks() -> None:
    schema = spark_schema(
        pa.schema(
            [
                ("n", pa.uint32()),
                ("big", pa.uint64()),
                ("naive", pa.timestamp("ns")),
                ("zoned", pa.timestamp("ms", tz="UTC")),
            ]
        )
    )
    assert [f.dataType for f in schema] == [
        LongType(),
        DecimalType(20, 0),
        TimestampNTZType(),
        TimestampType(),
    ]


def test_conform_orders_casts_and_fills_columns() -> None:
    target = arrow_target(
        spark_schema(
            pa.schema([("a", pa.int64()), ("t", pa.timestamp("us")), ("gone", pa.string())])
        )
    )
    batch = pa.RecordBatch.from_pydict(
        {
            "t": pa.array([datetime.datetime(2024, 1, 1, 12, 0, 0, 123456)], pa.timestamp("ns")),
            "a": pa.array([7], pa.int32()),
        }
    )
    conformed = conform(batch, target)
    assert conformed.schema.equals(target)
    assert conformed.to_pylist() == [
        {"a": 7, "t": datetime.datetime(2024, 1, 1, 12, 0, 0, 123456), "gone": None}
    ]
