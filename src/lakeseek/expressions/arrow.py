"""Bound predicate -> pyarrow filter expression with SQL's three-valued logic.

Floating-point comparisons follow Spark, not IEEE: NaN equals NaN and is above every
other number (so ``x > 1`` keeps NaN rows), which makes ``read`` agree with Spark SQL.

A Parquet dataset simplifies a filter with each row group's statistics, in the file's own
column type, before it reads a row. Two of those simplifications fail in pyarrow, so the
expressions here avoid them: a 64-bit integer column compared in floating point goes
through ``decimal(20, 0)`` (the direct cast refuses statistics beyond 2^53; both casts round
correctly), and when a file holds a zoned timestamp column in another unit *and* zone than
the lake's, the statistics have no comparison kernel: such a read is made again with the
timestamp columns wrapped in a cast, which the statistics cannot simplify (it costs that
read its row-group pruning, only then). So are reads of files whose stored Arrow schema says
``string_view`` or ``binary_view`` (deltalake's delete, update and merge write them): pyarrow
compares such a column with no string literal, but casts it to the lake's type.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from lakeseek.expressions import And, ColumnComparison, Comparison, Constant, In, IsNull, Like, Not, Or, Predicate
from lakeseek.expressions.binding import value_type
from lakeseek.expressions.like import like
from lakeseek.expressions.types import arrow_scalar, common_type, is_bytes, is_text

_UNKNOWN = pc.scalar(pa.scalar(None, pa.bool_()))
_OPERATORS = {
    "=": lambda f, v: f == v,
    "<>": lambda f, v: f != v,
    "<": lambda f, v: f < v,
    "<=": lambda f, v: f <= v,
    ">": lambda f, v: f > v,
    ">=": lambda f, v: f >= v,
}


def to_arrow(predicate: Predicate, schema: pa.Schema, *, guarded: bool = False) -> pc.Expression:
    """A pyarrow expression keeping exactly the rows for which ``predicate`` is TRUE.

    ``guarded``: timestamp, string and binary columns compared through a cast to the lake's
    type, which row-group statistics cannot simplify (see the module's note)."""
    if isinstance(predicate, Constant):
        return _UNKNOWN if predicate.value is None else pc.scalar(predicate.value)
    if isinstance(predicate, And):
        return to_arrow(predicate.left, schema, guarded=guarded) & to_arrow(predicate.right, schema, guarded=guarded)
    if isinstance(predicate, Or):
        return to_arrow(predicate.left, schema, guarded=guarded) | to_arrow(predicate.right, schema, guarded=guarded)
    if isinstance(predicate, Not):
        return ~to_arrow(predicate.operand, schema, guarded=guarded)
    if isinstance(predicate, ColumnComparison):
        return _column_comparison(predicate, schema, guarded)
    field, column_type = _field(predicate.column, schema, guarded)
    if isinstance(predicate, IsNull):
        return field.is_null()
    if isinstance(predicate, Like):
        declared = schema.field(predicate.column).type  # a dictionary column has no regex kernel: decode it
        return like(field.cast(declared.value_type) if pa.types.is_dictionary(declared) else field, predicate.pattern)
    if isinstance(predicate, Comparison):
        # The comparison's type (see lakeseek.expressions.types): the column is cast up to it.
        compared = predicate.literal.type or column_type
        if compared != column_type:
            field = _cast(field, column_type, compared)  # to floating point: rounds as Spark's cast does
        if pa.types.is_floating(compared):
            return _float_comparison(predicate.op, field, predicate.literal.value, compared)
        return _OPERATORS[predicate.op](field, arrow_scalar(predicate.literal.value, compared))
    if isinstance(predicate, In):
        values = [lit.value for lit in predicate.literals]
        if pa.types.is_floating(column_type) and 0.0 in values:
            values += [0.0, -0.0]  # is_in tells the zeros apart; = (and Spark's IN) does not
        if any(isinstance(value, pa.Scalar) for value in values):  # dates beyond Python's years
            values = [arrow_scalar(value, column_type) for value in values]
        members = field.isin(pa.array(values, type=column_type))
        # is_in says FALSE for a NULL input; SQL says NULL, which NOT must keep NULL.
        return pc.if_else(field.is_null(), _UNKNOWN, members)
    raise TypeError(f"cannot convert {predicate!r}")


# Arrow binds and simplifies filter expressions recursively in C++: past some thousands of
# comparisons in one expression it overflows its stack, so larger predicates are evaluated
# in parts of at most this many comparisons, and the parts' results combined.
MAX_ARROW_COMPARISONS = 1_000


def read_matching(dataset: ds.Dataset, columns: list[str] | None, predicate: Predicate, schema: pa.Schema) -> pa.Table:
    """The rows of ``dataset`` for which ``predicate`` is TRUE (``columns`` of them; None: all)."""
    pruned, after = statistics_split(predicate, schema)
    if after is not None:
        wanted = columns if columns is not None else dataset.schema.names
        table = _read_filtered(dataset, _needed(wanted, predicate), pruned, schema)
        return table.filter(_mask(table, after, schema)).select(wanted)
    return _read_filtered(dataset, columns, predicate, schema)


def _read_filtered(
    dataset: ds.Dataset, columns: list[str] | None, predicate: Predicate | None, schema: pa.Schema
) -> pa.Table:
    if predicate is None:
        return dataset.to_table(columns=columns)
    if _comparisons(predicate) <= MAX_ARROW_COMPARISONS:
        try:
            return dataset.to_table(columns=columns, filter=to_arrow(predicate, schema))
        except pa.ArrowNotImplementedError:
            if not _guardable(predicate, schema):
                raise
            return dataset.to_table(columns=columns, filter=to_arrow(predicate, schema, guarded=True))
    wanted = columns if columns is not None else dataset.schema.names
    table = dataset.to_table(columns=_needed(wanted, predicate))
    return table.filter(_mask(table, predicate, schema)).select(wanted)


def _needed(wanted: list[str], predicate: Predicate) -> list[str]:
    return list(dict.fromkeys([*wanted, *sorted(predicate.columns())]))


def statistics_split(predicate: Predicate, schema: pa.Schema) -> tuple[Predicate | None, Predicate | None]:
    """``predicate`` as (the conjuncts a Parquet read may skip row groups by, the rest), whose
    AND is ``predicate``; None for an empty side.

    Parquet statistics leave NaN out of a floating-point column's min and max, and pyarrow
    reads min = max as the column's only value: a row group of NaN and 45.0 is skipped for
    ``x > 90`` (TRUE for NaN in Spark's order) and even for ``isnan(x)``. So a conjunct that a
    NaN can make TRUE is applied after the read, in memory, where no statistics decide."""
    parts = _conjuncts(predicate)
    safe = [part for part in parts if _nan_never_passes(part, schema)]
    if len(safe) == len(parts):
        return predicate, None
    return _all_of(safe), _all_of([part for part in parts if not _nan_never_passes(part, schema)])


def _conjuncts(predicate: Predicate) -> list[Predicate]:
    if isinstance(predicate, And):
        return [*_conjuncts(predicate.left), *_conjuncts(predicate.right)]
    return [predicate]


def _all_of(parts: list[Predicate]) -> Predicate | None:
    found = None
    for part in parts:
        found = part if found is None else And(found, part)
    return found


def _nan_never_passes(predicate: Predicate, schema: pa.Schema) -> bool:
    """Whether statistics that leave NaN out may skip row groups by ``predicate``: it reads no
    floating-point column, or it is an AND/OR (no NOT, which turns FALSE into TRUE) of such
    parts and of comparisons no NaN passes (=, <, <= or IN of numbers; IS NULL). Such a
    predicate TRUE on a row with NaN stays TRUE with the NaN replaced by any number, so a row
    group it holds for has a row that its statistics describe."""
    if not any(pa.types.is_floating(value_type(schema.field(column).type)) for column in predicate.columns()):
        return True
    if isinstance(predicate, And | Or):
        return _nan_never_passes(predicate.left, schema) and _nan_never_passes(predicate.right, schema)
    if isinstance(predicate, IsNull):
        return True
    if isinstance(predicate, Comparison):
        return predicate.op in ("=", "<", "<=") and not _is_nan(predicate.literal.value)
    if isinstance(predicate, In):
        return not any(_is_nan(literal.value) for literal in predicate.literals)
    return False


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _mask(table: pa.Table, predicate: Predicate, schema: pa.Schema) -> pa.ChunkedArray:
    """``predicate`` on every row of ``table``: TRUE, FALSE or NULL."""
    if _comparisons(predicate) <= MAX_ARROW_COMPARISONS:
        return ds.dataset(table).to_table(columns={"matches": to_arrow(predicate, schema)}).column("matches")
    if isinstance(predicate, And):
        return pc.and_kleene(_mask(table, predicate.left, schema), _mask(table, predicate.right, schema))
    if isinstance(predicate, Or):
        return pc.or_kleene(_mask(table, predicate.left, schema), _mask(table, predicate.right, schema))
    return pc.invert(_mask(table, predicate.operand, schema))


def matching_batches(
    dataset: ds.Dataset, columns: list[str], predicate: Predicate | None, schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """The batches of one file's ``dataset`` that ``predicate`` keeps, streamed (the retry of
    :func:`read_matching` holds because statistics fail a file before its first batch)."""
    pruned, after = (None, None) if predicate is None else statistics_split(predicate, schema)
    if after is None:
        yield from _filtered_batches(dataset, columns, predicate, schema)
        return
    for batch in _filtered_batches(dataset, _needed(columns, predicate), pruned, schema):
        table = pa.Table.from_batches([batch])
        yield from table.filter(_mask(table, after, schema)).select(columns).to_batches()


def _filtered_batches(
    dataset: ds.Dataset, columns: list[str], predicate: Predicate | None, schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    if predicate is None:
        yield from dataset.to_batches(columns=columns)
        return
    batches = dataset.to_batches(columns=columns, filter=to_arrow(predicate, schema))
    try:
        first = next(batches, None)
    except pa.ArrowNotImplementedError:
        if not _guardable(predicate, schema):
            raise
        batches = dataset.to_batches(columns=columns, filter=to_arrow(predicate, schema, guarded=True))
        first = next(batches, None)
    if first is not None:
        yield first
        yield from batches


def _guardable(predicate: Predicate, schema: pa.Schema) -> bool:
    return any(_guarded_type(value_type(schema.field(column).type)) for column in predicate.columns())


def _cast(field: pc.Expression, column_type: pa.DataType, compared: pa.DataType) -> pc.Expression:
    if pa.types.is_integer(column_type) and column_type.bit_width == 64 and pa.types.is_floating(compared):
        field = field.cast(pa.decimal128(20, 0))
    elif pa.types.is_decimal(column_type) and pa.types.is_floating(compared):
        # Arrow's decimal to double is not correctly rounded (99.99 becomes 99.99000000000001);
        # its parse of the decimal's text is, as Spark's cast is.
        field = field.cast(pa.string())
    elif pa.types.is_decimal(column_type) and pa.types.is_decimal(compared) and compared.scale < column_type.scale:
        # Past 38 digits Spark gives up scale (see common_type), rounding half up: Arrow's cast
        # truncates. Rounding up may need one more integer digit (0.99999 is 1.000 in scale 3)
        # than the column's type has: it rounds in a type one digit wider.
        wider = pa.decimal256(column_type.precision + 1, column_type.scale)
        options = pc.RoundOptions(compared.scale, "half_towards_infinity")
        field = pc.Expression._call("round", [field.cast(wider)], options)
    return field.cast(compared, safe=False)


def _comparisons(predicate: Predicate) -> int:
    if isinstance(predicate, And | Or):
        return _comparisons(predicate.left) + _comparisons(predicate.right)
    if isinstance(predicate, Not):
        return _comparisons(predicate.operand)
    return 1


def _field(column: str, schema: pa.Schema, guarded: bool) -> tuple[pc.Expression, pa.DataType]:
    """The column as an expression, and its type (of the values, for a dictionary column)."""
    field, column_type = pc.field(column), value_type(schema.field(column).type)
    if guarded and _guarded_type(column_type):
        field = field.cast(column_type)
    return field, column_type


def _guarded_type(column_type: pa.DataType) -> bool:
    return pa.types.is_timestamp(column_type) or is_text(column_type) or is_bytes(column_type)


def _column_comparison(predicate: ColumnComparison, schema: pa.Schema, guarded: bool) -> pc.Expression:
    left, left_type = _field(predicate.left, schema, guarded)
    right, right_type = _field(predicate.right, schema, guarded)
    compared = common_type(left_type, right_type)
    if compared != left_type:
        left = _cast(left, left_type, compared)
    if compared != right_type:
        right = _cast(right, right_type, compared)
    if pa.types.is_floating(compared):
        return _float_columns_comparison(predicate.op, left, right)
    return _OPERATORS[predicate.op](left, right)


def _float_columns_comparison(op: str, left: pc.Expression, right: pc.Expression) -> pc.Expression:
    """``left <op> right`` where NaN = NaN and NaN > every number (Spark's order), NULL when
    either side is NULL."""
    if op in (">", ">="):
        return _float_columns_comparison("<" if op == ">" else "<=", right, left)
    left_nan, right_nan = pc.is_nan(left), pc.is_nan(right)
    if op in ("=", "<>"):
        equal = (left == right) | (left_nan & right_nan)
        compared = equal if op == "=" else ~equal
    elif op == "<":
        compared = ~left_nan & (right_nan | (left < right))
    else:
        compared = right_nan | (~left_nan & (left <= right))
    # Kleene logic would make NaN < NULL FALSE (FALSE AND NULL): SQL says NULL.
    return pc.if_else(left.is_null() | right.is_null(), _UNKNOWN, compared)


def _float_comparison(op: str, field: pc.Expression, value: float, column_type: pa.DataType) -> pc.Expression:
    """``field <op> value`` where NaN = NaN and NaN > every number (Spark's order)."""
    nan = pc.is_nan(field)
    if math.isnan(value):
        # Only NaN equals NaN, and every number is below it (NULL rows stay NULL: x AND NOT x).
        always, never = nan | ~nan, nan & ~nan
        return {"=": nan, "<>": ~nan, "<": ~nan, "<=": always, ">": never, ">=": nan}[op]
    compared = _OPERATORS[op](field, pa.scalar(value, type=column_type))
    return compared | nan if op in (">", ">=") else compared
