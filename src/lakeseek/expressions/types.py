"""Spark SQL's typing of literals and comparisons (ANSI, as Spark 4's default).

A comparison ``column <op> literal`` is evaluated in the *common type* of the two sides,
as Spark promotes them: ``int_col = 114.5`` compares exact decimals (never true),
``f32 = 0.1E0`` compares doubles (0.1f is not 0.1), ``date_col < TIMESTAMP '... 12:00'``
compares timestamps, and a string literal is cast to the column's type with Spark's own
(strict) parsing. :func:`common_type` picks that type and :func:`literal_value` gives
the literal's exact value in it; the row filter casts the column up to it, and the index
rounds the literal back down to the column by operator (:mod:`lakeseek.expressions.bounds`).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation

import pyarrow as pa

from lakeseek.exceptions import PredicateParseError, PredicateTypeError
from lakeseek.expressions.java_text import JAVA_BLANKS, SPARK_BLANKS, java_double

MAX_DECIMAL_PRECISION = 38
# Integer types as exact decimals: Spark's precision for each (a long is decimal(20, 0)).
_INTEGER_PRECISION = {8: 3, 16: 5, 32: 10, 64: 20}


def integer_literal_type(value: int) -> pa.DataType:
    """Spark's type for an unsuffixed integer literal: INT, then BIGINT, then DECIMAL(n, 0)."""
    if -(2**31) <= value < 2**31:
        return pa.int32()
    if -(2**63) <= value < 2**63:
        return pa.int64()
    digits = len(str(abs(value)))
    if digits > MAX_DECIMAL_PRECISION:
        raise PredicateParseError(f"the integer literal {value} has more than {MAX_DECIMAL_PRECISION} digits")
    return pa.decimal128(digits, 0)


def decimal_literal_type(value: Decimal) -> pa.DataType:
    """Spark's DECIMAL(p, s) for a decimal literal such as ``1.50`` (p=3, s=2)."""
    _, digits, exponent = value.as_tuple()
    scale = max(0, -int(exponent))
    precision = max(len(digits) + max(0, int(exponent)), scale, 1)
    if precision > MAX_DECIMAL_PRECISION:
        raise PredicateParseError(f"the decimal literal {value} has more than {MAX_DECIMAL_PRECISION} digits")
    return pa.decimal128(precision, scale)


def _integer_as_decimal(arrow_type: pa.DataType) -> pa.DataType:
    return pa.decimal128(_INTEGER_PRECISION[arrow_type.bit_width], 0)


def _wider_integer(left: pa.DataType, right: pa.DataType) -> pa.DataType:
    signed = [t for t in (left, right) if pa.types.is_signed_integer(t)]
    unsigned = [t for t in (left, right) if pa.types.is_unsigned_integer(t)]
    if not unsigned:
        return max(left, right, key=lambda t: t.bit_width)
    widest_unsigned = max(t.bit_width for t in unsigned)
    if not signed:
        return max(left, right, key=lambda t: t.bit_width)
    needed = max(widest_unsigned * 2, *(t.bit_width for t in signed))
    return {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}.get(needed, pa.decimal128(20, 0))


def _wider_decimal(left: pa.DataType, right: pa.DataType) -> pa.DataType:
    """Spark's decimal both sides are compared in: past 38 digits it keeps the integer
    digits and gives up scale, rounding (half up) the side with more."""
    left = _integer_as_decimal(left) if pa.types.is_integer(left) else left
    right = _integer_as_decimal(right) if pa.types.is_integer(right) else right
    scale = max(left.scale, right.scale)
    digits = max(left.precision - left.scale, right.precision - right.scale)
    if max(left.precision, right.precision) > MAX_DECIMAL_PRECISION:  # no Spark type: compared exactly
        return pa.decimal256(min(digits + scale, 76), scale)
    if digits + scale > MAX_DECIMAL_PRECISION:
        scale = max(MAX_DECIMAL_PRECISION - digits, 0)
    return pa.decimal128(min(digits + scale, MAX_DECIMAL_PRECISION), scale)


def _is_number(arrow_type: pa.DataType) -> bool:
    return pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type)


def is_text(arrow_type: pa.DataType) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def is_bytes(arrow_type: pa.DataType) -> bool:
    return (
        pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
        or pa.types.is_fixed_size_binary(arrow_type)
    )


def _finer_unit(*units: str) -> str:
    return max(units, key=["s", "ms", "us", "ns"].index)


def common_type(column_type: pa.DataType, literal_type: pa.DataType) -> pa.DataType | None:
    """The type Spark compares a column of ``column_type`` with a literal of ``literal_type``
    in, or None when Spark does not compare them."""
    c, lit = column_type, literal_type
    if c == lit:
        return c
    if _is_number(c) and _is_number(lit):
        if pa.types.is_integer(c) and pa.types.is_integer(lit):
            return _wider_integer(c, lit)
        if pa.types.is_floating(c) or pa.types.is_floating(lit):
            # FLOAT with anything but FLOAT is DOUBLE: ANSI skips FLOAT when widening, as an
            # integer (2147483647) or a decimal does not fit in one.
            return pa.float64()
        return _wider_decimal(c, lit)
    if pa.types.is_temporal(c) and pa.types.is_temporal(lit):
        if pa.types.is_date(c) and pa.types.is_date(lit):
            return pa.date32()
        stamps = [t for t in (c, lit) if pa.types.is_timestamp(t)]
        if not stamps or any(not (pa.types.is_date(t) or pa.types.is_timestamp(t)) for t in (c, lit)):
            return None
        unit = _finer_unit("us", *(t.unit for t in stamps))
        # TIMESTAMP_NTZ with TIMESTAMP is TIMESTAMP (in the session time zone: UTC).
        zone = next((t.tz for t in stamps if t.tz is not None), None)
        return pa.timestamp(unit, tz=zone)
    if is_text(c) and is_text(lit):
        return c
    if is_bytes(c) and is_bytes(lit):
        return pa.binary()
    return None


# -- strings as Spark casts them -----------------------------------------------------------------
_DATE = r"(?P<year>[+-]?[0-9]{4,7})(?:-(?P<month>[0-9]{1,2})(?:-(?P<day>[0-9]{1,2}))?)?"
_TIME = r"(?P<hour>[0-9]{1,2})(?::(?P<minute>[0-9]{1,2})(?::(?P<second>[0-9]{1,2})(?:\.(?P<fraction>[0-9]{0,9}))?)?)?"
_ZONE = r"(?P<zone>Z|UTC|GMT|(?:UTC|GMT)?[+-][0-9]{1,2}(?::?[0-9]{2}(?::?[0-9]{2})?)?)"
_DATE_TEXT = re.compile(rf"{_DATE}(?:[ T].*)?", re.DOTALL)
# Spark's parser takes ASCII digits only, and trims a zone as Java trims (no other script's spaces).
_TIMESTAMP_TEXT = re.compile(rf"{_DATE}(?:[ T]{_TIME})?[\x00-\x20]*{_ZONE}?")


# A literal outside the years 1..9999 (Python's ``date``) is an Arrow scalar: Spark's dates and
# timestamps reach far beyond them (DATE '-0044-03-15', DATE '+12000-01-01').
DateValue = dt.date | pa.Scalar
TimestampValue = dt.datetime | pa.Scalar
MICROS_PER_DAY = 86_400_000_000


def parse_date(text: str) -> DateValue:
    """A date string as Spark's CAST(... AS DATE) reads it (``yyyy``, ``yyyy-[m]m``,
    ``yyyy-[m]m-[d]d``, a signed year of up to 7 digits, anything after a space or ``T``),
    or PredicateTypeError."""
    match = _DATE_TEXT.fullmatch(text.strip(SPARK_BLANKS))
    if not match:
        raise PredicateTypeError(f"'{text}' is not a date (expected yyyy-mm-dd)")
    return _date_of(match, text)


def _date_of(match: re.Match, text: str) -> DateValue:
    year, month, day = int(match["year"]), int(match["month"] or 1), int(match["day"] or 1)
    if not (1 <= month <= 12 and 1 <= day <= days_in_month(year, month)):
        raise PredicateTypeError(f"'{text}' is not a valid date")
    if 1 <= year <= 9999:
        return dt.date(year, month, day)
    days = days_from_civil(year, month, day)
    if not -(2**31) <= days < 2**31:
        raise PredicateTypeError(f"'{text}' is out of the date range")
    return pa.scalar(days, pa.int32()).cast(pa.date32())


def days_in_month(year: int, month: int) -> int:
    """In the proleptic Gregorian calendar with a year 0 (ISO 8601, as Java's and Spark's)."""
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) of a day number: :func:`days_from_civil` undone."""
    shifted = days + 719_468
    era = shifted // 146_097
    day_of_era = shifted - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def epoch_days(value: DateValue) -> int:
    return value.value if isinstance(value, pa.Scalar) else (value - dt.date(1970, 1, 1)).days


def epoch_micros(value: TimestampValue) -> int:
    """Microseconds since 1970-01-01 of a timestamp value (an aware one's instant, a naive one's
    wall clock as if in UTC)."""
    if isinstance(value, pa.Scalar):
        return value.cast(pa.timestamp("us", tz=value.type.tz)).value
    naive = value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
    delta = naive - dt.datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def ordered(value: object) -> object:
    """A literal's value as one that orders with every other value of its type: a date or a
    timestamp as its integer (one beyond Python's years is an Arrow scalar, which a Python
    date does not compare with)."""
    if isinstance(value, dt.datetime | pa.TimestampScalar):
        return epoch_micros(value)
    if isinstance(value, dt.date | pa.Date32Scalar):
        return epoch_days(value)
    return value


def date_text(days: int) -> str:
    """A day number as Spark writes a date: ``yyyy-mm-dd``, the year signed beyond 0..9999."""
    year, month, day = civil_from_days(days)
    shown = f"{year:04d}" if 0 <= year <= 9999 else f"{'-' if year < 0 else '+'}{abs(year):04d}"
    return f"{shown}-{month:02d}-{day:02d}"


def timestamp_text(micros: int) -> str:
    """Microseconds since 1970-01-01 as ``yyyy-mm-dd hh:mm:ss.ffffff`` (the wall clock in UTC)."""
    days, rest = divmod(micros, MICROS_PER_DAY)
    seconds, fraction = divmod(rest, 1_000_000)
    return f"{date_text(days)} {seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{fraction:06d}"


def parse_timestamp(text: str, *, zoned: bool) -> TimestampValue:
    """A timestamp string as Spark's CAST reads it, truncated to microseconds.

    ``zoned`` (a TIMESTAMP, an instant): an offset in the text is applied and the result is
    aware, in UTC (no offset means UTC, the session time zone lakeseek assumes). Otherwise
    (TIMESTAMP_NTZ) any offset is ignored, as Spark ignores it, and the result is naive.
    """
    match = _TIMESTAMP_TEXT.fullmatch(text.strip(SPARK_BLANKS))
    if not match:
        raise PredicateTypeError(f"'{text}' is not a timestamp (expected yyyy-mm-dd hh:mm:ss[.ffffff][+hh:mm])")
    day = _date_of(match, text)
    hour, minute, second = int(match["hour"] or 0), int(match["minute"] or 0), int(match["second"] or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise PredicateTypeError(f"'{text}' is not a valid timestamp")
    fraction = int((match["fraction"] or "")[:6].ljust(6, "0"))
    offset = _offset(match["zone"], text) if zoned else dt.timedelta(0)
    micros = epoch_days(day) * MICROS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1_000_000 + fraction
    micros -= (offset.days * 86_400 + offset.seconds) * 1_000_000
    if not -(2**63) <= micros < 2**63:
        raise PredicateTypeError(f"'{text}' is out of the timestamp range")
    moment = pa.scalar(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC" if zoned else None))
    try:
        return moment.as_py()  # a datetime where Python has one
    except (ValueError, OverflowError):
        return moment


def _offset(zone: str | None, text: str) -> dt.timedelta:
    if zone is None or zone in ("Z", "UTC", "GMT"):
        return dt.timedelta(0)
    digits = re.sub(r"^(UTC|GMT)", "", zone)
    sign = -1 if digits[0] == "-" else 1
    parts = re.fullmatch(r"[+-](\d{1,2}):?(\d{2})?:?(\d{2})?", digits)
    if not parts:
        raise PredicateTypeError(f"'{text}' has an invalid time zone offset")
    hours, minutes, seconds = (int(p or 0) for p in parts.groups())
    if hours > 18 or minutes > 59 or seconds > 59:
        raise PredicateTypeError(f"'{text}' has an invalid time zone offset")
    return sign * dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)


_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")  # ASCII digits: int() takes any script's
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# Spark's words for the special values of a string cast to DOUBLE, once trimmed and lower-cased
# (Cast.processFloatingPointSpecialLiterals); Java's own NaN and Infinity are case-sensitive.
_SPARK_FLOAT_WORDS = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf}
_SPARK_FLOAT_WORDS |= {"-inf": -math.inf, "-infinity": -math.inf, "nan": math.nan}


def spark_double(text: str) -> float:
    """``text`` as Spark casts a string to DOUBLE: Java's ``Double.parseDouble`` (a trailing
    ``d`` or ``f``, hexadecimal ``0x1p3``; no ``_`` between digits, no other script's digits
    or spaces), else Spark's words for infinity and NaN. ValueError otherwise."""
    value = java_double(text)
    if value is None:
        value = _SPARK_FLOAT_WORDS.get(text.strip(JAVA_BLANKS).lower())
    if value is None:
        raise ValueError(f"not a number: {text!r}")
    return value


_BOOLEANS = {"t": True, "true": True, "y": True, "yes": True, "1": True, "f": False, "false": False, "n": False}
_BOOLEANS |= {"no": False, "0": False}


def string_comparison_type(column_type: pa.DataType) -> pa.DataType | None:
    """The type Spark casts a string compared with a column of ``column_type`` to: the
    column's type family (integers: BIGINT; decimals, floats and a uint64, which Spark reads
    as DECIMAL(20, 0): DOUBLE), or None when Spark does not compare them."""
    if pa.types.is_integer(column_type) and column_type != pa.uint64():
        return pa.int64()
    if _is_number(column_type):
        return pa.float64()
    if pa.types.is_boolean(column_type):
        return pa.bool_()
    if pa.types.is_date(column_type):
        return pa.date32()
    if pa.types.is_timestamp(column_type):
        return pa.timestamp("us", tz=column_type.tz)
    if is_bytes(column_type):
        return pa.binary()
    if is_text(column_type):
        return pa.string()
    return None


def string_as(text: str, column_type: pa.DataType) -> tuple[object, pa.DataType]:
    """A string literal compared with a column of ``column_type``: Spark casts the string to
    the column's type family (:func:`string_comparison_type`), strictly (ANSI: a malformed
    string is an error)."""
    target = string_comparison_type(column_type)
    if target is None:
        raise PredicateTypeError(f"the string '{text}' cannot be compared with {column_type}")
    return cast_string(text, target), target


# Enough digits for any decimal a string is cast to (Python's default context keeps 28).
_DECIMAL_DIGITS = Context(prec=2 * MAX_DECIMAL_PRECISION)


def cast_string(text: str, target: pa.DataType) -> object:
    """``text`` as Spark's ``CAST(text AS target)`` reads it, strictly (ANSI): its value in
    ``target``, or PredicateTypeError."""

    def malformed() -> PredicateTypeError:
        return PredicateTypeError(f"the string '{text}' cannot be cast to {target}, the type it is compared in")

    stripped = text.strip(SPARK_BLANKS)
    if pa.types.is_integer(target):
        if not _INTEGER_TEXT.fullmatch(stripped) or not -(2**63) <= int(stripped) < 2**63:
            raise malformed()
        return int(stripped)
    if pa.types.is_floating(target):
        try:
            return spark_double(text)
        except ValueError as error:
            raise malformed() from error
    if pa.types.is_decimal(target):
        # Spark's decimal cast: the exact number, rounded half up to the scale; too many digits is an error.
        try:
            unit = Decimal(1).scaleb(-target.scale)
            number = exact_decimal(text).quantize(unit, rounding=ROUND_HALF_UP, context=_DECIMAL_DIGITS)
        except (PredicateParseError, InvalidOperation) as error:
            raise malformed() from error
        if abs(number) >= Decimal(10) ** (target.precision - target.scale):
            raise malformed()
        return number
    if pa.types.is_boolean(target):
        if stripped.lower() not in _BOOLEANS:
            raise malformed()
        return _BOOLEANS[stripped.lower()]
    if pa.types.is_date(target):
        return parse_date(text)
    if pa.types.is_timestamp(target):
        return parse_timestamp(text, zoned=target.tz is not None)
    if is_bytes(target):
        return text.encode("utf-8")
    if is_text(target):
        return text
    raise malformed()


def exact_decimal(text: str) -> Decimal:
    """``text`` as Java's ``new BigDecimal(text.trim())`` reads it (Spark's cast of a string to DECIMAL)."""
    trimmed = text.strip(JAVA_BLANKS)
    if not _DECIMAL_TEXT.fullmatch(trimmed):  # Decimal() would take 1_000 and other scripts' digits and spaces
        raise PredicateParseError(f"malformed number {text!r}")
    try:
        number = Decimal(trimmed)
    except InvalidOperation as error:
        raise PredicateParseError(f"malformed number {text!r}") from error
    if not number.is_finite():
        raise PredicateParseError(f"malformed number {text!r}")
    return number


def arrow_scalar(value: object, arrow_type: pa.DataType) -> pa.Scalar:
    """A literal value (a Python value, or an Arrow scalar for dates Python cannot hold) as a
    scalar of ``arrow_type``."""
    if isinstance(value, pa.Scalar):
        return value.cast(arrow_type)
    return pa.scalar(value, type=arrow_type)


def is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)
