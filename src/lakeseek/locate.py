"""Batch lookups (Hudi's getRecordLocations): many keys in, (key, file) pairs out, no Spark.

The index's kind locates the keys in its files (the sorted kind: one vectorised search per
segment, each needed chunk read once). Files the index does not cover (new or rewritten
since indexing) are read, only the one column, so the pairs are exact: a file is paired
with a key only if it holds a row with that key.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from datetime import datetime
from decimal import Decimal, localcontext

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from lakeseek.exceptions import PredicateTypeError
from lakeseek.expressions import Comparison, python_literal
from lakeseek.expressions.binding import compare, value_type
from lakeseek.format.values import KeyValue
from lakeseek.kinds.base import FILE_ID, KEY, ROW_GROUP, KindReader
from lakeseek.lake.state import LakeState

FILE = "file"


def locate_keys(
    reader: KindReader,
    state: LakeState,
    column: str,
    keys: pa.Array,
    key_type: pa.DataType,
    open_files: Callable[[list[str]], ds.Dataset],
) -> pa.Table | None:
    """``(key, file[, row_group])`` for every key of ``keys`` (distinct values of the column,
    in its type, as :func:`exact_keys` gives them) held by a file of the lake, the keys in the
    column's type; None when the index's kind cannot locate keys (of ``key_type``).

    ``file`` is the path in the lake source; ``open_files(paths)`` gives a pyarrow dataset
    over lake files (here: those the index does not cover, which are read).
    """
    located = reader.locate(column, pc.unique(keys.cast(key_type, safe=False)))
    if located is None:
        return None
    entries, exact = located
    found = _with_paths(entries, state, reader.row_groups)
    if exact:  # each index key is one value of the column
        found = found.set_column(0, KEY, found.column(KEY).cast(keys.type))
    else:
        # A key stands for several column values (nanoseconds kept as microseconds): the
        # files it names are candidates, and reading them keeps the pairs that hold.
        candidates = sorted(set(found.column(FILE).to_pylist()))
        found = scan_keys(candidates, column, keys, open_files, reader.row_groups)
    if state.unindexed:
        found = pa.concat_tables([found, scan_keys(state.unindexed, column, keys, open_files, reader.row_groups)])
        return found.sort_by([(KEY, "ascending"), (FILE, "ascending")])
    return found


def _with_paths(entries: pa.Table, state: LakeState, row_groups: bool) -> pa.Table:
    """``(key, file[, row_group])`` of the entries naming files the index still vouches for,
    sorted by key, then path (ranks of the paths, not the strings, are compared)."""
    ids, paths, rank = state.indexed_paths
    file_ids = entries.column(FILE_ID).to_numpy()
    at = np.minimum(np.searchsorted(ids, file_ids), max(len(ids) - 1, 0))
    live = np.flatnonzero(ids[at] == file_ids) if len(ids) else np.zeros(0, dtype=np.int64)
    at = at[live]
    order = pc.sort_indices(
        pa.table({KEY: entries.column(KEY).take(live), "rank": rank[at]}), [(KEY, "ascending"), ("rank", "ascending")]
    )
    chosen = live[order.to_numpy()]
    columns = {KEY: entries.column(KEY).take(chosen), FILE: paths.take(at[order.to_numpy()])}
    if row_groups:
        columns[ROW_GROUP] = entries.column(ROW_GROUP).take(chosen)
    return pa.table(columns)


def exact_keys(keys: Iterable[KeyValue] | pa.Array, column: pa.Field) -> pa.Array:
    """The distinct non-NULL values of ``column`` some key equals, in its type (a key of
    nanoseconds stays one: an index key of microseconds would name other values too).

    A key equals the values ``files("column = key")`` finds, as Spark compares them: an
    integer or a decimal by its exact value (``Decimal("1.5")`` no integer), a float as a
    DOUBLE the column is cast to (``0.01`` the decimal 0.01, ``2.0`` the integer 2, and every
    bigint that rounds to a float beyond 2**53), a string cast as Spark casts it (a malformed
    one is an error, as in a predicate), a datetime as a TIMESTAMP (aware) or a TIMESTAMP_NTZ
    (naive). Keys already of the column's type, or integers and decimals that all convert
    exactly, are converted at once; the others one by one.
    """
    try:
        return _exact_keys(keys, column)
    except UnicodeEncodeError as error:  # a string holding a lone surrogate, which no column holds
        raise PredicateTypeError(f"a key is not valid UTF-8 text: {error.object!r}") from None


def _exact_keys(keys: Iterable[KeyValue] | pa.Array, column: pa.Field) -> pa.Array:
    column_type = value_type(column.type)
    given = keys if isinstance(keys, pa.Array) else _array(list(keys))
    if isinstance(given, pa.Array) and given.type == column_type:
        return pc.unique(given.drop_null())
    if isinstance(given, pa.Array):
        converted = _converted_at_once(given.drop_null(), column_type)
        if converted is not None:
            return pc.unique(converted)
        given = given.to_pylist()
    values = [value for key in given if key is not None for value in _column_values(key, column)]
    return pc.unique(pa.array(values, column_type))


def _array(keys: list) -> pa.Array | list:
    """Keys of one Python type as an Arrow array of that type; others as they are (an array
    of mixed keys would take a common type, and a float type rounds large integers)."""
    kinds = {type(key) for key in keys if key is not None}
    if len(kinds) != 1:
        return keys
    (kind,) = kinds
    try:
        if issubclass(kind, datetime) and hasattr(kind, "nanosecond"):
            # pandas' Timestamp: pyarrow would infer microseconds and drop the nanoseconds.
            aware = {key.tzinfo is not None for key in keys if key is not None}
            return pa.array(keys, pa.timestamp("ns", tz="UTC" if aware.pop() else None)) if len(aware) == 1 else keys
        return pa.array(keys)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        return keys


def _converted_at_once(given: pa.Array, column_type: pa.DataType) -> pa.Array | None:
    """Integers or decimals (or dates and timestamps) that all convert to the column's type
    and back without loss, converted; else None."""
    families = ((pa.types.is_integer, pa.types.is_decimal), (pa.types.is_date, pa.types.is_timestamp))
    if not any(
        any(is_kind(given.type) for is_kind in family) and any(is_kind(column_type) for is_kind in family)
        for family in families
    ):
        return None
    try:
        converted = given.cast(column_type)  # safe: a value out of range or rounded is an error
        if pc.all(pc.equal(converted.cast(given.type), given)).as_py() is False:
            return None
    except (pa.ArrowException, ValueError):
        return None
    return converted


def _column_values(key: object, column: pa.Field) -> list[object]:
    """The values of ``column`` equal to ``key`` (see :func:`exact_keys`)."""
    column_type = value_type(column.type)
    numeric = pa.types.is_integer(column_type) or pa.types.is_decimal(column_type) or pa.types.is_floating(column_type)
    if numeric and isinstance(key, numbers.Real | Decimal) and not isinstance(key, bool):
        if isinstance(key, float | np.floating):
            return _double_matches(float(key), column_type, column.name)
        return _present(_exact_number(key, column_type))
    bound = compare("=", column, python_literal(key))
    if not isinstance(bound, Comparison):
        return []  # FALSE for every value
    if bound.literal.type == column_type:
        return [bound.literal.value]
    if pa.types.is_floating(bound.literal.type):
        return _double_matches(bound.literal.value, column_type, column.name)
    try:  # compared in a wider type (bytes with a fixed-size binary column): the value it converts to exactly
        compared = pa.scalar(bound.literal.value, bound.literal.type)
        value = compared.cast(column_type)
        return [value.as_py()] if value.cast(compared.type) == compared else []
    except (pa.ArrowException, ValueError, OverflowError):
        return []


def _present(value: object | None) -> list[object]:
    return [] if value is None else [value]


def _exact_number(number: numbers.Real | Decimal, column_type: pa.DataType) -> object | None:
    """The value of a numeric column whose exact value is ``number``, or None."""
    if isinstance(number, float) and number != number:
        return number if pa.types.is_floating(column_type) else None  # NaN = NaN, as Spark has it
    exact = Decimal(number) if isinstance(number, float) and pa.types.is_decimal(column_type) else number
    try:
        value = pa.scalar(exact, column_type).as_py()
    except (pa.ArrowException, OverflowError, ValueError, TypeError):
        return None
    return value if value == number else None


# A double key naming more values than this (a decimal of many digits with a large scale) is refused.
MOST_VALUES_OF_A_DOUBLE = 4096


def _double_matches(number: float, column_type: pa.DataType, column: str) -> list[object]:
    """The values of a numeric column equal to ``number`` once cast to a double, as Spark
    compares a column with a DOUBLE: beyond 2**53 several integers (or decimals) round to one
    double, and each of them matches. A key naming too many values to list is an error."""
    if pa.types.is_floating(column_type):
        return _present(_exact_number(number, column_type))
    if not math.isfinite(number):
        return []
    # Below 2**53 a double equals one integer or none (2**53 + 1 already rounds to 2**53).
    if pa.types.is_integer(column_type) and abs(number) < 2**53:
        return _present(_exact_number(int(number), column_type)) if number == math.floor(number) else []
    scale = column_type.scale if pa.types.is_decimal(column_type) else 0
    if pa.types.is_decimal(column_type):
        largest = 10**column_type.precision - 1
        lowest, highest = -largest, largest
    else:
        bounds = np.iinfo(column_type.to_pandas_dtype())
        lowest, highest = int(bounds.min), int(bounds.max)
    # The reals rounding to ``number`` lie between the midpoints to its neighbouring doubles;
    # the column's values among them, in units of its last digit (exact: a double has at most
    # 767 significant digits).
    with localcontext(prec=1600):
        below, above = Decimal(math.nextafter(number, -math.inf)), Decimal(math.nextafter(number, math.inf))
        low, high = (below + Decimal(number)).scaleb(scale) / 2, (Decimal(number) + above).scaleb(scale) / 2
        first, last = max(math.ceil(low), lowest), min(math.floor(high), highest)
    if last - first >= MOST_VALUES_OF_A_DOUBLE:
        raise PredicateTypeError(
            f"the key {number!r} is compared with column '{column}' ({column_type}) as a double, which "
            f"{last - first + 1:,} of its values equal: give the keys as integers or decimals"
        )
    units = range(first, last + 1)
    values = [Decimal(unit).scaleb(-scale) for unit in units] if pa.types.is_decimal(column_type) else list(units)
    return [value for value in values if float(value) == number]


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
        held_keys = pc.field(column).isin(column_keys)
        if pa.types.is_floating(column_keys.type):
            # isin hashes -0.0 and 0.0 apart and finds no NaN, where = (Spark's, and files()'s)
            # finds -0.0 equal to 0.0 and NaN equal to NaN.
            if pc.any(pc.equal(column_keys, 0)).as_py():
                held_keys = held_keys | (pc.field(column) == pa.scalar(0, column_keys.type))
            if pc.any(pc.is_nan(column_keys)).as_py():
                held_keys = held_keys | pc.field(column).is_nan()
        table = dataset.to_table(columns=[column], filter=held_keys)
        held = pc.unique(table.column(column)).cast(keys.type, safe=False)
        parts.append(pa.table({KEY: held, FILE: pa.array([path] * len(held), pa.string())}))
    schema = pa.schema([pa.field(KEY, keys.type), pa.field(FILE, pa.string())])
    scanned = pa.concat_tables(parts) if parts else schema.empty_table()
    if row_groups:
        scanned = scanned.append_column(ROW_GROUP, pa.nulls(scanned.num_rows, pa.int32()))
    return scanned.sort_by([(KEY, "ascending"), (FILE, "ascending")])
