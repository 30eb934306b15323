"""Sketch files: one row per data file (or per row group of one), the sketches of each column
(Hyperspace's data-skipping index, in-process).

A segment file is Parquet with ``file_id`` (int32) and ``row_group`` (int32; 0 where the index
sketches whole files), sorted by both, and, for the segment's ``n``-th column, of the rows
the segment row stands for:

- ``min_n``, ``max_n`` (the key type): the lowest and highest non-NULL key (NULL when
  there is none);
- ``nulls_n`` (bool): whether they hold NULL; NULL means *unknown* (a file merged in
  without sketches of this column), and such a file is always read;
- ``values_n`` (list of keys): their distinct non-NULL keys, when at most ``value_list``;
- ``bloom_n`` (binary): otherwise a bloom filter of them (:mod:`lakeseek.format.bloom`).

A lookup reads only the columns its condition needs (bounds for a range; bounds and members
for values). docs/format.md specifies the file.
"""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeseek.exceptions import IndexCorruptError, one_line
from lakeseek.format.bloom import BloomFilter, keys_held
from lakeseek.format.footers import parquet_bytes, read_checked_footer
from lakeseek.format.hashing import hash64
from lakeseek.format.values import is_temporal_key, key_of, keys_of
from lakeseek.io import Storage
from lakeseek.kinds.base import FILE_ID, LOCATION_SHIFT, ROW_GROUP
from lakeseek.kinds.keys import key_number
from lakeseek.kinds.skipping.content import ColumnSummary, SketchSegment, SkippingConfig

BOUNDS = ("min", "max", "nulls")
MEMBERS = ("values", "bloom")


def sketch_fields(number: int, key_type: pa.DataType) -> list[pa.Field]:
    return [
        pa.field(f"min_{number}", key_type),
        pa.field(f"max_{number}", key_type),
        pa.field(f"nulls_{number}", pa.bool_()),
        pa.field(f"values_{number}", pa.list_(key_type)),
        pa.field(f"bloom_{number}", pa.binary()),
    ]


def sketch_schema(key_types: list[pa.DataType]) -> pa.Schema:
    fields = [pa.field(FILE_ID, pa.int32(), nullable=False), pa.field(ROW_GROUP, pa.int32(), nullable=False)]
    for number, key_type in enumerate(key_types):
        fields.extend(sketch_fields(number, key_type))
    return pa.schema(fields)


def sketch(keys: pa.Array, config: SkippingConfig) -> tuple[dict, np.ndarray]:
    """One file's sketch of one column from its distinct keys (NULL among them when it holds
    NULL), and the hashes of its non-NULL keys (for estimating distinct values)."""
    present = keys.drop_null()
    bounds = pc.min_max(present)
    hashes = hash64(present) if len(present) else np.zeros(0, np.uint64)
    listed = len(present) <= config.value_list
    bloom = None
    if not listed and config.bloom:
        bloom = BloomFilter.build(present).to_bytes()
    # Arrow scalars and arrays, not Python values: a date beyond Python's years has none.
    row = {
        "min": bounds["min"] if len(present) else None,
        "max": bounds["max"] if len(present) else None,
        "nulls": keys.null_count > 0,
        "values": present if listed else None,
        "bloom": bloom,
    }
    return row, hashes


def rows_table(places: list[tuple[int, int]], rows: list[list[dict]], key_types: list[pa.DataType]) -> pa.Table:
    """Sketch rows (per ``(file_id, row_group)``, one dict per column) as a table of :func:`sketch_schema`."""
    schema = sketch_schema(key_types)
    data: dict[str, list] = {FILE_ID: [p[0] for p in places], ROW_GROUP: [p[1] for p in places]}
    for number in range(len(key_types)):
        for part in (*BOUNDS, *MEMBERS):
            data[f"{part}_{number}"] = [row[number][part] for row in rows]
    return pa.table(data, schema=schema)


def summarize(
    table: pa.Table, number: int, key_type: pa.DataType, distinct: float, sizes: dict[str, int]
) -> ColumnSummary:
    """The cost model's view of one column of a segment table (``sizes``: its columns' bytes as written)."""
    low, high = table.column(f"min_{number}"), table.column(f"max_{number}")
    has_keys = pc.is_valid(low)
    files_with_keys = pc.sum(has_keys.cast(pa.int64())).as_py() or 0
    lowest, highest = pc.min(low), pc.max(high)
    low_key = key_of(lowest, key_type) if lowest.is_valid else None
    high_key = key_of(highest, key_type) if highest.is_valid else None
    span_share = 1.0
    if low_key is not None and high_key is not None and files_with_keys:
        numbers = _numbers(low.filter(has_keys)), _numbers(high.filter(has_keys))
        width = key_number(high_key) - key_number(low_key)
        span_share = float(np.mean(numbers[1] - numbers[0]) / width) if width > 0 else 1.0
    # Files a value is in: the files' distinct values over the segment's.
    in_files = values_in_files(table, number)
    files_per_value = min(max(in_files / max(distinct, 1.0), 1.0 if files_with_keys else 0.0), table.num_rows)
    return ColumnSummary(
        min=low_key,
        max=high_key,
        null_files=pc.sum(table.column(f"nulls_{number}").fill_null(True).cast(pa.int64())).as_py() or 0,
        bounds_only_files=_bounds_only(table, number, has_keys),
        files_per_value=float(files_per_value),
        distinct=float(distinct),
        span_share=min(max(span_share, 0.0), 1.0),
        bounds_bytes=sum(sizes[f"{part}_{number}"] for part in BOUNDS) + sizes[FILE_ID] + sizes[ROW_GROUP],
        members_bytes=sum(sizes[f"{part}_{number}"] for part in MEMBERS),
    )


def _bounds_only(table: pa.Table, number: int, has_keys: pa.ChunkedArray) -> int:
    """Files with keys whose sketch has no member test (neither a value list nor a bloom filter)."""
    unsketched = pc.and_(pc.is_null(table.column(f"values_{number}")), pc.is_null(table.column(f"bloom_{number}")))
    return pc.sum(pc.and_(has_keys, unsketched).cast(pa.int64())).as_py() or 0


def values_in_files(table: pa.Table, number: int) -> float:
    """The distinct values of each file, summed over the files (exact for value lists, the
    bloom filter's size's for the others)."""
    listed = pc.sum(pc.list_value_length(table.column(f"values_{number}")).fill_null(0)).as_py() or 0
    blooms = pc.binary_length(table.column(f"bloom_{number}").drop_null()).to_numpy()
    bloomed = float(np.sum(keys_held(blooms))) if len(blooms) else 0.0
    return float(listed + bloomed)


def _numbers(keys: pa.ChunkedArray) -> np.ndarray:
    if pa.types.is_uint64(keys.type):
        return keys.to_numpy().astype(np.float64)  # beyond int64's range too
    if pa.types.is_integer(keys.type) or is_temporal_key(keys.type):
        storage = pa.int32() if pa.types.is_date32(keys.type) else pa.int64()
        return keys.cast(storage).to_numpy().astype(np.float64)
    return np.array([key_number(k) for k in keys_of(keys)], dtype=np.float64)


def column_bytes(data: bytes) -> dict[str, int]:
    """Compressed bytes per column of a segment file (from its Parquet metadata)."""
    metadata = pq.ParquetFile(io.BytesIO(data)).metadata
    sizes = dict.fromkeys(metadata.schema.to_arrow_schema().names, 0)
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for position in range(row_group.num_columns):
            chunk = row_group.column(position)
            sizes[chunk.path_in_schema.split(".")[0]] += chunk.total_compressed_size
    return sizes


def encode_segment(table: pa.Table) -> bytes:
    return parquet_bytes(table, max(1, table.num_rows), compression="zstd", write_page_checksum=True)


def locations(table: pa.Table) -> np.ndarray:
    """Each sketch row's data file and row group, as a location (``lakeseek.kinds.base``)."""
    file_ids = table.column(FILE_ID).to_numpy().astype(np.int64)
    return (file_ids << LOCATION_SHIFT) | table.column(ROW_GROUP).to_numpy().astype(np.int64)


def read_segment(storage: Storage, path: str, segment: SketchSegment, columns: list[str] | None) -> pa.Table:
    """Columns of a segment file (all: None) with ``file_id`` and ``row_group``, checked to be
    what the root says it is (its footer's crc32 first: see lakeseek.format.footers)."""
    rows = segment.rows
    try:
        footer = read_checked_footer(
            lambda offset, length: storage.read_range(path, offset, length), segment.size, segment.footer_crc32
        )
        with storage.open_input(path, segment.size) as source:
            parquet = pq.ParquetFile(source, metadata=footer, page_checksum_verification=True)
            names = parquet.schema_arrow.names
            if parquet.metadata.num_rows != rows or FILE_ID not in names or ROW_GROUP not in names:
                raise IndexCorruptError(f"sketch file {path} does not hold the {rows:,} rows its index names")
            return parquet.read(columns=None if columns is None else [FILE_ID, ROW_GROUP, *columns])
    except IndexCorruptError:
        raise
    except (OSError, ValueError, KeyError, pa.ArrowException) as error:
        raise IndexCorruptError(f"sketch file {path} is missing or damaged ({one_line(error)})") from error
