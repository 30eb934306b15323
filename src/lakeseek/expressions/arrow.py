"""Bound predicate -> pyarrow filter expression with SQL's three-valued logic.

Floating-point comparisons follow Spark, not IEEE: NaN equals NaN and is above every
other number (so ``x > 1`` keeps NaN rows), which makes ``read`` agree with Spark SQL.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.expressions import And, Comparison, Constant, In, IsNull, Like, Not, Or, Predicate
from lakeseek.expressions.binding import value_type

_UNKNOWN = pc.scalar(pa.scalar(None, pa.bool_()))
_OPERATORS = {
    "=": lambda f, v: f == v,
    "<>": lambda f, v: f != v,
    "<": lambda f, v: f < v,
    "<=": lambda f, v: f <= v,
    ">": lambda f, v: f > v,
    ">=": lambda f, v: f >= v,
}


def to_arrow(predicate: Predicate, schema: pa.Schema) -> pc.Expression:
    """A pyarrow expression keeping exactly the rows for which ``predicate`` is TRUE."""
    if isinstance(predicate, Constant):
        return _UNKNOWN if predicate.value is None else pc.scalar(predicate.value)
    if isinstance(predicate, And):
        return to_arrow(predicate.left, schema) & to_arrow(predicate.right, schema)
    if isinstance(predicate, Or):
        return to_arrow(predicate.left, schema) | to_arrow(predicate.right, schema)
    if isinstance(predicate, Not):
        return ~to_arrow(predicate.operand, schema)
    field = pc.field(predicate.column)
    if isinstance(predicate, IsNull):
        return field.is_null()
    if isinstance(predicate, Like):
        return pc.match_like(field, predicate.pattern)
    column_type = value_type(schema.field(predicate.column).type)
    if isinstance(predicate, Comparison):
        if pa.types.is_floating(column_type):
            return _float_comparison(predicate.op, field, predicate.literal.value, column_type)
        return _OPERATORS[predicate.op](field, pa.scalar(predicate.literal.value, type=column_type))
    if isinstance(predicate, In):
        values = [lit.value for lit in predicate.literals]
        if pa.types.is_floating(column_type) and 0.0 in values:
            values += [0.0, -0.0]  # is_in tells the zeros apart; = (and Spark's IN) does not
        members = field.isin(pa.array(values, type=column_type))
        # is_in says FALSE for a NULL input; SQL says NULL, which NOT must keep NULL.
        return pc.if_else(field.is_null(), _UNKNOWN, members)
    raise TypeError(f"cannot convert {predicate!r}")


def _float_comparison(op: str, field: pc.Expression, value: float, column_type: pa.DataType) -> pc.Expression:
    """``field <op> value`` where NaN = NaN and NaN > every number (Spark's order)."""
    nan = pc.is_nan(field)
    if math.isnan(value):
        # Only NaN equals NaN, and every number is below it (NULL rows stay NULL: x AND NOT x).
        always, never = nan | ~nan, nan & ~nan
        return {"=": nan, "<>": ~nan, "<": ~nan, "<=": always, ">": never, ">=": nan}[op]
    compared = _OPERATORS[op](field, pa.scalar(value, type=column_type))
    return compared | nan if op in (">", ">=") else compared
