"""Custom per-file processing on executors, through the cache: :func:`map_files`.

    def count_lines(path, handle):
        return [{"path": path, "lines": sum(1 for _ in handle)}]

    df = map_files(spark, "s3://bucket/logs/", count_lines, "path string, lines long",
                   options={"dora.worker.ufs.roots": "s3://bucket"})

The files are listed and packed into partitions by the ``dora`` data source (format ``files``);
``mapInArrow`` then calls ``fn`` for each file on the executor that holds its partition, with
the file opened through that host's worker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any, TypeAlias

import pyarrow as pa
from pyspark.sql.types import DataType, StructType

from worker.spark import formats
from worker.spark.datasource import NAME, register
from worker.spark.options import ReadOptions

# A pyarrow Table or RecordBatch, or an iterable of row dicts (pyarrow is untyped: Any).
FileResult: TypeAlias = Any
FileFunction: TypeAlias = Callable[[str, IO[bytes]], FileResult]


def map_files(
    spark: Any,
    path: str,
    fn: FileFunction,
    schema: StructType | str,
    options: Mapping[str, str] | None = None,
) -> Any:
    """A DataFrame of ``schema`` made of ``fn(uri, file)`` for every file under ``path``.

    ``fn`` gets the file's full URI and a binary file object read through the cache, and
    returns a pyarrow Table or RecordBatch, or an iterable of row dicts. ``options`` are the
    ``dora`` data source's (``sync_interval``, ``maxPartitionBytes``, ``state_dir``, worker
    settings, ...). ``fn`` must be picklable (a module function or a closure over picklable
    values); it runs on executors.
    """
    register(spark)
    struct = schema if isinstance(schema, StructType) else DataType.fromDDL(schema)
    if not isinstance(struct, StructType):
        raise ValueError(f"map_files needs a struct schema, got {schema!r}")
    settings = {**(options or {}), "format": "files"}
    listing = spark.read.format(NAME).options(**settings).load(path)
    read_options = ReadOptions.parse({**settings, "path": path})
    return listing.mapInArrow(_per_file(fn, read_options, struct), struct)


def _per_file(
    fn: FileFunction, options: ReadOptions, schema: StructType
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function: for each listed path, ``fn`` over the file, conformed."""

    def process(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        target = formats.arrow_target(schema)
        fs = None
        for batch in batches:
            uris = batch.column("path").to_pylist()
            versions = batch.column("version").to_pylist()
            for uri, version in zip(uris, versions, strict=True):
                fs = fs or options.filesystem()
                with fs.open(uri, "rb", version=version or None) as handle:
                    result = fn(uri, handle)
                yield formats.conform(_as_batch(result, target), target)

    return process


def _as_batch(result: FileResult, target: pa.Schema) -> pa.RecordBatch:
    if isinstance(result, pa.RecordBatch):
        return result
    if isinstance(result, pa.Table):
        return result.combine_chunks().to_batches()[0] if result.num_rows else _empty(target)
    rows: Iterable[Mapping[str, Any]] = result
    return pa.RecordBatch.from_pylist([dict(row) for row in rows], schema=target)


def _empty(target: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=target)
