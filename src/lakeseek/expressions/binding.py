"""Resolve a predicate against the lake's schema and coerce its literals to column types.

A bound predicate names columns exactly as the schema does, and every literal holds a
Python value of its column's type. Comparisons with NULL become ``Constant(None)``
(SQL's unknown), so ``NOT (x = NULL)`` still matches nothing.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation

import pyarrow as pa

from lakeseek.exceptions import PredicateTypeError, UnknownColumnError
from lakeseek.expressions import And, Comparison, Constant, In, IsNull, Like, Literal, Not, Or, Predicate


def bind(predicate: Predicate, schema: pa.Schema) -> Predicate:
    if isinstance(predicate, Constant):
        return predicate
    if isinstance(predicate, And):
        return And(bind(predicate.left, schema), bind(predicate.right, schema))
    if isinstance(predicate, Or):
        return Or(bind(predicate.left, schema), bind(predicate.right, schema))
    if isinstance(predicate, Not):
        return Not(bind(predicate.operand, schema))
    field = resolve_column(predicate.columns().pop(), schema)
    if isinstance(predicate, IsNull):
        return IsNull(field.name)
    if isinstance(predicate, Like):
        if not pa.types.is_string(value_type(field.type)) and not pa.types.is_large_string(value_type(field.type)):
            raise PredicateTypeError(f"LIKE needs a string column; '{field.name}' is {field.type}")
        return Like(field.name, predicate.pattern)
    if isinstance(predicate, Comparison):
        if predicate.literal.kind == "null":
            return Constant(None)
        return Comparison(predicate.op, field.name, _bound(predicate.literal, field))
    if isinstance(predicate, In):
        present = [lit for lit in predicate.literals if lit.kind != "null"]
        bound: Predicate = Constant(None)
        if present:
            unique = tuple(dict.fromkeys(_bound(lit, field) for lit in present))
            bound = In(field.name, unique)
        if len(present) < len(predicate.literals):
            bound = Or(bound, Constant(None)) if present else bound
        return bound
    raise TypeError(f"cannot bind {predicate!r}")


def resolve_column(name: str, schema: pa.Schema) -> pa.Field:
    """The schema field ``name`` refers to: exact match first, then case-insensitive (as Spark)."""
    if name in schema.names:
        return schema.field(name)
    folded = [f for f in schema if f.name.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    available = ", ".join(schema.names[:20]) + (", ..." if len(schema.names) > 20 else "")
    raise UnknownColumnError(f"unknown column '{name}' (columns: {available})")


def value_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type of a column's values (a dictionary column's value type)."""
    return arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type


def _bound(literal: Literal, field: pa.Field) -> Literal:
    return Literal("value", coerce(literal, value_type(field.type), field.name))


def coerce(literal: Literal, arrow_type: pa.DataType, column: str) -> object:
    """``literal`` as a Python value of ``arrow_type``, or PredicateTypeError."""
    kind, value = literal.kind, literal.value

    def mismatch(detail: str = "") -> PredicateTypeError:
        shown = value.hex() if isinstance(value, bytes) else value
        return PredicateTypeError(
            f"column '{column}' is {arrow_type}; the {kind} literal {shown!r} does not fit it"
            + (f" ({detail})" if detail else "")
        )

    if pa.types.is_integer(arrow_type):
        if kind == "decimal" and value == value.to_integral_value():
            value, kind = int(value), "int"
        if kind != "int":
            raise mismatch()
        return _checked(value, arrow_type, mismatch)
    if pa.types.is_floating(arrow_type):
        if kind not in ("int", "decimal", "float"):
            raise mismatch()
        return float(value)
    if pa.types.is_decimal(arrow_type):
        if kind not in ("int", "decimal", "float"):
            raise mismatch()
        try:
            number = Decimal(str(value))
        except InvalidOperation as error:
            raise mismatch() from error
        return _checked(number, arrow_type, mismatch)
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        if kind != "string":
            raise mismatch()
        return value
    if (
        pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
        or pa.types.is_fixed_size_binary(arrow_type)
    ):
        if kind == "hex":
            return value
        if kind == "string":
            return value.encode("utf-8")
        raise mismatch()
    if pa.types.is_boolean(arrow_type):
        if kind != "bool":
            raise mismatch()
        return value
    if pa.types.is_date(arrow_type):
        if kind not in ("date", "string"):
            raise mismatch()
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError as error:
            raise mismatch("expected YYYY-MM-DD") from error
    if pa.types.is_timestamp(arrow_type):
        if kind not in ("timestamp", "date", "string"):
            raise mismatch()
        try:
            moment = dt.datetime.fromisoformat(value.strip())
        except ValueError as error:
            raise mismatch("expected YYYY-MM-DD[ HH:MM:SS[.ffffff]][+HH:MM]") from error
        if arrow_type.tz is not None:
            # A literal without an offset is UTC (run Spark with spark.sql.session.timeZone=UTC to agree).
            return (
                moment.replace(tzinfo=dt.timezone.utc) if moment.tzinfo is None else moment.astimezone(dt.timezone.utc)
            )
        return (
            moment.replace(tzinfo=None)
            if moment.tzinfo is None
            else moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
        )
    raise PredicateTypeError(f"column '{column}' has type {arrow_type}, which predicates cannot compare")


def _checked(value: object, arrow_type: pa.DataType, mismatch) -> object:
    try:
        return pa.scalar(value, type=arrow_type).as_py()
    except (pa.ArrowException, OverflowError, ValueError) as error:
        raise mismatch("out of range") from error
