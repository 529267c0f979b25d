"""Hive partition columns and filters over them, without Spark."""

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from worker.spark.partitions import Partitioning, may_hold, partition_values

BASE = "s3://lake/trips"


def uri(*parts: str) -> str:
    return "/".join([BASE, *parts, "part-0.parquet"])


def test_values_come_from_name_value_directories() -> None:
    assert partition_values(BASE + "/", uri("year=2023", "zone=7")) == [
        ("year", "2023"),
        ("zone", "7"),
    ]
    assert partition_values(BASE, uri("city=New%20York")) == [("city", "New York")]
    assert partition_values(BASE, uri("zone=__HIVE_DEFAULT_PARTITION__")) == [("zone", None)]
    assert partition_values(BASE, uri("plain", "zone=1")) == [("zone", "1")]


def test_types_are_inferred_across_files() -> None:
    files = [uri("year=2023", "zone=7", "x=a"), uri("year=2024", "zone=3000000000", "x=1.5"),
             uri("year=2025", "zone=__HIVE_DEFAULT_PARTITION__", "x=b")]  # fmt: skip
    found = Partitioning.discover(BASE, files)
    assert [(f.name, f.type) for f in found.fields] == [
        ("year", pa.int32()), ("zone", pa.int64()), ("x", pa.string()),
    ]  # fmt: skip
    assert found.values(files[1]) == {"year": 2024, "zone": 3_000_000_000, "x": "1.5"}
    assert found.values(files[2])["zone"] is None
    doubles = Partitioning.discover(BASE, [uri("r=0.5"), uri("r=2")])
    assert doubles.fields[0].type == pa.float64()


def test_files_disagreeing_on_partition_names_are_an_error() -> None:
    with pytest.raises(ValueError, match="conflicting partition column names"):
        Partitioning.discover(BASE, [uri("a=1"), uri("b=1")])


def test_filters_prune_files_exactly() -> None:
    files = [uri(f"zone={z}", f"city={c}") for z in (1, 2, 3) for c in ("nyc", "sf")]
    found = Partitioning.discover(BASE, files)

    def kept(*filters: object) -> list[str]:
        return [f.split("/")[-3] + "/" + f.split("/")[-2] for f in files if found.keeps(f, filters)]

    assert kept(EqualTo(("zone",), 2)) == ["zone=2/city=nyc", "zone=2/city=sf"]
    assert kept(In(("zone",), (1, 3)), Not(EqualTo(("city",), "sf"))) == [
        "zone=1/city=nyc", "zone=3/city=nyc",
    ]  # fmt: skip
    assert kept(GreaterThan(("zone",), 2), StringStartsWith(("city",), "s")) == ["zone=3/city=sf"]
    assert kept(IsNull(("zone",))) == []
    # A filter that cannot be told on these values keeps the file.
    assert len(kept(LessThan(("zone",), "x"))) == 6


def test_partition_values_become_columns() -> None:
    files = [uri("zone=4")]
    found = Partitioning.discover(BASE, files)
    batch = pa.RecordBatch.from_pydict({"id": [1, 2]})
    assert found.add_columns(batch, files[0]).to_pydict() == {"id": [1, 2], "zone": [4, 4]}


@pytest.mark.parametrize(
    ("f", "holds"),
    [
        (EqualTo(("id",), 15), True),
        (EqualTo(("id",), 50), False),
        (LessThan(("id",), 10), False),
        (LessThanOrEqual(("id",), 10), True),
        (GreaterThan(("id",), 20), False),
        (In(("id",), (1, 15)), True),
        (In(("id",), (1, 25)), False),
        (IsNull(("id",)), False),
        (Not(EqualTo(("id",), 12)), True),
    ],
)
def test_row_group_ranges_rule_out_what_cannot_match(f: object, holds: bool) -> None:
    assert may_hold(f, 10, 20, nulls=0) is holds
