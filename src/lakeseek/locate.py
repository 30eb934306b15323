"""Batch lookups (Hudi's getRecordLocations): many keys in, (key, file) pairs out, no Spark.

The index's kind locates the keys in its files (the sorted kind: one vectorised search per
segment, each needed chunk read once). Files the index does not cover (new or rewritten
since indexing) are read, only the one column, so the pairs are exact: a file is paired
with a key only if it holds a row with that key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from lakeseek.expressions.binding import value_type
from lakeseek.format.values import KeyValue
from lakeseek.kinds.base import FILE_ID, KEY, ROW_GROUP, KindReader
from lakeseek.lake.state import LakeState

FILE = "file"


def locate_keys(
    reader: KindReader,
    state: LakeState,
    column: str,
    keys: pa.Array,
    open_files: Callable[[list[str]], ds.Dataset],
) -> pa.Table | None:
    """``(key, file[, row_group])`` for every key of ``keys`` (distinct, of the reader's key
    type) held by a file of the lake; None when the index's kind cannot locate keys.

    ``file`` is the path in the lake source; ``open_files(paths)`` gives a pyarrow dataset
    over lake files (here: those the index does not cover, which are read).
    """
    located = reader.locate(column, keys)
    if located is None:
        return None
    entries, exact = located
    live = pa.table(
        {FILE_ID: pa.array(list(state.indexed), pa.int32()), FILE: pa.array(list(state.indexed.values()), pa.string())}
    )
    names = [KEY, FILE, ROW_GROUP] if reader.row_groups else [KEY, FILE]
    found = entries.join(live, FILE_ID, join_type="inner").select(names)
    if not exact:
        # A key stands for several column values (nanoseconds kept as microseconds): the
        # files it names are candidates, and reading them keeps the pairs that hold.
        candidates = sorted(set(found.column(FILE).to_pylist()))
        found = scan_keys(candidates, column, keys, open_files, reader.row_groups)
    if state.unindexed:
        found = pa.concat_tables([found, scan_keys(state.unindexed, column, keys, open_files, reader.row_groups)])
    return found.sort_by([(KEY, "ascending"), (FILE, "ascending")])


def exact_keys(keys: Iterable[KeyValue] | pa.Array, column_type: pa.DataType, key_type: pa.DataType) -> pa.Array:
    """The distinct non-NULL ``keys`` some value of the column can equal, as index keys.

    A key that changes when converted to the column's type and back (``1.5`` for an
    integer column, a datetime past midnight for a date column, a string for a number)
    equals no value: it is dropped rather than rounded into another key's pairs.
    """
    given = keys if isinstance(keys, pa.Array) else _array(list(keys), column_type)
    if given.type != column_type:
        try:
            converted = given.cast(column_type, safe=False)
            same = pc.fill_null(pc.equal(converted.cast(given.type, safe=False), given), False)
            given = converted.filter(same)
        except (pa.ArrowException, ValueError):  # some keys do not convert at all ('x' for a number)
            given = pa.array([v for v in (_converted(k, column_type) for k in given) if v is not None], column_type)
    return pc.unique(given.drop_null().cast(key_type, safe=False))


def _converted(key: pa.Scalar, column_type: pa.DataType) -> object:
    """One key as a value of the column's type, or None when it converts to no equal value."""
    try:
        converted = key.cast(column_type, safe=False)
        return converted.as_py() if converted.cast(key.type, safe=False) == key else None
    except (pa.ArrowException, ValueError):
        return None


def _array(keys: list, column_type: pa.DataType) -> pa.Array:
    try:
        return pa.array(keys)  # the keys' own types, so that conversion can be checked
    except (pa.ArrowException, ValueError, TypeError, OverflowError):  # mixed Python types: one by one
        converted = (_converted(pa.scalar(key), column_type) for key in keys if key is not None)
        return pa.array([value for value in converted if value is not None], column_type)


def scan_keys(
    paths: list[str],
    column: str,
    keys: pa.Array,
    open_files: Callable[[list[str]], ds.Dataset],
    row_groups: bool = False,
) -> pa.Table:
    """``(key, file)`` pairs found by reading ``column`` of each file (no row group is named)."""
    keys = keys.drop_null()
    parts = []
    for path in paths:
        dataset = open_files([path])  # one file at a time: a file may spell the column another way
        column_keys = keys.cast(value_type(dataset.schema.field(column).type))
        table = dataset.to_table(columns=[column], filter=pc.field(column).isin(column_keys))
        held = pc.unique(table.column(column)).cast(keys.type, safe=False)
        parts.append(pa.table({KEY: held, FILE: pa.array([path] * len(held), pa.string())}))
    schema = pa.schema([pa.field(KEY, keys.type), pa.field(FILE, pa.string())])
    scanned = pa.concat_tables(parts) if parts else schema.empty_table()
    if row_groups:
        scanned = scanned.append_column(ROW_GROUP, pa.nulls(scanned.num_rows, pa.int32()))
    return scanned.sort_by([(KEY, "ascending"), (FILE, "ascending")])
