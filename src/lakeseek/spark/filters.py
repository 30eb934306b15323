"""Spark's pushed filters as lakeseek predicates: the filters lakeseek evaluates with Spark's
semantics, for the index (to drop files) and for pyarrow (to drop rows early). A filter with
no such translation is left to Spark alone."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import reduce
from typing import Any

import pyarrow as pa
from pyspark.sql import datasource as spark_filters

from lakeseek.exceptions import LakeseekError
from lakeseek.expressions import And, Comparison, In, IsNull, Like, Literal, Not, Or, Predicate
from lakeseek.expressions.arrow import to_arrow
from lakeseek.expressions.binding import bind, resolve_column, value_type

log = logging.getLogger("lakeseek")


@dataclass(frozen=True)
class Both(spark_filters.Filter):
    """``left AND right``: the JVM pushes these, the Python data source API does not."""

    left: spark_filters.Filter
    right: spark_filters.Filter


@dataclass(frozen=True)
class Either(spark_filters.Filter):
    """``left OR right``."""

    left: spark_filters.Filter
    right: spark_filters.Filter


_COMPARISONS = {
    spark_filters.EqualTo: "=",
    spark_filters.GreaterThan: ">",
    spark_filters.GreaterThanOrEqual: ">=",
    spark_filters.LessThan: "<",
    spark_filters.LessThanOrEqual: "<=",
}


def to_predicate(spark_filter: spark_filters.Filter, schema: pa.Schema) -> Predicate | None:
    """An unbound lakeseek predicate that means what ``spark_filter`` means in Spark, or None
    when there is none lakeseek evaluates with Spark's semantics.

    None for: nested column references; literals whose Python type does
    not match the column's type family (Spark only pushes a filter whose literal already
    has the column's type, so a mismatch means something unusual: keep out of its way).
    """
    if isinstance(spark_filter, spark_filters.Not):
        operand = to_predicate(spark_filter.child, schema)
        return None if operand is None else Not(operand)
    if isinstance(spark_filter, Both | Either):
        left, right = to_predicate(spark_filter.left, schema), to_predicate(spark_filter.right, schema)
        if left is None or right is None:
            return None
        return And(left, right) if isinstance(spark_filter, Both) else Or(left, right)
    path = getattr(spark_filter, "attribute", None)
    if path is None or len(path) != 1:
        return None
    try:
        column_type = value_type(resolve_column(path[0], schema).type)
    except LakeseekError:
        return None
    column = path[0]
    if isinstance(spark_filter, spark_filters.IsNull):
        return IsNull(column)
    if isinstance(spark_filter, spark_filters.IsNotNull):
        return Not(IsNull(column))
    op = _COMPARISONS.get(type(spark_filter))
    if op is not None:
        literal = spark_literal(spark_filter.value, column_type)
        return None if literal is None else Comparison(op, column, literal)
    if isinstance(spark_filter, spark_filters.EqualNullSafe):
        if spark_filter.value is None:
            return IsNull(column)
        literal = spark_literal(spark_filter.value, column_type)
        # a <=> v is never NULL: FALSE where a is NULL, so NOT (a <=> v) keeps those rows.
        return None if literal is None else And(Not(IsNull(column)), Comparison("=", column, literal))
    if isinstance(spark_filter, spark_filters.In):
        literals = [spark_literal(value, column_type) for value in spark_filter.value]
        # An empty IN list is FALSE even for NULL in Spark, unlike lakeseek's IN: not pushed.
        return None if not literals or None in literals else In(column, tuple(literals))
    if isinstance(spark_filter, _STRING_MATCHES):
        text = _like_escape(spark_filter.value)
        if isinstance(spark_filter, spark_filters.StringStartsWith):
            return Like(column, text + "%")
        if isinstance(spark_filter, spark_filters.StringEndsWith):
            return Like(column, "%" + text)
        return Like(column, "%" + text + "%")
    return None


_STRING_MATCHES = (spark_filters.StringStartsWith, spark_filters.StringEndsWith, spark_filters.StringContains)


def _like_escape(text: str) -> str:
    """``text`` as a LIKE pattern matching itself (see lakeseek.expressions.arrow.like)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def spark_literal(value: Any, column_type: pa.DataType) -> Literal | None:
    """A pushed filter's Python value as a lakeseek literal for a column of ``column_type``.

    The kinds are the ones :func:`lakeseek.expressions.binding.typed_literal` reads; None
    when the pair is not one to push (see :func:`to_predicate`).
    """
    t = column_type
    if value is None:
        return Literal("null", None)
    if pa.types.is_floating(t) or isinstance(value, float):
        # lakeseek's Arrow filter orders NaN as Spark does (see lakeseek.expressions.arrow).
        if pa.types.is_floating(t) and isinstance(value, int | float) and not isinstance(value, bool):
            return Literal("float", float(value))
        return None
    if isinstance(value, bool):
        return Literal("bool", value) if pa.types.is_boolean(t) else None
    if isinstance(value, int | Decimal):
        if not (pa.types.is_integer(t) or pa.types.is_decimal(t)):
            return None
        if isinstance(value, int):
            return Literal("int", value)
        return Literal("decimal", value) if value.is_finite() else None
    if isinstance(value, str):
        return Literal("string", value) if pa.types.is_string(t) or pa.types.is_large_string(t) else None
    if isinstance(value, bytes | bytearray):
        binary = pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
        return Literal("hex", bytes(value)) if binary else None
    if isinstance(value, dt.datetime):
        # TIMESTAMP (an instant: aware, UTC) goes with a zoned column, TIMESTAMP_NTZ (naive)
        # with a zoneless one; a mix would need a time zone Spark and lakeseek may not share.
        if not pa.types.is_timestamp(t) or (value.tzinfo is None) != (t.tz is None):
            return None
        return Literal("timestamp", value.isoformat())
    if isinstance(value, dt.date):
        return Literal("date", value.isoformat()) if pa.types.is_date(t) else None
    return None


@dataclass(frozen=True)
class Pushed:
    """A Spark filter lakeseek can use: unbound (for the index's planner) and bound (for pyarrow)."""

    spark_filter: spark_filters.Filter
    predicate: Predicate
    bound: Predicate


def usable(spark_filter: spark_filters.Filter, schema: pa.Schema) -> Pushed | None:
    """``spark_filter`` as a predicate the index and pyarrow evaluate as Spark does, or None."""
    predicate = to_predicate(spark_filter, schema)
    if predicate is None:
        return None
    try:
        bound = bind(predicate, schema)
        to_arrow(bound, schema)  # fails now rather than on an executor
    except (LakeseekError, pa.ArrowException, TypeError, ValueError) as error:
        log.debug("filter %s not used by lakeseek: %s", spark_filter, error)
        return None
    return Pushed(spark_filter, predicate, bound)


def conjunction(predicates: Sequence[Predicate]) -> Predicate | None:
    return reduce(And, predicates) if predicates else None
