"""The demo's query through S3, as S3-only tools run it: Polars' and pyarrow's own S3 readers
and DuckDB's ``httpfs``, pointed at an S3 endpoint — the worker's (through the cache) or the
store's (straight). Each gives the same exact rows as
:func:`worker.devlab.demo.pipeline.arrow_aggregate` (money and distance summed as whole
hundredths), so its checksum is compared with the direct read's like every other run of the
demo."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from worker.devlab.demo.pipeline import COLUMNS, NEEDED, Row, arrow_aggregate


@dataclass(frozen=True)
class S3Target:
    """A dataset (``prefix`` in ``bucket``, Parquet files) behind the S3 endpoint at
    ``endpoint`` (``http://host:port``), with a key pair it takes."""

    endpoint: str
    key_id: str
    secret: str
    bucket: str
    prefix: str

    @property
    def glob(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}/*.parquet"

    @property
    def host_port(self) -> str:
        return self.endpoint.split("://", 1)[1]


def polars_rows(target: S3Target) -> list[Row]:
    """The query by Polars' own S3 reader (``scan_parquet``, object_store underneath)."""
    import polars as pl

    options = {
        "aws_endpoint_url": target.endpoint,
        "aws_region": "us-east-1",
        "aws_access_key_id": target.key_id,
        "aws_secret_access_key": target.secret,
        "aws_allow_http": "true",
    }

    def hundredths(column: str) -> pl.Expr:
        return (pl.col(column) * 100).round().cast(pl.Int64).sum()

    valid = pl.scan_parquet(target.glob, storage_options=options).filter(
        (pl.col("fare_amount") > 0)
        & (pl.col("trip_distance") > 0)
        & (pl.col("passenger_count") > 0)
    )
    grouped = valid.group_by(
        hour=pl.col("pickup_at").dt.hour().cast(pl.Int64),
        zone=pl.col("pickup_zone").cast(pl.Int64),
    ).agg(
        trips=pl.len().cast(pl.Int64),
        passengers=pl.col("passenger_count").cast(pl.Int64).sum(),
        fare_cents=hundredths("fare_amount"),
        tip_cents=hundredths("tip_amount"),
        distance_hundredths=hundredths("trip_distance"),
    )
    frame = grouped.collect()
    return sorted(tuple(int(v) for v in row) for row in frame.select(COLUMNS).iter_rows())


def pyarrow_rows(target: S3Target) -> list[Row]:
    """The query by pyarrow's own S3 reader (``S3FileSystem``, the AWS C++ SDK)."""
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    scheme, address = target.endpoint.split("://", 1)
    fs = pafs.S3FileSystem(endpoint_override=address, scheme=scheme, access_key=target.key_id,
                           secret_key=target.secret, region="us-east-1")  # fmt: skip
    table = pq.read_table(f"{target.bucket}/{target.prefix}", filesystem=fs, columns=list(NEEDED))
    return arrow_aggregate([table])


DUCKDB_SQL = """
SELECT hour(pickup_at) AS hour, CAST(pickup_zone AS BIGINT) AS zone, count(*) AS trips,
       sum(CAST(passenger_count AS BIGINT)) AS passengers,
       sum(CAST(round(fare_amount * 100) AS BIGINT)) AS fare_cents,
       sum(CAST(round(tip_amount * 100) AS BIGINT)) AS tip_cents,
       sum(CAST(round(trip_distance * 100) AS BIGINT)) AS distance_hundredths
FROM read_parquet('{glob}')
WHERE fare_amount > 0 AND trip_distance > 0 AND passenger_count > 0
GROUP BY ALL
"""
"""The query in DuckDB's SQL (``{glob}``: the dataset's files)."""

# Run by the interpreter that has DuckDB and its httpfs wheel
# (tests/integration/s3endpoint/duckdb_support.py): the request on stdin; the rows and each run's
# seconds (the first run warms DuckDB itself: its extension, its threads) on stdout as JSON.
DUCKDB_DRIVER = """
import json, sys, time, duckdb, duckdb_ext, pathlib
request = json.load(sys.stdin)
extensions = pathlib.Path(duckdb_ext.__path__[0]) / "extensions"
connection = duckdb.connect(config={"extension_directory": str(extensions),
                                    "autoinstall_known_extensions": False})
connection.execute("SET enable_progress_bar = false")
connection.execute("LOAD httpfs")
connection.execute(
    "CREATE SECRET s (TYPE s3, KEY_ID '{}', SECRET '{}', REGION 'us-east-1', ENDPOINT '{}', "
    "URL_STYLE 'path', USE_SSL false)".format(*request["s3"]))
times, rows = [], []
for _ in range(request["runs"]):
    started = time.perf_counter()
    rows = connection.execute(request["sql"]).fetchall()
    times.append(time.perf_counter() - started)
json.dump({"rows": rows, "seconds": times}, sys.stdout)
"""


def duckdb_request(target: S3Target, runs: int) -> str:
    """The driver's stdin for ``runs`` runs of the query against ``target``."""
    return json.dumps(
        {
            "s3": [target.key_id, target.secret, target.host_port],
            "sql": DUCKDB_SQL.format(glob=target.glob),
            "runs": runs,
        }
    )


def duckdb_rows(answer: dict[str, Any]) -> list[Row]:
    """The driver's rows as the other tools give them."""
    return sorted(tuple(int(v) for v in row) for row in answer["rows"])


@dataclass(frozen=True)
class PolarsRun:
    """A demo contender outside Spark: the query by Polars' own S3 reader against ``target``,
    through the worker's S3 endpoint (``invalidate``: what makes the next run cold) or
    straight to the store (nothing to make cold)."""

    name: str
    target: S3Target
    invalidate: Callable[[], None] | None = None

    def make_cold(self) -> None:
        if self.invalidate is not None:
            self.invalidate()

    def rows(self) -> list[Row]:
        return polars_rows(self.target)

    def sync(self, run: str) -> str:
        return "rule 0" if self.invalidate is not None else "-"
