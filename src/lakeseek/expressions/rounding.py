"""A literal rounded to a column's own values, by operator.

Spark compares ``int_col < 114.5`` in DECIMAL and ``ms_col = TIMESTAMP '...000456'`` in
microseconds. For exact types (integers, decimals, dates, timestamps) the same rows are
kept by a comparison with a value of the column's own type, rounded by operator:
``< 114.5`` is ``<= 114``, ``= 114.5`` holds for no row, ``int32_col < 3000000000`` for
every row. Columns are seen as integers in their unit (1, 10^-scale, a day, the timestamp
unit), so one rule serves every exact type.

A comparison made in floating point (a DOUBLE literal against an integer or decimal
column) keeps Spark's semantics in the row filter (the column is cast to DOUBLE); for the
index, :func:`float_bounds` gives a range of column values wide enough to hold every value
that could compare true.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pyarrow as pa

_EPOCH_DAY = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_MICROS_PER_DAY = 86_400_000_000


@dataclass(frozen=True)
class Domain:
    """A column's values as integers: value = n * unit, for n in [low, high]."""

    column_type: pa.DataType
    low: int
    high: int
    unit: Fraction  # of the column's values, in the literal's measure (see ``measure``)

    def to_value(self, n: int) -> object:
        """The column's Python value for integer ``n``."""
        t = self.column_type
        if pa.types.is_integer(t):
            return n
        if pa.types.is_decimal(t):
            return Decimal(f"{n}E-{t.scale}")  # exact: scaleb() would round to 28 digits
        storage = pa.int32() if pa.types.is_date32(t) else pa.int64()
        value = pa.scalar(n, storage).cast(t)
        try:
            return value.as_py()
        except (ValueError, OverflowError):  # beyond Python's years 1..9999: kept as Arrow's
            return value


def domain(column_type: pa.DataType) -> Domain | None:
    """The integer view of an exact column type, or None (strings, floats, ...)."""
    t = column_type
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        return Domain(t, int(info.min), int(info.max), Fraction(1))
    if pa.types.is_decimal(t):
        limit = 10**t.precision - 1
        return Domain(t, -limit, limit, Fraction(1, 10**t.scale))
    if pa.types.is_date32(t):
        return Domain(t, -(2**31), 2**31 - 1, Fraction(_MICROS_PER_DAY))
    if pa.types.is_date64(t):
        return Domain(t, -(2**63), 2**63 - 1, Fraction(1_000))
    if pa.types.is_timestamp(t):
        return Domain(t, -(2**63), 2**63 - 1, Fraction(1_000_000, _UNITS_PER_SECOND[t.unit]))
    return None


def measure(value: object) -> Fraction:
    """An exact literal as a number: itself, or microseconds since the epoch for dates and
    timestamps (aware ones in UTC; naive ones are UTC wall clocks)."""
    if isinstance(value, pa.Scalar):  # a date or a timestamp beyond Python's years 1..9999
        if pa.types.is_date32(value.type):
            return Fraction(value.value * _MICROS_PER_DAY)
        return Fraction(value.cast(pa.timestamp("us", tz=value.type.tz)).value)
    if isinstance(value, dt.datetime):
        naive = value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
        delta = naive - _EPOCH
        return Fraction((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)
    if isinstance(value, dt.date):
        return Fraction((value - _EPOCH_DAY).days * _MICROS_PER_DAY)
    if isinstance(value, int | Decimal):
        return Fraction(value)
    raise TypeError(f"not an exact literal: {value!r}")


@dataclass(frozen=True)
class Rounded:
    """The outcome of rounding: a comparison ``op value`` in the column's type, or a
    constant outcome for every non-NULL value (``always`` True or False)."""

    op: str | None = None
    value: object = None
    always: bool | None = None


NEVER = Rounded(always=False)
ALWAYS = Rounded(always=True)


def round_exact(op: str, literal: object, column: Domain) -> Rounded:
    """``column op literal`` (compared exactly) as a comparison with a column value."""
    q = measure(literal) / column.unit
    floor, ceil = math.floor(q), math.ceil(q)
    if op in ("=", "<>"):
        if floor != ceil or not column.low <= floor <= column.high:
            return NEVER if op == "=" else ALWAYS
        return Rounded(op, column.to_value(floor))
    if op in ("<", "<="):
        n = ceil - 1 if op == "<" else floor
        if n < column.low:
            return NEVER
        if n >= column.high:
            return ALWAYS
        return Rounded("<=", column.to_value(n))
    n = floor + 1 if op == ">" else ceil
    if n > column.high:
        return NEVER
    if n <= column.low:
        return ALWAYS
    return Rounded(">=", column.to_value(n))


@dataclass(frozen=True)
class Bounds:
    """Column values ``low..high`` (inclusive; None: unbounded); ``empty``: none."""

    low: object = None
    high: object = None
    empty: bool = False


def float_bounds(op: str, literal: float, float_type: pa.DataType, column: Domain) -> Bounds:
    """Every column value ``v`` for which ``CAST(v AS float_type) op literal`` can be true.

    Casting to floating point is monotonic, so those values form a range; it is widened to
    the literal's neighbours so rounding never leaves a matching value out.
    """
    kind = np.float32 if pa.types.is_float32(float_type) else np.float64
    if math.isnan(literal):  # NaN is above every number (Spark), and no exact value is NaN
        return Bounds() if op in ("<", "<=", "<>") else Bounds(empty=True)
    if op == "<>":
        return Bounds()
    below = float(np.nextafter(kind(literal), kind(-np.inf)))
    above = float(np.nextafter(kind(literal), kind(np.inf)))
    low = None if op in ("<", "<=") else below
    high = None if op in (">", ">=") else above
    if (low is not None and low == math.inf) or (high is not None and high == -math.inf):
        return Bounds(empty=True)
    low_n = column.low if low is None or math.isinf(low) else max(column.low, math.floor(Fraction(low) / column.unit))
    high_n = (
        column.high if high is None or math.isinf(high) else min(column.high, math.ceil(Fraction(high) / column.unit))
    )
    if low_n > high_n:
        return Bounds(empty=True)
    return Bounds(
        None if low_n == column.low else column.to_value(low_n),
        None if high_n == column.high else column.to_value(high_n),
    )
