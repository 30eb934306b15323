"""Spark's typing of CSV text: the types ``spark.read.csv(header=True, inferSchema=True)`` infers
for a column, and the values its reader makes of the text under a type (Spark 4, default
options, a UTC session).

Inference runs down a column's values in order. Each value is tried as the types from the one
so far upwards (INT, BIGINT, DECIMAL(p, 0), DOUBLE, DATE, TIMESTAMP, BOOLEAN, else STRING) and
the result merged with the type so far (:func:`common_type`). The order matters only where a
later type parses what an earlier one refused (a bare year ``2020`` is an INT, but once the
column is a TIMESTAMP it is the first of January), so values are folded in order, one run of
alike values at a time.

The text of each type, as Spark's parsers take it:

* INT, BIGINT: Java's ``parseInt`` / ``parseLong``: a sign, then decimal digits of any script.
* DECIMAL(p, 0): Java's ``BigDecimal`` of scale 0 (``1.``, ``1.5e1``, integers past BIGINT).
* DOUBLE: Java's ``parseDouble`` (blanks around it, ``1d``, ``0x1p3``, ``Infinity``) and the
  words ``NaN``, ``Inf`` and ``-Inf``.
* DATE: ``yyyy-MM-dd`` exactly, a real day.
* TIMESTAMP: Spark's lenient timestamp text (``2020-1-1``, ``2020-01-01 10:00``, a time zone
  after it). A time of day alone Spark reads as a timestamp of the day it reads it on, which
  no index can keep: lakeseek types such a value as text.
* BOOLEAN: ``true`` or ``false`` in any case.
"""

from __future__ import annotations

import decimal
import functools
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.expressions.java_text import (
    BIG_DECIMAL,
    JAVA_BLANKS,
    JAVA_DOUBLE_PATTERN,
    JAVA_INTEGER,
    SHORT_IDS,
    java_double,
    zone_offset,
)
from lakeseek.expressions.types import days_from_civil, days_in_month

INT = pa.int32()
BIGINT = pa.int64()
DOUBLE = pa.float64()
DATE = pa.date32()
TIMESTAMP = pa.timestamp("us", tz="UTC")
BOOLEAN = pa.bool_()
STRING = pa.string()
NULL = pa.null()
_MAX_PRECISION = 38
# Java's region zone ids (ZoneRegion's pattern).
_REGION = re.compile(r"[A-Za-z][A-Za-z0-9~/._+-]+")
_INT_RANGE = (-(2**31), 2**31 - 1)
_BIGINT_RANGE = (-(2**63), 2**63 - 1)

_SPARK_DOUBLE_WORDS = {"NaN": float("nan"), "Inf": float("inf"), "-Inf": float("-inf")}
_DATE = re.compile(r"(-?[0-9]{4}|[+-][0-9]{5,})-([0-9]{2})-([0-9]{2})")
_PLAIN_INTEGERS = r"^-?[0-9]{1,18}$"
_PLAIN_DATES = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
# An offset Java takes (to ±18:00) at the end of ISO text; Arrow takes larger ones.
ISO_OFFSET = r"(Z|[+-](0[0-9]|1[0-7])(:?[0-5][0-9])?|[+-]18(:?00)?)"
_ISO_LOCAL = r"[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?"
_ZONED_TIMESTAMPS = rf"^{_ISO_LOCAL}{ISO_OFFSET}?$"
# Text some parser may take: a number (digits of any script, NaN, Inf, Infinity, hex), a date or
# timestamp (digits, or T before a time), a boolean. Any other value is a STRING.
_MAYBE_TYPED = r"^[\x00-\x20\x7f]*([+-]?(\pN|\.|NaN|Inf)|T|(?i:true|false)$)"
# What Spark's lenient timestamp text may be: a year of 4 to 6 digits, then the rest or nothing.
_MAYBE_LENIENT_TIMESTAMP = r"^[\x00-\x20\x7f]*[+-]?[0-9]{4,6}(-|[\x00-\x20\x7f]*$)"
# Numbers BigDecimal may take at scale 0 that are no BIGINT: past it, ``1.``, an exponent.
_MAYBE_SCALE_ZERO = r"^[+-]?[0-9]{19,}$|^[+-]?[0-9]+\.$|^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?[0-9]+$"
# Double.parseDouble's text (ASCII), blanks around it.
_JAVA_DOUBLE_TEXT = rf"^[\x00-\x20]*{JAVA_DOUBLE_PATTERN}[\x00-\x20]*$"
_PLAIN_DOUBLES = r"^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]{1,3})?$"


@dataclass(frozen=True)
class _Profile:
    """Which of Spark's parsers take one value (``precision``: BigDecimal's, where it is of scale 0)."""

    int32: bool
    int64: bool
    precision: int | None
    double: bool
    date: bool
    timestamp: bool
    boolean: bool

    _ORDER = ("int32", "int64", "precision", "double", "date", "timestamp", "boolean")

    def bits(self) -> int:
        """The parsers that take the value, one bit each in :data:`_ORDER`'s order."""
        return sum(1 << i for i, name in enumerate(self._ORDER) if getattr(self, name) not in (False, None))

    @classmethod
    def of(cls, bits: int, precision: int) -> _Profile:
        flags = {name: bool(bits >> i & 1) for i, name in enumerate(cls._ORDER)}
        return cls(**{**flags, "precision": precision if flags["precision"] else None})


# -- inference ---------------------------------------------------------------------------------------
def infer_type(column: pa.Array | pa.ChunkedArray) -> pa.DataType:
    """The type Spark infers for a column of text (NULL where it holds none)."""
    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    values = values.drop_null()
    if len(values) == 0:
        return NULL
    # Checks on the distinct values; the fold below, on the values in order, only where it matters.
    distinct = pc.unique(values)
    if pc.all(pc.match_substring_regex(distinct, _PLAIN_INTEGERS)).as_py():
        low, high = pc.min_max(pc.cast(distinct, BIGINT)).values()
        return INT if _INT_RANGE[0] <= low.as_py() and high.as_py() <= _INT_RANGE[1] else BIGINT
    # Whole numbers and fractions in any order are DOUBLE, unless a whole number is past BIGINT
    # or a number is of scale 0 (``1.``, ``1.5e1``): then the fold below decides.
    if (
        pc.any(pc.match_substring(distinct, ".")).as_py()
        and pc.all(pc.match_substring_regex(distinct, _PLAIN_DOUBLES)).as_py()
        and not pc.any(pc.match_substring_regex(distinct, r"^[+-]?[0-9]{19,}$|^[^eE]*\.$|[eE]")).as_py()
    ):
        return DOUBLE
    if not pc.all(pc.match_substring_regex(distinct, _MAYBE_TYPED)).as_py():
        return STRING  # a value no parser takes makes the column STRING, wherever it sits
    # Two dots outside a timestamp's text (an address, a version): no number takes them either.
    dotted = pc.and_(
        pc.match_substring_regex(distinct, r"\..*\."),
        pc.invert(pc.match_substring_regex(distinct, _MAYBE_LENIENT_TIMESTAMP)),
    )
    if pc.any(dotted).as_py():
        return STRING
    bits, precisions = _profiles(distinct)
    if not bits.all():
        return STRING
    rows = pc.index_in(values, value_set=distinct).to_numpy()
    row_bits = bits[rows]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(row_bits)) + 1])
    widest = np.maximum.reduceat(precisions[rows], starts)
    found = NULL
    for start, precision in zip(starts.tolist(), widest.tolist(), strict=True):
        found = _infer_value(found, _Profile.of(int(row_bits[start]), precision))
    return found


def _profiles(distinct: pa.StringArray) -> tuple[np.ndarray, np.ndarray]:
    """Per value, the parsers that take it (:meth:`_Profile.bits`) and BigDecimal's precision
    at scale 0 (0: none): computed by Arrow for the shapes most text takes, by :func:`_profile`
    for the rest (digits of other scripts, numbers of scale 0 that are no BIGINT, Spark's
    lenient timestamp text)."""
    integer = _matches(distinct, r"^[+-]?[0-9]{1,18}$")
    numbers = np.zeros(len(distinct), np.int64)
    precisions = np.zeros(len(distinct), np.int64)
    if integer.any():
        whole = distinct.filter(pa.array(integer))
        numbers[integer] = pc.cast(pc.utf8_ltrim(whole, "+"), BIGINT).to_numpy()
        digits = pc.utf8_length(pc.utf8_ltrim(pc.utf8_ltrim(whole, "+-"), "0")).to_numpy()
        precisions[integer] = np.maximum(digits, 1)
    int32 = integer & (numbers >= _INT_RANGE[0]) & (numbers <= _INT_RANGE[1])
    words = pc.is_in(distinct, pa.array(list(_SPARK_DOUBLE_WORDS))).to_numpy(zero_copy_only=False)
    double = _matches(distinct, _JAVA_DOUBLE_TEXT) | words
    valid_day = pc.is_valid(pc.strptime(distinct, "%Y-%m-%d", "s", error_is_null=True))
    date = _matches(distinct, _PLAIN_DATES) & valid_day.to_numpy(zero_copy_only=False)
    iso = _matches(distinct, _ZONED_TIMESTAMPS)
    timestamp = iso.copy()
    if iso.any():
        timestamp[iso] = pc.is_valid(_iso_timestamps(distinct.filter(pa.array(iso)))).to_numpy(zero_copy_only=False)
    boolean = pc.is_in(pc.utf8_lower(distinct), pa.array(["true", "false"])).to_numpy(zero_copy_only=False)
    bits = int32 * 1 | integer * 2 | integer * 4 | double * 8 | date * 16 | timestamp * 32 | boolean * 64
    slow = ~pc.string_is_ascii(distinct).to_numpy(zero_copy_only=False) | _matches(distinct, _MAYBE_SCALE_ZERO)
    slow |= _matches(distinct, _MAYBE_LENIENT_TIMESTAMP) & ~iso
    for i in np.flatnonzero(slow).tolist():
        profile = _profile(distinct[i].as_py())
        bits[i], precisions[i] = profile.bits(), profile.precision or 0
    return bits, precisions


def _matches(values: pa.Array, pattern: str) -> np.ndarray:
    return pc.match_substring_regex(values, pattern).to_numpy(zero_copy_only=False)


def _iso_timestamps(values: pa.Array) -> pa.Array:
    """ISO text with or without a zone (:data:`_ZONED_TIMESTAMPS`) as UTC instants (text
    without a zone is in the UTC session's time); NULL where the day or time does not exist."""
    zone = pc.match_substring_regex(values, rf"{ISO_OFFSET}$")
    text = pc.if_else(zone, values, pc.binary_join_element_wise(values, pa.scalar("Z"), ""))
    try:
        return pc.cast(text, TIMESTAMP)
    except pa.ArrowInvalid:
        return pa.array([None if v is None else _timestamp(v) for v in values.to_pylist()], BIGINT).cast(TIMESTAMP)


def _infer_value(so_far: pa.DataType, value: _Profile) -> pa.DataType:
    """Spark's ``inferField``: the value tried as the types from ``so_far`` upwards, merged with it."""
    trials: list[tuple[pa.DataType | None, bool]] = [
        (INT, value.int32),
        (BIGINT, value.int64),
        (None, value.precision is not None),  # DECIMAL(p, 0)
        (DOUBLE, value.double),
        (DATE, value.date),
        (TIMESTAMP, value.timestamp),
        (BOOLEAN, value.boolean),
    ]
    start = {INT: 0, BIGINT: 1, DOUBLE: 3, DATE: 4, TIMESTAMP: 5, BOOLEAN: 6, STRING: 7}
    first = 0 if so_far == NULL else 2 if pa.types.is_decimal(so_far) else start[so_far]
    inferred = next(
        (pa.decimal128(value.precision, 0) if t is None else t for t, parses in trials[first:] if parses),
        STRING,
    )
    return common_type(so_far, inferred)


def common_type(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The type Spark's CSV inference merges two types of a column to (STRING where none is
    common)."""
    if a == b:
        return a
    if a == NULL or b == NULL:
        return b if a == NULL else a
    if a == STRING or b == STRING:
        return STRING
    temporal = {DATE, TIMESTAMP}
    if a in temporal and b in temporal:
        return TIMESTAMP  # Spark's lenient timestamp text takes every date
    numbers = {INT: 10, BIGINT: 20}
    if a in numbers and b in numbers:
        return BIGINT
    if DOUBLE in (a, b):
        other = b if a == DOUBLE else a
        return DOUBLE if other in numbers or pa.types.is_decimal(other) else STRING
    if pa.types.is_decimal(a) or pa.types.is_decimal(b):
        digits = [numbers.get(t, t.precision if pa.types.is_decimal(t) else None) for t in (a, b)]
        if None in digits:
            return STRING
        return pa.decimal128(max(digits), 0)
    return STRING


@functools.lru_cache(maxsize=100_000)
def _profile(text: str) -> _Profile:
    number = int(text) if JAVA_INTEGER.fullmatch(text) else None
    return _Profile(
        int32=number is not None and _INT_RANGE[0] <= number <= _INT_RANGE[1],
        int64=number is not None and _BIGINT_RANGE[0] <= number <= _BIGINT_RANGE[1],
        precision=_decimal_precision(text),
        double=text in _SPARK_DOUBLE_WORDS or java_double(text) is not None,
        date=_strict_date(text) is not None,
        timestamp=_timestamp(text) is not None,
        boolean=text.lower() in ("true", "false"),
    )


def _decimal_precision(text: str) -> int | None:
    """The precision of Java's ``BigDecimal(text)`` where its scale is 0 (Spark allows no other
    in inference) and the precision at most 38; else None."""
    if not BIG_DECIMAL.fullmatch(text):
        return None
    _, digits, exponent = decimal.Decimal(text).as_tuple()
    if exponent != 0 or len(digits) > _MAX_PRECISION:
        return None
    return len(digits)


# -- reading -----------------------------------------------------------------------------------------
def convert(column: pa.Array | pa.ChunkedArray, to: pa.DataType) -> pa.Array:
    """The values Spark's CSV reader makes of the text ``column`` under type ``to``: NULL where
    a value does not parse (Spark's PERMISSIVE mode)."""
    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_null(values.type):
        return pa.nulls(len(values), to)
    if to == STRING or pa.types.is_null(to):
        return values.cast(STRING) if to == STRING else pa.nulls(len(values))
    fast = _fast_convert(values, to)
    if fast is not None:
        return fast
    distinct = pc.unique(values.drop_null())
    parse = _PARSERS.get(to) or (lambda text: _decimal_value(text, to))
    parsed = pa.array([parse(text) for text in distinct.to_pylist()], to)
    return pc.take(parsed, pc.index_in(values, value_set=distinct))


def _fast_convert(values: pa.Array, to: pa.DataType) -> pa.Array | None:
    """Arrow's own cast, where every value is text it reads as Java does."""
    present = values.drop_null()
    if pa.types.is_integer(to) and pc.all(pc.match_substring_regex(present, _PLAIN_INTEGERS)).as_py():
        try:
            return pc.cast(values, to)
        except (pa.ArrowInvalid, OverflowError):
            return None
    if to == DOUBLE and pc.all(pc.match_substring_regex(present, _PLAIN_DOUBLES)).as_py():
        return pc.cast(values, to)
    if to == DATE and pc.all(pc.match_substring_regex(present, _PLAIN_DATES)).as_py():
        try:
            return pc.cast(values, to)
        except pa.ArrowInvalid:
            return None
    if to == TIMESTAMP and pc.all(pc.match_substring_regex(present, _ZONED_TIMESTAMPS)).as_py():
        return _iso_timestamps(values)
    return None


def _integer(text: str, bounds: tuple[int, int]) -> int | None:
    if not JAVA_INTEGER.fullmatch(text):
        return None
    number = int(text)
    return number if bounds[0] <= number <= bounds[1] else None


def _decimal_value(text: str, to: pa.Decimal128Type) -> decimal.Decimal | None:
    # Spark's reader drops grouping commas (its US-locale decimal parser) before BigDecimal.
    plain = text.replace(",", "")
    if not BIG_DECIMAL.fullmatch(plain):
        return None
    value = decimal.Decimal(plain)
    if value != value.to_integral_value():
        value = value.quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP)
    return value if len(value.as_tuple().digits) <= to.precision else None


def _double(text: str) -> float | None:
    return _SPARK_DOUBLE_WORDS[text] if text in _SPARK_DOUBLE_WORDS else java_double(text)


def _strict_date(text: str) -> int | None:
    """Days since 1970-01-01 of Spark's ``yyyy-MM-dd`` (Java's ``uuuu``: four digits, a sign
    before more, or a minus before four), a real day; else None."""
    match = _DATE.fullmatch(text)
    if match is None:
        return None
    year, month, day = int(match[1]), int(match[2]), int(match[3])
    if not (1 <= month <= 12 and 1 <= day <= days_in_month(year, month)):
        return None
    return days_from_civil(year, month, day)


def _boolean(text: str) -> bool | None:
    lowered = text.lower()
    return lowered == "true" if lowered in ("true", "false") else None


_PARSERS = {
    INT: lambda text: _integer(text, _INT_RANGE),
    BIGINT: lambda text: _integer(text, _BIGINT_RANGE),
    DOUBLE: _double,
    DATE: _strict_date,
    TIMESTAMP: lambda text: _timestamp(text),
    BOOLEAN: _boolean,
}


# -- Spark's timestamp text --------------------------------------------------------------------------
_TRIMMED = JAVA_BLANKS + "\x7f"  # Spark's UTF8String.trimAll


@functools.lru_cache(maxsize=100_000)
def _timestamp(text: str) -> int | None:
    """Microseconds since the epoch of Spark's lenient timestamp text (``DateTimeUtils.
    stringToTimestamp`` in a UTC session); None where Spark reads none, or where the text is a
    time of day without a date."""
    parsed = _timestamp_parts(text.strip(_TRIMMED))
    if parsed is None:
        return None
    segments, zone = parsed
    year, month, day, hour, minute, second, micros = segments
    if not (1 <= month <= 12 and 1 <= day <= days_in_month(year, month)):
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    days = days_from_civil(year, month, day)
    local = ((days * 24 + hour) * 60 + minute) * 60 + second
    offset = _offset_seconds(zone)
    if offset is None:
        return None
    return (local - offset) * 1_000_000 + micros


def _timestamp_parts(text: str) -> tuple[list[int], str | None] | None:
    """A port of Spark's ``parseTimestampString``: the segments (year, month, day, hour,
    minute, second, microsecond) and the zone's text; None where Spark refuses the text or
    where it holds a time of day alone."""
    if not text:
        return None
    segments = [1, 1, 1, 0, 0, 0, 0]
    i = value = digits = fraction_digits = 0
    j = 0
    sign = 1
    signed = False
    zone = None
    if text[0] in "+-":
        sign, signed, j = (-1 if text[0] == "-" else 1), True, 1

    def valid(segment: int, count: int) -> bool:
        if segment == 6:
            return True
        if segment == 0:
            return 4 <= count <= 6
        if segment == 7:
            return count <= 2
        return 0 < count <= 2

    while j < len(text):
        c = text[j]
        if "0" <= c <= "9":
            if i == 6:
                fraction_digits += 1
            if i != 6 or digits < 6:
                value = value * 10 + ord(c) - 48
            digits += 1
            j += 1
            continue
        if j == 0 and c == "T":
            return None  # a time of day alone
        if i < 2:
            if c == "-":
                if not valid(i, digits):
                    return None
                segments[i], value, digits, i = value, 0, 0, i + 1
            elif i == 0 and c == ":" and not signed:
                return None  # a time of day alone
            else:
                return None
        elif i == 2:
            if c not in " T" or not valid(i, digits):
                return None
            segments[i], value, digits, i = value, 0, 0, i + 1
        elif i in (3, 4):
            if c != ":" or not valid(i, digits):
                return None
            segments[i], value, digits, i = value, 0, 0, i + 1
        elif i in (5, 6):
            if not valid(i, digits):
                return None
            segments[i], value, digits = value, 0, 0
            if c == "." and i == 5:
                i += 1
            else:
                i += 1 if i == 6 else 2
                zone = text[j:]
                j = len(text)
                break
        else:
            return None
        j += 1
    if zone is None:
        if i > 6 or not valid(i, digits):
            return None
        segments[i] = value
    while fraction_digits < 6:
        segments[6] *= 10
        fraction_digits += 1
    segments[0] *= sign
    return segments, zone


def _offset_seconds(zone: str | None) -> int | None:
    """The zone's offset from UTC (Spark's ``getZoneId``, then Java's ``ZoneId.of``); None where
    Java has no such zone. A region (``Europe/Paris``, ``PST``) is refused: Java's zone rules,
    which Spark reads the text with, and Python's differ for some dates."""
    if zone is None:
        return 0  # a UTC session
    name = re.sub(r"([+-])([0-9]):", r"\g<1>0\2:", zone.strip(JAVA_BLANKS), count=1)
    name = re.sub(r"([+-])([0-9]{2}):([0-9])$", r"\1\2:0\3", name, count=1)
    name = SHORT_IDS.get(name, name)
    if name in ("Z", "UTC", "GMT", "UT"):
        return 0
    try:
        seconds = zone_offset(name)
    except ValueError:
        return None
    if seconds is not None or not _REGION.fullmatch(name):
        return seconds
    raise pa.ArrowInvalid(
        f"a timestamp in the time zone {zone.strip()!r}: Spark reads it with Java's zone rules, which differ "
        "from Python's for some dates, so lakeseek does not read timestamps in region time zones (offsets it does)"
    )
