"""Hive partition values as Spark reads them from directory names.

Spark 4 (``PartitioningUtils``) infers one type per partition column over every
``name=value`` directory of the lake, then casts each directory's raw text to that type
(``castPartValueToDesiredType``). lakeseek records the types Spark inferred when the index
was built (the lake schema) and turns the raw text of each file's directories into values of
those types the way Spark does, so ``read``, ``files`` and the index agree with
``spark.read.parquet``:

- strings are ``unescapePathName(raw)``: each ``%XX`` (two hex digits) becomes the one
  character U+00XX, byte by byte, so ``%C3%A9`` is ``'Ã©'`` (not ``'é'``, as URI decoding
  would have it) and ``%2F`` is ``/``; other text is kept as it is;
- integers are Java's ``Integer.parseInt`` / ``Long.parseLong`` of the raw text (``+5`` and
  ``007`` are 5 and 7), decimals ``new BigDecimal(raw)`` (``1e3`` is 1000), doubles
  ``Double.parseDouble`` (``1d``, ``" 5"``, ``NaN``);
- dates are Spark's string-to-date cast of the raw text; timestamps its cast of the unescaped
  text, **in the session time zone** (``2024-01-01 10%3A00%3A00`` is 10:00 there);
- ``__HIVE_DEFAULT_PARTITION__`` is NULL.

The types themselves are inferred as Spark infers them (:func:`infer_partition_types`), so a
directory that changes a column's type (``p=2.5`` after ``p=1``) changes it for the whole lake.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from lakeseek.exceptions import LakeseekError
from lakeseek.expressions.java_text import BIG_DECIMAL, JAVA_INTEGER, java_double, time_zone_of
from lakeseek.expressions.types import _TIMESTAMP_TEXT, parse_date, parse_timestamp
from lakeseek.lake.schemas import MAX_DECIMAL_PRECISION, wider_decimal

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
UTC = "UTC"

_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def unescape_path_name(text: str) -> str:
    """Spark's ``ExternalCatalogUtils.unescapePathName``: ``%XX`` -> the character U+00XX."""
    return _ESCAPE.sub(lambda match: chr(int(match[1], 16)), text) if "%" in text else text


def partition_value(raw: str, arrow_type: pa.DataType, time_zone: str = UTC) -> object:
    """The value Spark reads from a partition directory's raw text for a column of ``arrow_type``.

    ValueError when the text is no value of that type (Spark would have inferred another).
    """
    if raw == DEFAULT_PARTITION_NAME:
        return None
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return unescape_path_name(raw)
    if pa.types.is_integer(arrow_type):
        if not JAVA_INTEGER.fullmatch(raw):
            raise ValueError("not an integer")
        value = int(raw)
        bits = 32 if arrow_type.bit_width <= 32 else 64  # Spark parses bytes and shorts as ints
        if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            raise ValueError("out of range")
        return value
    if pa.types.is_decimal(arrow_type):
        if not BIG_DECIMAL.fullmatch(raw):
            raise ValueError("not a decimal")
        try:
            value = Decimal(raw).quantize(Decimal(1).scaleb(-arrow_type.scale))
        except InvalidOperation as error:
            raise ValueError("out of range") from error
        if len(value.as_tuple().digits) > arrow_type.precision:
            raise ValueError("out of range")
        return value
    if pa.types.is_floating(arrow_type):
        number = java_double(raw)
        if number is None:
            raise ValueError("not a number")
        return number
    if pa.types.is_date(arrow_type):
        return parse_date(raw)
    if pa.types.is_timestamp(arrow_type):
        return _timestamp(raw, arrow_type, time_zone)
    if pa.types.is_boolean(arrow_type):
        if raw.lower() not in ("true", "false"):
            raise ValueError("not a boolean")
        return raw.lower() == "true"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return raw.encode("utf-8")
    raise ValueError(f"partition columns of type {arrow_type} are not supported")


def _timestamp(raw: str, arrow_type: pa.DataType, time_zone: str) -> dt.datetime:
    """Spark's cast of the unescaped text to a timestamp, else of the raw text to a date, then
    to midnight: in ``time_zone`` unless the text names its own offset (TIMESTAMP), or as a
    local date-time (TIMESTAMP_NTZ)."""
    text = unescape_path_name(raw)
    try:
        local = parse_timestamp(text, zoned=False)
        match = _TIMESTAMP_TEXT.fullmatch(text.strip())
        if arrow_type.tz is not None and match is not None and match["zone"]:
            return parse_timestamp(text, zoned=True)
    except LakeseekError:
        local = dt.datetime.combine(parse_date(raw), dt.time())
    if arrow_type.tz is None:
        return local
    return local.replace(tzinfo=time_zone_of(time_zone)).astimezone(dt.timezone.utc)


def raw_partition_values(path: str) -> dict[str, str]:
    """The raw text of each ``name=value`` directory on a file's path, by name (unescaped, and raw)."""
    found: dict[str, str] = {}
    for part in path.split("/")[:-1]:
        name, equals, value = part.partition("=")
        if equals:
            found.setdefault(name, value)
            found[unescape_path_name(name)] = value
    return found


def partition_values(path: str, fields: pa.Schema, time_zone: str = UTC) -> dict[str, object]:
    """The partition values of the file at ``path`` (relative to the lake root), by column.

    ``fields`` are the partition columns with their types; a column missing from the path is
    NULL. A value that is not of its column's type (the lake changed since the index recorded
    the types) is a LakeseekError.
    """
    raw = raw_partition_values(path)
    folded = {name.lower(): value for name, value in raw.items()}  # Spark resolves names case-insensitively
    values: dict[str, object] = {}
    for field in fields:
        text = raw.get(field.name, folded.get(field.name.lower()))
        try:
            values[field.name] = None if text is None else partition_value(text, field.type, time_zone)
        except (ValueError, LakeseekError) as error:
            raise LakeseekError(
                f"partition value {field.name}={text} of {path} is not a {field.type}, the type the index "
                "recorded: the lake's partition types changed since; run a full refresh"
            ) from error
    return values


def partition_expression(path: str, fields: pa.Schema, time_zone: str = UTC) -> ds.Expression:
    """The partition values of ``path`` as the pyarrow expression a dataset fragment carries."""
    return values_expression(partition_values(path, fields, time_zone), fields)


def values_expression(values: Mapping[str, object], fields: pa.Schema) -> ds.Expression:
    """Partition values (by column) as the pyarrow expression a dataset fragment carries."""
    expression = None
    for name, value in values.items():
        column = pc.field(name)
        term = column.is_null() if value is None else column == pa.scalar(value, fields.field(name).type)
        expression = term if expression is None else expression & term
    return ds.scalar(True) if expression is None else expression


# -- partition types: Spark's inference (PartitioningUtils.inferPartitionColumnValue) ---------------
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_TIMESTAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d))?", re.ASCII)


def infer_partition_value(raw: str) -> pa.DataType:
    """The type Spark infers for one raw (still escaped) partition directory value:
    INT, BIGINT, DECIMAL(p, 0), DOUBLE, TIMESTAMP, DATE or STRING (NULL for Hive's NULL)."""
    if JAVA_INTEGER.fullmatch(raw):
        number = int(raw)
        if -(2**31) <= number < 2**31:
            return pa.int32()
        if -(2**63) <= number < 2**63:
            return pa.int64()
    decimal = _decimal_type(raw)
    if decimal is not None:
        return decimal
    if java_double(raw) is not None:
        return pa.float64()
    if _is_timestamp(unescape_path_name(raw)):
        return pa.timestamp("us", tz="UTC")
    if _is_date(raw):
        return pa.date32()
    return pa.null() if raw == DEFAULT_PARTITION_NAME else pa.string()


def _decimal_type(raw: str) -> pa.DataType | None:
    """``new java.math.BigDecimal(raw)`` with no fraction digit left, as a Spark DECIMAL."""
    match = BIG_DECIMAL.fullmatch(raw)
    if match is None:
        return None
    _, whole, fraction, only_fraction, exponent = match.groups()
    digits = (whole or "") + (fraction or "") + (only_fraction or "")
    scale = len(fraction or only_fraction or "") - int(exponent or 0)
    if scale > 0:
        return None
    try:
        unscaled = Decimal(digits)
    except InvalidOperation:  # pragma: no cover - the regex admits digits only
        return None
    precision = max(1, len(str(int(unscaled)).lstrip("-"))) - scale  # a negative scale becomes 0
    return pa.decimal128(precision, 0) if precision <= MAX_DECIMAL_PRECISION else None


def _is_date(raw: str) -> bool:
    match = _DATE.fullmatch(raw)
    if match is None:
        return False
    try:
        dt.date(*(int(part) for part in match.groups()))
    except ValueError:
        return False
    return True


def _is_timestamp(text: str) -> bool:
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return False
    try:
        dt.datetime(*(int(part) for part in match.groups()[:6]))
    except ValueError:
        return False
    return True


def _wider_partition_type(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """Spark's ``findWiderTypeForPartitionColumn`` over the types :func:`infer_partition_value` gives."""
    if a.equals(b):
        return a
    if pa.types.is_null(a) or pa.types.is_null(b):
        return b if pa.types.is_null(a) else a
    pair = {_kind(a), _kind(b)}
    if pair <= {"int", "long"}:
        return pa.int64()
    if pair <= {"int", "double"}:
        return pa.float64()
    if "decimal" in pair and pair <= {"int", "long", "decimal"}:
        wider = wider_decimal(a, b)
        integer, scale = (wider.precision, 0) if wider is not None else (MAX_DECIMAL_PRECISION, 0)
        return pa.decimal128(min(integer, MAX_DECIMAL_PRECISION), scale)
    if pair == {"date", "timestamp"}:
        return pa.timestamp("us", tz="UTC")
    return pa.string()


def _kind(t: pa.DataType) -> str:
    if t == pa.int32():
        return "int"
    if t == pa.int64():
        return "long"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_floating(t):
        return "double"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return "string"


def _raw_values(paths: Iterable[str], columns: Sequence[str]) -> dict[str, set[str]]:
    """The raw values of each partition column in the directories of ``paths`` (relative)."""
    wanted = {c.lower(): c for c in columns}
    found: dict[str, set[str]] = {c: set() for c in columns}
    directories = {path.rpartition("/")[0] for path in paths}
    for directory in directories:
        for part in directory.split("/") if directory else ():
            key, equals, raw = part.partition("=")
            column = wanted.get(unescape_path_name(key).lower()) if equals else None
            if column is not None and raw:
                found[column].add(raw)
    return found


def infer_partition_types(paths: Iterable[str], columns: Sequence[str]) -> dict[str, pa.DataType]:
    """The type Spark infers for each partition column from the lake's files ``paths``."""
    types = {}
    for column, raws in _raw_values(paths, columns).items():
        if not raws:
            continue
        inferred = pa.null()
        for raw in sorted(raws):
            inferred = _wider_partition_type(inferred, infer_partition_value(raw))
        types[column] = inferred
    return types
