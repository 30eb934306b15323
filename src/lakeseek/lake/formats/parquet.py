"""Parquet data files, read as Spark reads them: INT96 as microseconds, and the values of files
Spark rebases from the Julian calendar rebased (:mod:`lakeseek.lake.datetimes`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from lakeseek.lake.datetimes import (
    file_rebase,
    open_parquet,
    parquet_format,
    spark_arrow_schema,
    spark_read_type,
    spark_view,
)
from lakeseek.lake.formats.base import ColumnStatistics, DataFile, DataFormat, register_format

# Spark's Parquet reader (parquet-mr) skips row groups by their statistics, dictionaries, page
# indexes and bloom filters, all wrong for floating point by SQL's rules: statistics leave NaN
# out (Spark's NaN equals NaN and is above every number), and dictionaries and bloom filters
# compare bits (-0.0 is not 0.0). A query filtering a floating-point column is read with none of
# them, as is one comparing with a date before the Gregorian calendar (to_spark's
# _statistics_mislead). (The JVM data source instead pushes no such filter:
# lakeseek/ExactParquetFileFormat.java.)
SPARK_FLOAT_SAFE_OPTIONS = {
    f"parquet.filter.{name}.enabled": "false" for name in ("stats", "dictionary", "columnindex", "bloom")
}


def spark_filterable(schema: pa.Schema) -> list[str]:
    """The columns of ``schema`` that a file lakeseek writes for Spark to read (an OTree lake's)
    keeps statistics of: all but the floating-point ones, which Spark's reader would filter
    wrongly by them (see ``SPARK_FLOAT_SAFE_OPTIONS``)."""
    return [field.name for field in schema if not pa.types.is_floating(field.type)]


class ParquetFile(DataFile):
    def __init__(self, file: pq.ParquetFile) -> None:
        self.file = file

    @property
    def schema(self) -> pa.Schema:
        return spark_arrow_schema(self.file)

    @property
    def num_rows(self) -> int:
        return self.file.metadata.num_rows

    @property
    def row_group_rows(self) -> list[int]:
        metadata = self.file.metadata
        return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]

    def read(self, columns: list[str], types: Mapping[str, pa.DataType] | None = None) -> pa.Table:
        table = self.file.read(columns=columns, use_threads=False)
        for position, field in enumerate(table.schema):
            if spark_read_type(field.type) != field.type:
                column = table.column(position).cast(spark_read_type(field.type))
                table = table.set_column(position, field.with_type(column.type), column)
        rebase = file_rebase(self.file.metadata) if columns else None
        return table if rebase is None else rebase.apply(table)

    def statistics(self, columns: list[str]) -> dict[str, ColumnStatistics]:
        """The row groups' statistics of each column, combined; none of a column some row
        group has none of, and none of the dates and timestamps of a file Spark rebases."""
        metadata = self.file.metadata
        positions = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
        rebased = file_rebase(metadata) is not None
        found = {}
        for column in columns:
            position = positions.get(column)
            if position is None:
                continue
            chunks = [metadata.row_group(group).column(position) for group in range(metadata.num_row_groups)]
            found[column] = _combined(chunks, rebased)
        return {column: stats for column, stats in found.items() if stats is not None}


def _combined(chunks: list[pq.ColumnChunkMetaData], rebased: bool) -> ColumnStatistics | None:
    parts = [chunk.statistics for chunk in chunks]
    if any(part is None for part in parts):
        return None
    values = sum(part.num_values for part in parts)
    nulls = sum(part.null_count for part in parts) if all(part.has_null_count for part in parts) else None
    size = sum(chunk.total_uncompressed_size for chunk in chunks)
    dictionary = None
    if all(chunk.has_dictionary_page for chunk in chunks):
        dictionary = sum(chunk.data_page_offset - chunk.dictionary_page_offset for chunk in chunks)
    bounded = [part for part in parts if part.num_values]
    if rebased or not bounded or not all(part.has_min_max for part in bounded):
        return ColumnStatistics(None, None, nulls, values, size, dictionary)
    try:
        low, high = min(p.min for p in bounded), max(p.max for p in bounded)
    except (TypeError, OverflowError, ValueError):  # of no order Python knows, or beyond its years
        low = high = None
    return ColumnStatistics(low, high, nulls, values, size, dictionary)


class ParquetFormat(DataFormat):
    name = "parquet"
    title = "Parquet"

    def open(self, file: pa.NativeFile, path: str) -> ParquetFile:
        return ParquetFile(open_parquet(file))

    keeps_footers = True

    def dataset_format(self, schema: pa.Schema, *, local: bool = False) -> ds.ParquetFileFormat:
        return parquet_format(coalesce_reads=not local)

    def row_group_options(self, row_groups: Sequence[int] | None) -> dict[str, Any]:
        return {"row_groups": row_groups}

    def subset(self, fragment: ds.Fragment, row_groups: Sequence[int]) -> ds.Fragment:
        return fragment.subset(row_group_ids=list(row_groups))

    def view(self, dataset: ds.FileSystemDataset) -> Any:
        return spark_view(dataset)

    def spark_read(self, reader: Any, uris: list[str], *, statistics_unsafe: bool = True) -> Any:
        return (reader.options(**SPARK_FLOAT_SAFE_OPTIONS) if statistics_unsafe else reader).parquet(*uris)


PARQUET = register_format(ParquetFormat())
