"""Reading files of each supported format into Arrow record batches, and their schemas.

A Python data source must yield batches whose Arrow schema equals exactly the one Spark derives
from the source's schema (``to_arrow_schema(schema, timezone="UTC")``): every batch is conformed
to that target here, column by column (missing columns become nulls, types are cast).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.types import StructField, StructType

from worker.spark.listing import FileRef
from worker.spark.options import ReadOptions
from worker.spark.partitions import column, may_hold

# Parquet files up to this size are fetched in one call; bigger ones are read in ranges.
WHOLE_FILE_BYTES = 64 << 20
# How much of the first file schema inference for CSV and JSON looks at.
INFER_BYTES = 1 << 20
_TIMESTAMP_UTC = pa.timestamp("us", tz="UTC")
FIXED_SCHEMAS = {
    "text": pa.schema([pa.field("value", pa.string())]),
    "binaryFile": pa.schema(
        [
            pa.field("path", pa.string()),
            pa.field("modificationTime", _TIMESTAMP_UTC),
            pa.field("length", pa.int64()),
            pa.field("content", pa.binary()),
        ]
    ),
    "files": pa.schema(
        [
            pa.field("path", pa.string()),
            pa.field("modificationTime", _TIMESTAMP_UTC),
            pa.field("length", pa.int64()),
            pa.field("version", pa.string()),
        ]
    ),
}
# Arrow types Spark has no counterpart for, and the nearest one that holds every value.
_WIDER = {
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.decimal128(20, 0),
    pa.float16(): pa.float32(),
    pa.null(): pa.string(),
}


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema for an Arrow schema (unsigned integers widened; naive timestamps are
    TIMESTAMP_NTZ, as Spark's own Parquet reader makes them). Raises ValueError naming a column
    of a type Spark cannot hold."""
    fields = []
    for item in schema:
        arrow_type = _WIDER.get(item.type, item.type)
        try:
            spark_type = from_arrow_type(arrow_type)
        except (TypeError, ValueError, NotImplementedError) as exc:
            raise ValueError(f"column {item.name!r} has type {item.type}: {exc}") from exc
        fields.append(StructField(item.name, spark_type, nullable=True))
    return StructType(fields)


def arrow_target(schema: StructType) -> pa.Schema:
    """The exact Arrow schema Spark expects for batches of ``schema``."""
    return to_arrow_schema(schema, timezone="UTC")


def infer_schema(fs: Any, ref: FileRef, options: ReadOptions) -> pa.Schema:
    """The Arrow schema of one file (the first of a read) for ``options.format``."""
    fmt = options.format
    if fmt in FIXED_SCHEMAS:
        return FIXED_SCHEMAS[fmt]
    if fmt == "parquet":
        with _open(fs, ref) as handle:
            return pq.ParquetFile(handle).schema_arrow
    head = _head(fs, ref)
    if fmt == "csv":
        reader = pacsv.open_csv(
            io.BytesIO(head),
            read_options=pacsv.ReadOptions(autogenerate_column_names=not options.header),
            parse_options=pacsv.ParseOptions(delimiter=options.sep),
        )
        if options.header:
            return reader.schema
        # Spark names header-less CSV columns _c0, _c1, ...
        return pa.schema([f.with_name(f"_c{i}") for i, f in enumerate(reader.schema)])
    return pajson.read_json(io.BytesIO(head)).schema


def _head(fs: Any, ref: FileRef) -> bytes:
    """The first whole lines of a file, up to INFER_BYTES."""
    end = min(ref.size, INFER_BYTES)
    data = bytes(fs.cat_file(ref.uri, start=0, end=end, version=ref.version or None))
    if ref.size > INFER_BYTES and b"\n" in data:
        data = data[: data.rfind(b"\n") + 1]
    return data


def read_batches(
    fs: Any,
    ref: FileRef,
    target: pa.Schema,
    options: ReadOptions,
    filters: Sequence[Any] = (),
) -> Iterator[pa.RecordBatch]:
    """The rows of one file as batches (not yet conformed to ``target``). For Parquet,
    ``filters`` (Spark's pushed filters on data columns) skip the row groups whose statistics
    rule them out; rows that are read are not filtered here."""
    readers: dict[str, Callable[[], Iterator[pa.RecordBatch]]] = {
        "parquet": lambda: _parquet(fs, ref, target, options.batch_rows, filters),
        "csv": lambda: _csv(fs, ref, target, options),
        "json": lambda: _json(fs, ref, target),
        "text": lambda: _text(fs, ref, options.batch_rows),
        "binaryFile": lambda: iter([_file_row(ref, _cat(fs, ref))]),
        "files": lambda: iter([_file_row(ref, None)]),
    }
    return readers[options.format]()


def _cat(fs: Any, ref: FileRef) -> bytes:
    return bytes(fs.cat_file(ref.uri, version=ref.version or None))


def _open(fs: Any, ref: FileRef, cache_type: str = "readahead") -> Any:
    # Pinned to the version planning listed: every task of a query reads the same snapshot,
    # and a file replaced since planning is an error, never a mix of old and new bytes.
    return fs.open(ref.uri, "rb", version=ref.version or None, cache_type=cache_type)


def _parquet(
    fs: Any, ref: FileRef, target: pa.Schema, batch_rows: int, filters: Sequence[Any]
) -> Iterator[pa.RecordBatch]:
    if ref.size <= WHOLE_FILE_BYTES and not filters:
        # One worker call instead of a footer read and one call per column chunk.
        source: Any = pa.BufferReader(_cat(fs, ref))
    else:
        # Ranged reads: the footer, then only the column chunks of the row groups that may
        # match (pre-buffered by pyarrow, so no read-ahead of our own).
        source = _open(fs, ref, cache_type="none")
    with source:
        parquet = pq.ParquetFile(source, pre_buffer=True)
        present = set(parquet.schema_arrow.names)
        columns = [name for name in target.names if name in present]
        groups = [
            index
            for index in range(parquet.metadata.num_row_groups)
            if _row_group_may_hold(parquet.metadata.row_group(index), filters)
        ]
        if groups:
            yield from parquet.iter_batches(
                batch_size=batch_rows, row_groups=groups, columns=columns, use_threads=False
            )


def _row_group_may_hold(group: Any, filters: Sequence[Any]) -> bool:
    by_name = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    for f in filters:
        chunk = by_name.get(column(f))
        stats = None if chunk is None else chunk.statistics
        if stats is None or not stats.has_min_max:
            continue
        if not may_hold(
            f, stats.min, stats.max, stats.null_count if stats.has_null_count else None
        ):
            return False
    return True


def _naive(arrow_type: pa.DataType) -> pa.DataType:
    # The CSV parser refuses zone-less text for a zoned type; the cast in conform adds the zone.
    if pa.types.is_timestamp(arrow_type) and arrow_type.tz is not None:
        return pa.timestamp(arrow_type.unit)
    return arrow_type


def _csv(
    fs: Any, ref: FileRef, target: pa.Schema, options: ReadOptions
) -> Iterator[pa.RecordBatch]:
    # Columns are matched by position, as Spark's CSV reader does with a given schema.
    with _open(fs, ref) as handle:
        reader = pacsv.open_csv(
            handle,
            read_options=pacsv.ReadOptions(
                column_names=target.names, skip_rows=1 if options.header else 0
            ),
            parse_options=pacsv.ParseOptions(delimiter=options.sep),
            convert_options=pacsv.ConvertOptions(
                column_types={field.name: _naive(field.type) for field in target}
            ),
        )
        yield from reader


def _json(fs: Any, ref: FileRef, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    with _open(fs, ref) as handle:
        table = pajson.read_json(
            handle,
            parse_options=pajson.ParseOptions(
                explicit_schema=pa.schema([f.with_type(_naive(f.type)) for f in target]),
                unexpected_field_behavior="ignore",
            ),
        )
    yield from table.to_batches()


def _text(fs: Any, ref: FileRef, batch_rows: int) -> Iterator[pa.RecordBatch]:
    with _open(fs, ref) as raw, io.TextIOWrapper(raw, encoding="utf-8") as lines:
        stripped = (line.rstrip("\n") for line in lines)
        while chunk := list(islice(stripped, batch_rows)):
            yield pa.RecordBatch.from_arrays([pa.array(chunk, pa.string())], names=["value"])


def _file_row(ref: FileRef, content: bytes | None) -> pa.RecordBatch:
    columns: dict[str, pa.Array] = {
        "path": pa.array([ref.uri], pa.string()),
        "modificationTime": pa.array([ref.mtime_ns // 1000], _TIMESTAMP_UTC),
        "length": pa.array([ref.size], pa.int64()),
    }
    if content is None:
        columns["version"] = pa.array([ref.version], pa.string())
    else:
        columns["content"] = pa.array([content], pa.binary())
    return pa.RecordBatch.from_pydict(columns)


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``target``'s columns, in order and of its types: absent columns
    are nulls, others are cast (safely: a value that does not fit is an error, not garbage)."""
    arrays = []
    for field in target:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            arrays.append(pa.nulls(batch.num_rows, field.type))
            continue
        column = batch.column(index)
        if not column.type.equals(field.type):
            column = pc.cast(column, options=_cast_options(column.type, field.type))
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _cast_options(source: pa.DataType, target: pa.DataType) -> pc.CastOptions:
    both_time = pa.types.is_timestamp(source) and pa.types.is_timestamp(target)
    # Spark keeps microseconds: nanosecond timestamps lose their last digits, as in Spark.
    return pc.CastOptions(target, allow_time_truncate=both_time)
