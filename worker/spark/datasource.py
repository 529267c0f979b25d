"""The ``dora`` PySpark data source: files read through the host's cache worker.

    spark.dataSource.register(DoraDataSource)
    df = (spark.read.format("dora").option("format", "parquet").option("sync_interval", "30s")
          .option("dora.worker.ufs.roots", "s3://bucket").load("s3://bucket/prefix/"))
    spark.sql("CREATE TEMPORARY VIEW v USING dora OPTIONS (path 's3://b/p', format 'csv')")

Planning (``schema``, ``reader``, ``partitions``) runs in a Python process under the driver JVM
and lists the files through the worker; each partition carries its list of files, and ``read``
on an executor fetches them through that host's worker (the sidecar, started on first use) and
yields Arrow record batches. Formats: parquet, csv, json, text, binaryFile, and ``files`` (one
row per file: path, modificationTime, length, version; no content).

Hive-style ``name=value`` directories become partition columns for parquet, csv and json
(:mod:`worker.spark.partitions`). With ``.option("filterPushdown", "true")`` (which needs the
Spark setting ``spark.sql.python.filterPushdown.enabled=true``; ``local_session`` sets it),
Spark's filters prune files by partition value and Parquet row groups by their statistics.

Pushdown is opt-in because pyspark 4.3 keeps the read planned for a query with pushed filters
on the relation and reuses it for that DataFrame's (or view's) later queries, which then miss
the rows the first query's filters pruned (upstream Spark since keeps pushdown-specific read
info on the scan, not the relation). Use it with a DataFrame per filtered query. The native
reader (``spark.read.parquet("webhdfs://...")``) prunes and pushes down without that caveat.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from worker.spark import formats
from worker.spark.listing import FileRef, list_files, pack
from worker.spark.options import ReadOptions
from worker.spark.partitions import Partitioning, column

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
    ``filterPushdown``, ``state_dir`` (the sidecar's), ``workers`` and ``token`` (use a running
    worker instead of the sidecar), and worker settings as ``dora.*`` keys
    (``dora.worker.ufs.roots``, ``dora.ufs.s3.endpoint``, ...). Without a schema, the first
    file's is used, followed by the partition columns.
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
        data = formats.infer_schema(fs, files[0], options)
        partitioning = Partitioning.discover(options.path, (ref.uri for ref in files))
        by_name = {field.name: field for field in partitioning.fields}
        fields = [by_name.pop(field.name, field) for field in data]
        return formats.spark_schema(pa.schema([*fields, *by_name.values()]))

    def reader(self, schema: StructType) -> DoraReader:
        options = ReadOptions.parse(self.options)
        files = list_files(options.filesystem(), options.path)
        partitioning = Partitioning([], {})
        if options.format not in formats.FIXED_SCHEMAS:
            partitioning = Partitioning.discover(options.path, (ref.uri for ref in files))
        if options.filter_pushdown:
            return DoraFilteringReader(options, schema, files, partitioning)
        return DoraReader(options, schema, files, partitioning)


class DoraReader(DataSourceReader):
    """Plans partitions from the listing made at planning and reads them. The reader itself
    is pickled to executors with its options, schema, listing and partition values."""

    def __init__(
        self,
        options: ReadOptions,
        schema: StructType,
        files: list[FileRef],
        partitioning: Partitioning,
    ) -> None:
        self.options = options
        self.schema = schema
        self.files = files
        self.partitioning = partitioning
        self.partition_filters: list[Filter] = []
        self.data_filters: list[Filter] = []

    def partitions(self) -> list[DoraPartition]:
        files = [
            ref for ref in self.files if self.partitioning.keeps(ref.uri, self.partition_filters)
        ]
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
        names = set(self.partitioning.names)
        data = pa.schema([field for field in target if field.name not in names])
        for ref in partition.files:
            for batch in formats.read_batches(fs, ref, data, self.options, self.data_filters):
                with_values = self.partitioning.add_columns(batch, ref.uri)
                yield formats.conform(with_values, target)


class DoraFilteringReader(DoraReader):
    """A reader that takes Spark's filters: those on partition columns prune files exactly
    (Spark need not re-check them); those on data columns skip Parquet row groups and are
    handed back for Spark to apply to the rows read."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        names = set(self.partitioning.names)
        for f in filters:
            if column(f) in names:
                self.partition_filters.append(f)
            else:
                self.data_filters.append(f)
                yield f


def register(spark: Any) -> None:
    """Make ``format("dora")`` and ``USING dora`` available in ``spark``."""
    spark.dataSource.register(DoraDataSource)
