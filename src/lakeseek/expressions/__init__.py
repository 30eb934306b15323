"""Predicates as lakeseek's own small expression tree.

``sql.parse_where`` builds these from SQL text; ``binding.bind`` resolves column names
and coerces literals to the columns' types; ``arrow.to_arrow`` turns a bound predicate
into a pyarrow filter, and the planner asks the index for candidate files.
"""

from __future__ import annotations

import datetime as dt
import numbers
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

from lakeseek.exceptions import PredicateTypeError


class Predicate:
    """A boolean expression over one row."""

    def columns(self) -> set[str]:
        return set()


@dataclass(frozen=True)
class Constant(Predicate):
    """TRUE, FALSE, or NULL (unknown: a comparison with NULL)."""

    value: bool | None


@dataclass(frozen=True)
class Literal:
    """A SQL literal: ``kind`` is how it was written (int, decimal, float, string, hex,
    bool, date, timestamp, timestamp_ntz, null; ``value`` once bound); ``value`` its Python
    value (the text, for dates and timestamps); ``type`` its Spark type as an Arrow type
    when the text fixes it (``10L``, ``0.1F``, ``1.5BD``) and, once bound, the type the
    comparison is made in."""

    kind: str
    value: Any
    type: pa.DataType | None = None


def python_literal(value: object) -> Literal:
    """A Python value as the SQL literal that writes it (a naive datetime is a TIMESTAMP_NTZ,
    an aware one a TIMESTAMP)."""
    if value is None:
        return Literal("null", None)
    if isinstance(value, bool):
        return Literal("bool", value)
    if isinstance(value, numbers.Integral):
        return Literal("int", int(value))
    if isinstance(value, Decimal):
        return Literal("decimal", value)
    if isinstance(value, numbers.Real):
        return Literal("float", float(value))
    if isinstance(value, str):
        return Literal("string", value)
    if isinstance(value, bytes | bytearray | memoryview):
        return Literal("hex", bytes(value))
    if isinstance(value, dt.datetime):
        return Literal("timestamp_ntz" if value.tzinfo is None else "timestamp", value.isoformat())
    if isinstance(value, dt.date):
        return Literal("date", value.isoformat())
    raise PredicateTypeError(f"{value!r} ({type(value).__name__}) is no value lakeseek compares columns with")


@dataclass(frozen=True)
class Comparison(Predicate):
    """``column <op> literal`` with op one of = <> < <= > >=."""

    op: str
    column: str
    literal: Literal

    def columns(self) -> set[str]:
        return {self.column}


@dataclass(frozen=True)
class ColumnComparison(Predicate):
    """``left <op> right`` between two columns: a row filter only, never an index lookup."""

    op: str
    left: str
    right: str

    def columns(self) -> set[str]:
        return {self.left, self.right}


@dataclass(frozen=True)
class In(Predicate):
    column: str
    literals: tuple[Literal, ...]

    def columns(self) -> set[str]:
        return {self.column}


@dataclass(frozen=True)
class IsNull(Predicate):
    column: str

    def columns(self) -> set[str]:
        return {self.column}


@dataclass(frozen=True)
class Like(Predicate):
    column: str
    pattern: str

    def columns(self) -> set[str]:
        return {self.column}


@dataclass(frozen=True)
class Not(Predicate):
    operand: Predicate

    def columns(self) -> set[str]:
        return self.operand.columns()


@dataclass(frozen=True)
class And(Predicate):
    left: Predicate
    right: Predicate

    def columns(self) -> set[str]:
        return self.left.columns() | self.right.columns()


@dataclass(frozen=True)
class Or(Predicate):
    left: Predicate
    right: Predicate

    def columns(self) -> set[str]:
        return self.left.columns() | self.right.columns()


FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def literals_of(predicate: Predicate) -> Iterator[Literal]:
    """The literals ``predicate`` compares columns with."""
    pending = [predicate]
    while pending:  # not recursive: a predicate may nest deeper than Python's stack
        current = pending.pop()
        if isinstance(current, And | Or):
            pending += [current.left, current.right]
        elif isinstance(current, Not):
            pending.append(current.operand)
        elif isinstance(current, Comparison):
            yield current.literal
        elif isinstance(current, In):
            yield from current.literals


__all__ = [
    "FLIPPED",
    "And",
    "ColumnComparison",
    "Comparison",
    "Constant",
    "In",
    "IsNull",
    "Like",
    "Literal",
    "Not",
    "literals_of",
    "Or",
    "Predicate",
]
