"""What a lake's data files record of their columns: per file, its rows and, per column, the
lowest and highest non-NULL value, the NULLs and the non-NULL values (a Parquet footer's
statistics; a partition column's value). Estimates read them (``explain --what-if``), never
answers: a file without statistics of a column is one that may hold anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.io import Stamp
from lakeseek.lake.files import open_data_file, reading_data_files
from lakeseek.lake.formats.base import ColumnStatistics

FOOTER_THREADS = 16


@dataclass(frozen=True)
class ColumnBounds:
    """One column over the files, in file order: bounds (the column's type; NULL: unknown or
    no value), NULLs (NaN: unknown), non-NULL values, distinct values (estimated from the
    dictionary's bytes where the file has one; else taken to be the values), and uncompressed
    bytes per value."""

    mins: pa.Array
    maxs: pa.Array
    nulls: np.ndarray
    values: np.ndarray
    distinct: np.ndarray
    value_bytes: float


@dataclass(frozen=True)
class FileStatistics:
    paths: list[str]
    rows: np.ndarray
    sizes: np.ndarray
    columns: dict[str, ColumnBounds]


def file_statistics(
    source,
    files: Mapping[str, Stamp],
    schema: pa.Schema,
    columns: Sequence[str],
    partition_columns: Sequence[str] = (),
) -> FileStatistics:
    """The statistics of ``columns`` (of ``schema``) in every file of ``files``, footers read
    in parallel; a damaged or vanished file is a DataFileError naming it."""
    paths = sorted(files)
    source.check_columns(paths, files)
    stored = [c for c in columns if c not in partition_columns]
    partitions = pa.schema([schema.field(c) for c in partition_columns if c in schema.names])

    def read(path: str) -> tuple[int, dict[str, ColumnStatistics]]:
        opened = open_data_file(source, path, files[path].size)
        found = opened.statistics(stored)
        rows = opened.num_rows
        if len(partitions):
            for name, value in source.partition_values(path, partitions, "UTC").items():
                if name in columns:
                    found[name] = ColumnStatistics(
                        value, value, rows if value is None else 0, 0 if value is None else rows
                    )
        return rows, found

    with reading_data_files(source, paths):
        if len(paths) <= 1:
            per_file = [read(path) for path in paths]
        else:
            with ThreadPoolExecutor(min(FOOTER_THREADS, len(paths))) as pool:
                per_file = list(pool.map(read, paths))
    return FileStatistics(
        paths=paths,
        rows=np.array([rows for rows, _ in per_file], np.int64),
        sizes=np.array([files[path].size for path in paths], np.int64),
        columns={
            column: _bounds([found.get(column) for _, found in per_file], _value_type(schema.field(column).type))
            for column in columns
        },
    )


def _bounds(found: list[ColumnStatistics | None], column_type: pa.DataType) -> ColumnBounds:
    mins = _typed([None if stats is None else stats.min for stats in found], column_type)
    maxs = _typed([None if stats is None else stats.max for stats in found], column_type)
    nulls = np.array([np.nan if stats is None or stats.nulls is None else stats.nulls for stats in found], np.float64)
    # A file without statistics may hold values: one, so it is never taken for empty.
    values = np.array([1 if stats is None else stats.values for stats in found], np.int64)
    width = column_type.byte_width if _fixed_width(column_type) else None
    recorded = [stats for stats in found if stats is not None and stats.values]
    if width is None:
        total = sum(stats.bytes for stats in recorded)
        width = total / max(sum(stats.values for stats in recorded), 1) if total else 16.0
    entry = _dictionary_entry_bytes(mins, maxs, width)
    distinct = np.array(
        [
            values[n] if stats is None or stats.dictionary_bytes is None else stats.dictionary_bytes / entry[n]
            for n, stats in enumerate(found)
        ],
        np.float64,
    )
    distinct = np.clip(distinct, np.minimum(values, 1), values)
    return ColumnBounds(mins, maxs, nulls, values, distinct, float(width))


def _dictionary_entry_bytes(mins: pa.Array, maxs: pa.Array, width: float) -> np.ndarray:
    """Per file, the bytes of one entry of its dictionary page: a text or binary value is its
    length (taken as the mean of the file's bounds') after a 4-byte length; the bytes per value
    of the column chunk would be the dictionary's indices, a fraction of a byte each when
    few values repeat, and a dictionary of four status codes read as hundreds of values."""
    kind = mins.type
    if not any(test(kind) for test in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary)):
        return np.full(len(mins), width)
    lengths = pc.divide(pc.add(pc.binary_length(mins), pc.binary_length(maxs)).cast(pa.float64()), 2.0)
    return np.asarray(lengths.fill_null(width - 4.0).to_numpy(zero_copy_only=False), np.float64) + 4.0


def _value_type(arrow_type: pa.DataType) -> pa.DataType:
    return arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type


def _fixed_width(column_type: pa.DataType) -> bool:
    try:
        return column_type.byte_width > 0
    except ValueError:
        return False


def _typed(values: list, column_type: pa.DataType) -> pa.Array:
    """Bounds in the column's type; one that does not convert (a file of another type) is unknown."""
    try:
        return pa.array(values, type=column_type, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pa.array([_one(value, column_type) for value in values], type=column_type)


def _one(value: object, column_type: pa.DataType) -> object:
    try:
        return pa.scalar(value, type=column_type, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
