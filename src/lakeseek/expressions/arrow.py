"""Bound predicate -> pyarrow filter expression with SQL's three-valued logic."""

from __future__ import annotations

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
        return _OPERATORS[predicate.op](field, pa.scalar(predicate.literal.value, type=column_type))
    if isinstance(predicate, In):
        members = field.isin(pa.array([lit.value for lit in predicate.literals], type=column_type))
        # is_in says FALSE for a NULL input; SQL says NULL, which NOT must keep NULL.
        return pc.if_else(field.is_null(), _UNKNOWN, members)
    raise TypeError(f"cannot convert {predicate!r}")
