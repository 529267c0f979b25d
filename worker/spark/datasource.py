"""The ``dora`` PySpark data source: files read through the host's cache worker.

    spark.dataSource.register(DoraDataSource)
    df = (spark.read.format("dora").option("format", "parquet").option("sync_interval", "30s")
          .option("dora.worker.ufs.roots", "s3://bucket").load("s3://bucket/prefix/"))
    spark.sql("CREATE TEMPORARY VIEW v USING dora OPTIONS (path 's3://b/p', format 'csv')")

Planning (``schema``, ``partitions``) runs in a Python process under the driver JVM and lists
the files through the worker; each partition carries its list of files, and ``read`` on an
executor fetches them through that host's worker (the sidecar, started on first use) and yields
Arrow record batches. Formats: parquet, csv, json, text, binaryFile, and ``files`` (one row per
file: path, modificationTime, length, version; no content).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from worker.spark import formats
from worker.spark.listing import FileRef, list_files, pack
from worker.spark.options import ReadOptions

NAME = "dora"


class DoraPartition(InputPartition):
    """The files one task reads. It is pickled to the executor, so it carries everything
    ``read`` needs beyond the reader's options (state set during planning does not travel)."""

    def __init__(self, index: int, files: list[FileRef]) -> None:
        super().__init__(index)
        self.index = index
        self.files = files

    def __repr__(self) -> str:
        total = sum(ref.size for ref in self.files)
        return f"DoraPartition({self.index}, {len(self.files)} files, {total} bytes)"


class DoraDataSource(DataSource):
    """Batch reads of files under a UFS path through the doracache worker.

    Options: ``path`` (the ``load`` argument), ``format``, ``sync_interval``,
    ``maxPartitionBytes``, ``openCostInBytes``, ``batchRows``, ``header`` and ``sep`` (CSV),
    ``state_dir`` (the sidecar's), ``workers`` and ``token`` (use a running worker instead of
    the sidecar), and worker settings as ``dora.*`` keys (``dora.worker.ufs.roots``,
    ``dora.ufs.s3.endpoint``, ...). Without a schema, the first file's is used.
    """

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        options = ReadOptions.parse(self.options)
        if options.format in formats.FIXED_SCHEMAS:
            return formats.spark_schema(formats.FIXED_SCHEMAS[options.format])
        fs = options.filesystem()
        files = list_files(fs, options.path)
        if not files:
            raise ValueError(
                f"no files under {options.path}: give the schema explicitly "
                "(spark.read.schema(...)) to read an empty directory"
            )
        return formats.spark_schema(formats.infer_schema(fs, files[0], options))

    def reader(self, schema: StructType) -> DoraReader:
        return DoraReader(ReadOptions.parse(self.options), schema)


class DoraReader(DataSourceReader):
    """Plans partitions from a listing and reads them. The reader itself is pickled to
    executors with its options and schema."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def partitions(self) -> list[DoraPartition]:
        files = list_files(self.options.filesystem(), self.options.path)
        groups = pack(files, self.options.max_partition_bytes, self.options.open_cost_bytes)
        # Spark wants at least one partition, even for an empty directory.
        return [DoraPartition(i, group) for i, group in enumerate(groups or [[]])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, DoraPartition):
            raise TypeError(f"expected a DoraPartition, got {type(partition).__name__}")
        if not partition.files:
            return
        # A listing-only read needs no worker: the partition already holds every fact.
        fs = None if self.options.format == "files" else self.options.filesystem()
        target = formats.arrow_target(self.schema)
        for ref in partition.files:
            yield from formats.read_batches(fs, ref, target, self.options)


def register(spark: Any) -> None:
    """Make ``format("dora")`` and ``USING dora`` available in ``spark``."""
    spark.dataSource.register(DoraDataSource)
