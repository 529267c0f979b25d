"""Hive-style partition columns (``.../year=2023/zone=1/part-0.parquet``) and filters over them,
as Spark's file sources treat them (``PartitioningUtils``): columns come from ``name=value``
directories, typed by inference (int, then long, then double, else string;
``__HIVE_DEFAULT_PARTITION__`` is null), appended after the data columns.

Filters pushed by Spark (:mod:`pyspark.sql.datasource` filter classes) are evaluated exactly on a
file's partition values, which prunes whole files, and as ranges on Parquet row-group statistics,
which skips row groups that cannot match (Spark still re-checks those rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from ufs import uri as uris

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_INT32 = 2**31
_INT64 = 2**63


def partition_values(base: str, file_uri: str) -> list[tuple[str, str | None]]:
    """The ``(name, raw value)`` pairs of the ``name=value`` directories between ``base`` and
    the file, outermost first."""
    relative = file_uri[len(uris.normalize(base)) :].strip("/").split("/")[:-1]
    pairs: list[tuple[str, str | None]] = []
    for segment in relative:
        name, sep, value = segment.partition("=")
        if sep and name:
            text = unquote(value)
            pairs.append((unquote(name), None if text == NULL_PARTITION else text))
    return pairs


def _typed(texts: Sequence[str]) -> tuple[pa.DataType, list[Any]]:
    for parse in (int, float):
        try:
            values = [parse(text) for text in texts]
        except ValueError:
            continue
        if parse is int:
            largest = max((abs(v) for v in values), default=0)
            if largest < _INT32:
                return pa.int32(), values
            if largest < _INT64:
                return pa.int64(), values
            continue
        return pa.float64(), values
    return pa.string(), list(texts)


class Partitioning:
    """The partition columns of a listing and each file's typed values. Immutable and
    picklable (it travels to executors with the reader)."""

    def __init__(self, fields: Sequence[pa.Field], values: dict[str, tuple[Any, ...]]) -> None:
        self.fields = tuple(fields)
        self._values = values

    @classmethod
    def discover(cls, base: str, file_uris: Iterable[str]) -> Partitioning:
        """Partition columns of the files under ``base``. Raises ValueError when files disagree
        on the partition column names (as Spark does)."""
        raw = {uri: partition_values(base, uri) for uri in file_uris}
        names = {tuple(name for name, _ in pairs) for pairs in raw.values()}
        if len(names) > 1:
            shown = "; ".join(sorted(", ".join(n) or "(none)" for n in names))
            raise ValueError(f"conflicting partition column names under {base}: {shown}")
        columns = next(iter(names), ())
        fields: list[pa.Field] = []
        typed: dict[str, list[Any]] = {uri: [] for uri in raw}
        for index, name in enumerate(columns):
            texts = [pairs[index][1] for pairs in raw.values()]
            arrow_type, parsed = _typed([t for t in texts if t is not None])
            fields.append(pa.field(name, arrow_type))
            present = iter(parsed)
            for uri, text in zip(raw, texts, strict=True):
                typed[uri].append(None if text is None else next(present))
        return cls(fields, {uri: tuple(values) for uri, values in typed.items()})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(field.name for field in self.fields)

    def values(self, file_uri: str) -> dict[str, Any]:
        return dict(zip(self.names, self._values.get(file_uri, ()), strict=False))

    def keeps(self, file_uri: str, filters: Sequence[Any]) -> bool:
        """Whether the file's partition values can satisfy every filter (unknown: kept)."""
        values = self.values(file_uri)
        return all(matches(f, values[column(f)]) is not False for f in filters)

    def add_columns(self, batch: pa.RecordBatch, file_uri: str) -> pa.RecordBatch:
        """``batch`` with this file's partition values as constant columns (replacing any
        column of the same name, as the directory is what Spark reports)."""
        values = self.values(file_uri)
        for field in self.fields:
            array = pa.array([values[field.name]] * batch.num_rows, field.type)
            index = batch.schema.get_field_index(field.name)
            if index >= 0:
                batch = batch.set_column(index, field, array)
            else:
                batch = batch.append_column(field, array)
        return batch


def column(f: Any) -> str:
    """The top-level column a filter names ("" for a nested one, which nothing here prunes)."""
    target = f.child if type(f).__name__ == "Not" else f
    path: tuple[str, ...] = getattr(target, "attribute", ())
    return str(path[0]) if len(path) == 1 else ""


def matches(f: Any, value: Any) -> bool | None:
    """A filter evaluated on one exact value; None when it cannot be told here."""
    kind = type(f).__name__
    if kind == "Not":
        inner = matches(f.child, value)
        return None if inner is None else not inner
    if kind == "IsNull":
        return value is None
    if kind == "IsNotNull":
        return value is not None
    if kind == "EqualNullSafe":
        return bool(value == f.value)
    if value is None:
        return False
    try:
        return _compare(kind, value, f)
    except TypeError:
        return None


def _compare(kind: str, value: Any, f: Any) -> bool | None:
    if kind == "EqualTo":
        return bool(value == f.value)
    if kind == "In":
        return value in f.value
    if kind == "GreaterThan":
        return bool(value > f.value)
    if kind == "GreaterThanOrEqual":
        return bool(value >= f.value)
    if kind == "LessThan":
        return bool(value < f.value)
    if kind == "LessThanOrEqual":
        return bool(value <= f.value)
    if kind == "StringStartsWith":
        return str(value).startswith(f.value)
    if kind == "StringEndsWith":
        return str(value).endswith(f.value)
    if kind == "StringContains":
        return f.value in str(value)
    return None


def may_hold(f: Any, low: Any, high: Any, nulls: int | None) -> bool:
    """Whether a row group whose column lies in ``[low, high]`` (with ``nulls`` nulls; None:
    unknown) may hold a row matching ``f``; True whenever it cannot be told."""
    kind = type(f).__name__
    try:
        if kind == "IsNull":
            return nulls is None or nulls > 0
        if low is None or high is None:
            return True
        if kind == "EqualTo":
            return bool(low <= f.value <= high)
        if kind == "In":
            return any(low <= v <= high for v in f.value if v is not None)
        if kind in ("GreaterThan", "GreaterThanOrEqual"):
            return bool(high > f.value or (kind == "GreaterThanOrEqual" and high == f.value))
        if kind in ("LessThan", "LessThanOrEqual"):
            return bool(low < f.value or (kind == "LessThanOrEqual" and low == f.value))
    except TypeError:
        return True
    return True
