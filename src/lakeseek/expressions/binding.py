"""Resolve a predicate against the lake's schema and type its literals as Spark does.

A bound predicate names columns exactly as the schema does. Every comparison's literal
holds the type the comparison is made in: the column's own type for exact comparisons
(the literal rounded by operator), or a floating type the row filter casts the column to.
Comparisons with NULL become ``Constant(None)`` (SQL's unknown), so ``NOT (x = NULL)``
still matches nothing.
"""

from __future__ import annotations

import datetime as dt
from decimal import MAX_PREC as MAX_PRECISION
from decimal import ROUND_HALF_UP, Context, Decimal
from functools import reduce

import pyarrow as pa

from lakeseek.exceptions import PredicateTypeError, UnknownColumnError, UnsupportedPredicateError
from lakeseek.expressions import (
    And,
    ColumnComparison,
    Comparison,
    Constant,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    Predicate,
)
from lakeseek.expressions.rounding import domain, round_exact
from lakeseek.expressions.types import (
    cast_string,
    common_type,
    decimal_literal_type,
    integer_literal_type,
    is_text,
    parse_date,
    parse_timestamp,
    string_as,
    string_comparison_type,
)


def bind(predicate: Predicate, schema: pa.Schema) -> Predicate:
    if isinstance(predicate, Constant):
        return predicate
    if isinstance(predicate, And):
        return And(bind(predicate.left, schema), bind(predicate.right, schema))
    if isinstance(predicate, Or):
        return Or(bind(predicate.left, schema), bind(predicate.right, schema))
    if isinstance(predicate, Not):
        return Not(bind(predicate.operand, schema))
    if isinstance(predicate, ColumnComparison):
        return _bind_column_comparison(predicate, schema)
    field = resolve_column(predicate.columns().pop(), schema)
    if isinstance(predicate, IsNull):
        return IsNull(field.name)
    if pa.types.is_null(field.type):
        # Spark's void column (a partition column whose every value is NULL): any comparison
        # with it, LIKE and IN included, is NULL for every row.
        return Constant(None)
    if isinstance(predicate, Like):
        if not is_text(value_type(field.type)):
            raise PredicateTypeError(f"LIKE needs a string column; '{field.name}' is {field.type}")
        return Like(field.name, predicate.pattern)
    if isinstance(predicate, Comparison):
        if predicate.literal.kind == "null":
            return Constant(None)
        return compare(predicate.op, field, predicate.literal)
    if isinstance(predicate, In):
        return _bind_in(field, predicate.literals)
    raise TypeError(f"cannot bind {predicate!r}")


def compare(op: str, field: pa.Field, literal: Literal, *, within: pa.DataType | None = None) -> Predicate:
    """``field <op> literal`` bound as Spark compares it (see :mod:`lakeseek.expressions.types`).

    Exact comparisons come out in the column's own type, the literal rounded by operator;
    one that holds for no value (or every value) becomes a predicate that is FALSE (TRUE)
    for every non-NULL value and NULL for NULL, so NOT keeps SQL's meaning. Comparisons in
    floating point keep the literal in the floating type: the row filter casts the column.
    ``within``: the type to compare in when more than this literal decides it (an IN list).
    """
    column_type = value_type(field.type)
    if within is not None and literal.kind == "string":  # cast to the list's type, as Spark casts it
        value = _string_literal(literal.value, within, field.name, column_type, cast_string)
        literal_type = within
    else:
        value, literal_type = typed_literal(literal, within or column_type, field.name)
    if within is None and literal.kind == "int" and literal.type is None and pa.types.is_decimal(column_type):
        # Compared with a decimal, a bare integer is a decimal of its own digits (Spark's
        # DecimalType.fromLiteral), not an INT's ten: it never costs the column scale.
        literal_type = decimal_literal_type(Decimal(value))
    common = common_type(within or column_type, literal_type)
    if common is None:
        raise _mismatch(literal, column_type, field.name)
    if pa.types.is_floating(common):
        return Comparison(op, field.name, Literal("value", _as_float(value, common), common))
    exact = domain(column_type)
    if exact is None:  # strings, binary, booleans: compared as they are
        return Comparison(op, field.name, Literal("value", value, common))
    # No decimal of 38 digits holds both sides: Spark rounds (half up) to the scale it keeps.
    if pa.types.is_decimal(common) and common.scale < _scale(column_type):
        raise UnsupportedPredicateError(
            f"comparing column '{field.name}' ({column_type}) with {literal.value} ({literal_type}) makes Spark "
            f"round the column's values to {common.scale} decimal places first, which lakeseek does not do yet"
        )
    if pa.types.is_decimal(common) and common.scale < _scale(literal_type):
        value = Decimal(value).quantize(Decimal(1).scaleb(-common.scale), rounding=ROUND_HALF_UP, context=_EXACT)
    try:
        rounded = round_exact(op, value, exact)
    except (OverflowError, ValueError, pa.ArrowException):
        # The rounded value has no Python form (a date past 9999): the row filter compares
        # in the common type instead, and the index is not used for this comparison.
        return Comparison(op, field.name, Literal("value", value, common))
    if rounded.always is None:
        return Comparison(rounded.op, field.name, Literal("value", rounded.value, column_type))
    return for_every_value(field.name, rounded.always)


_EXACT = Context(prec=MAX_PRECISION)


def _scale(arrow_type: pa.DataType) -> int:
    return arrow_type.scale if pa.types.is_decimal(arrow_type) else 0


def for_every_value(column: str, outcome: bool) -> Predicate:
    """A predicate that is ``outcome`` for every non-NULL value of ``column`` and NULL for NULL."""
    if outcome:
        return Or(Not(IsNull(column)), Constant(None))
    return And(IsNull(column), Constant(None))


def _bind_in(field: pa.Field, literals: tuple[Literal, ...]) -> Predicate:
    """``IN`` as the OR of its equalities, all made in the common type of the column and
    every member (Spark's rule: ``d IN (DATE .., TIMESTAMP ..)`` compares timestamps).
    Exact members that can match become one In of column values, members compared in
    floating point stay comparisons, NULL stays NULL."""
    column_type = value_type(field.type)
    within = column_type
    # Spark widens the column's type with each member in turn, left to right (a string with an
    # integer type makes BIGINT, with a decimal or float DOUBLE), and casts every member to the
    # result: ('5.0', 0.3D) on an integer column compares doubles, ('9007199254740993', 1.5)
    # exact decimals, (1.5, '9007199254740993') doubles again.
    for literal in literals:
        if literal.kind == "null" or (literal.kind == "string" and is_text(within)):
            continue
        if literal.kind == "string":
            widened = string_comparison_type(within)
            within = None if widened is None else common_type(within, widened)
        else:
            within = common_type(within, typed_literal(literal, within, field.name)[1])
        if within is None:
            raise _mismatch(literal, column_type, field.name)
    members: list[object] = []
    others: list[Predicate] = []
    for literal in literals:
        if literal.kind == "null":
            others.append(Constant(None))
            continue
        bound = compare("=", field, literal, within=None if within == column_type else within)
        if isinstance(bound, Comparison) and bound.literal.type == column_type:
            members.append(bound.literal.value)
        elif isinstance(bound, Comparison):
            others.append(bound)
    unique = tuple(Literal("value", value, column_type) for value in dict.fromkeys(members))
    parts: list[Predicate] = [In(field.name, unique)] if unique else []
    parts += list(dict.fromkeys(others))
    return reduce(Or, parts) if parts else for_every_value(field.name, False)


def _bind_column_comparison(predicate: ColumnComparison, schema: pa.Schema) -> Predicate:
    left, right = resolve_column(predicate.left, schema), resolve_column(predicate.right, schema)
    if pa.types.is_null(left.type) or pa.types.is_null(right.type):
        return Constant(None)
    if common_type(value_type(left.type), value_type(right.type)) is None:
        raise PredicateTypeError(
            f"cannot compare column '{left.name}' ({left.type}) with column '{right.name}' ({right.type})"
        )
    return ColumnComparison(predicate.op, left.name, right.name)


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


def typed_literal(literal: Literal, column_type: pa.DataType, column: str) -> tuple[object, pa.DataType]:
    """The literal's exact Python value and its Spark type, read for a column of ``column_type``
    (a string literal is cast to the column's type, as Spark casts it)."""
    kind, value = literal.kind, literal.value
    if kind == "int":
        return value, literal.type or integer_literal_type(value)
    if kind == "decimal":
        return value, literal.type or decimal_literal_type(value)
    if kind == "float":
        return value, literal.type or pa.float64()
    if kind == "bool":
        return value, pa.bool_()
    if kind == "hex":
        return value, pa.binary()
    if kind == "string":
        return _string_literal(value, column_type, column, column_type, string_as)
    if kind == "date":
        return parse_date(value), pa.date32()
    if kind in ("timestamp", "timestamp_ntz"):
        moment = parse_timestamp(value, zoned=kind == "timestamp")
        zoned = pa.types.is_timestamp(column_type) and column_type.tz is not None
        # Spark moves TIMESTAMP and TIMESTAMP_NTZ into each other in the session time zone
        # (UTC for lakeseek): the wall clock is kept, in UTC.
        if isinstance(moment, pa.Scalar):  # beyond Python's years: the stored value is that wall clock
            return moment.cast(pa.timestamp("us", tz="UTC" if zoned else None)), pa.timestamp(
                "us", tz="UTC" if kind == "timestamp" else None
            )
        if zoned and moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.timezone.utc)
        elif not zoned and moment.tzinfo is not None:
            moment = moment.replace(tzinfo=None)
        return moment, pa.timestamp("us", tz="UTC" if kind == "timestamp" else None)
    raise _mismatch(literal, column_type, column)


def _string_literal(text: str, target: pa.DataType, column: str, column_type: pa.DataType, convert):
    try:
        return convert(text, target)
    except PredicateTypeError as error:
        raise PredicateTypeError(f"column '{column}' is {column_type}; {error}") from None


def _mismatch(literal: Literal, column_type: pa.DataType, column: str) -> PredicateTypeError:
    value = literal.value
    shown = repr(value.hex()) if isinstance(value, bytes) else str(value) if isinstance(value, Decimal) else repr(value)
    return PredicateTypeError(f"column '{column}' is {column_type}; the {literal.kind} literal {shown} does not fit it")


def _as_float(value: object, float_type: pa.DataType) -> float:
    number = float(value)  # correctly rounded from int, Decimal and float alike
    return pa.scalar(number, pa.float64()).cast(float_type, safe=False).as_py()
