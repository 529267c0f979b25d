"""The demo's query, twice: in Spark over the ``dora`` data source, and in pyarrow straight from
the UFS as the reference. Both reduce to the same exact integer aggregates, so their checksums
must match bit for bit.

The query: valid trips (positive fare and distance, at least one passenger), grouped by pickup
hour and pickup zone: trips, passengers, and fare, tip and distance totals. Money and distance
are summed as whole cents (hundredths of a mile) rounded per trip, so the totals are exact
whatever order either engine adds them in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

Row = tuple[int, ...]
COLUMNS = ("hour", "zone", "trips", "passengers", "fare_cents", "tip_cents", "distance_hundredths")
NEEDED = (
    "pickup_at",
    "pickup_zone",
    "passenger_count",
    "trip_distance",
    "fare_amount",
    "tip_amount",
)


def spark_aggregate(df: Any) -> list[Row]:
    """Run the query on a Spark DataFrame of trips; the result rows, sorted."""
    from pyspark.sql import functions as F

    def hundredths(column: str) -> Any:
        return F.round(F.col(column) * 100).cast("long")

    valid = df.filter(
        (F.col("fare_amount") > 0) & (F.col("trip_distance") > 0) & (F.col("passenger_count") > 0)
    )
    grouped = valid.groupBy(
        F.hour("pickup_at").alias("hour"), F.col("pickup_zone").cast("int").alias("zone")
    ).agg(
        F.count(F.lit(1)).alias("trips"),
        F.sum("passenger_count").alias("passengers"),
        F.sum(hundredths("fare_amount")).alias("fare_cents"),
        F.sum(hundredths("tip_amount")).alias("tip_cents"),
        F.sum(hundredths("trip_distance")).alias("distance_hundredths"),
    )
    return sorted(tuple(int(value) for value in row) for row in grouped.collect())


def arrow_aggregate(tables: Iterable[pa.Table]) -> list[Row]:
    """The same query over pyarrow tables (one per file, at least the NEEDED columns)."""
    partials = [_aggregate_one(table.select(list(NEEDED))) for table in tables]
    if not partials:
        return []
    combined = (
        pa.concat_tables(partials)
        .group_by(["hour", "zone"])
        .aggregate([(name, "sum") for name in COLUMNS[2:]])
    )
    rows = zip(*(combined.column(_sum_name(name)).to_pylist() for name in COLUMNS), strict=True)
    return sorted(tuple(int(value) for value in row) for row in rows)


def _sum_name(name: str) -> str:
    return name if name in ("hour", "zone") else f"{name}_sum"


def _hundredths(column: pa.ChunkedArray) -> pa.ChunkedArray:
    # Spark's round is half-up; values here are cents off by float noise, never exact halves.
    return pc.cast(pc.round(pc.multiply(column, 100.0)), pa.int64())


def _aggregate_one(table: pa.Table) -> pa.Table:
    mask = pc.and_(
        pc.and_(pc.greater(table["fare_amount"], 0), pc.greater(table["trip_distance"], 0)),
        pc.greater(table["passenger_count"], 0),
    )
    valid = table.filter(mask)
    prepared = pa.table(
        {
            "hour": pc.cast(pc.hour(valid["pickup_at"]), pa.int64()),
            "zone": pc.cast(valid["pickup_zone"], pa.int64()),
            "trips": pa.array([1] * valid.num_rows, pa.int64()),
            "passengers": pc.cast(valid["passenger_count"], pa.int64()),
            "fare_cents": _hundredths(valid["fare_amount"]),
            "tip_cents": _hundredths(valid["tip_amount"]),
            "distance_hundredths": _hundredths(valid["trip_distance"]),
        }
    )
    summed = prepared.group_by(["hour", "zone"]).aggregate([(n, "sum") for n in COLUMNS[2:]])
    return summed.rename_columns([n.removesuffix("_sum") for n in summed.column_names])


def checksum(rows: list[Row]) -> str:
    """A short, order-independent digest of the result rows (they are sorted first)."""
    digest = hashlib.sha256()
    for row in sorted(rows):
        digest.update(("|".join(map(str, row)) + "\n").encode())
    return digest.hexdigest()[:16]
