"""Typed key values: which Arrow types can be indexed, and their JSON form in the root.

Index keys are kept as Python values of one kind per column (int, str, bytes, bool,
Decimal) so the root's and chunks' key ranges compare with ``<``; ``None`` (SQL NULL)
sorts first, as in the index files. Dates and timestamps are their Arrow storage values
(days, microseconds since 1970-01-01 UTC): Python's ``date`` and ``datetime`` stop at years
1 and 9999, and Spark's dates and timestamps do not.
"""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa

from lakeseek.exceptions import IndexCorruptError, UnsupportedColumnError

KeyValue = int | str | bytes | bool | Decimal | None
_EPOCH = dt.date(1970, 1, 1)


def key_type_for(arrow_type: pa.DataType, column: str) -> pa.DataType:
    """The Arrow type index files store ``column``'s keys as, or UnsupportedColumnError."""
    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return arrow_type
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return pa.string()
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return pa.binary()
    if pa.types.is_fixed_size_binary(arrow_type):
        return pa.binary()
    if pa.types.is_date(arrow_type):
        return pa.date32()
    if pa.types.is_timestamp(arrow_type):
        return pa.timestamp("us", tz="UTC" if arrow_type.tz else None)
    if pa.types.is_decimal(arrow_type):
        return arrow_type
    if pa.types.is_dictionary(arrow_type):
        return key_type_for(arrow_type.value_type, column)
    if pa.types.is_floating(arrow_type):
        raise UnsupportedColumnError(
            f"column '{column}' is {arrow_type}: floating-point columns cannot be indexed "
            "(equality on floats is unreliable); index an integer, decimal or string column"
        )
    raise UnsupportedColumnError(
        f"column '{column}' has type {arrow_type}, which lakeseek cannot index "
        "(supported: integers, strings, binary, booleans, dates, timestamps, decimals)"
    )


def is_temporal_key(key_type: pa.DataType) -> bool:
    return pa.types.is_date(key_type) or pa.types.is_timestamp(key_type)


def key_of(value: pa.Scalar, key_type: pa.DataType) -> KeyValue:
    """A value of the column (an Arrow scalar) as an index key of ``key_type``."""
    if not value.is_valid:
        return None
    if is_temporal_key(key_type):
        # Unsafe: a nanosecond value drops its nanoseconds, as the build's keys do.
        return value.cast(key_type, safe=False).value
    return pa.scalar(value.as_py(), type=key_type).as_py()


def keys_of(keys: pa.Array | pa.ChunkedArray) -> list[KeyValue]:
    """The keys of an array of ``key_type`` values, as Python key values."""
    if is_temporal_key(keys.type):
        return keys.cast(pa.int32() if pa.types.is_date32(keys.type) else pa.int64()).to_pylist()
    return keys.to_pylist()


def sort_key(value: KeyValue) -> tuple:
    """Order of keys in index files: NULL first, then the values' natural order."""
    return (0,) if value is None else (1, value)


def encode(value: KeyValue, key_type: pa.DataType) -> Any:
    """The JSON form of a key (exact for every supported type)."""
    if value is None:
        return None
    if pa.types.is_binary(key_type):
        return base64.b64encode(value).decode("ascii")
    if pa.types.is_decimal(key_type):
        return str(value)
    return value


def decode(raw: Any, key_type: pa.DataType) -> KeyValue:
    """Inverse of :func:`encode`."""
    if raw is None:
        return None
    try:
        if pa.types.is_binary(key_type):
            return base64.b64decode(raw)
        if pa.types.is_date(key_type) and isinstance(raw, str):  # format 4 and before: ISO dates
            return (dt.date.fromisoformat(raw) - _EPOCH).days
        if pa.types.is_decimal(key_type):
            return Decimal(raw)
        if pa.types.is_boolean(key_type):
            if not isinstance(raw, bool):
                raise TypeError(raw)
            return raw
        if pa.types.is_integer(key_type) or is_temporal_key(key_type):
            if not isinstance(raw, int) or isinstance(raw, bool):
                raise TypeError(raw)
            return raw
        if not isinstance(raw, str):
            raise TypeError(raw)
        return raw
    except (TypeError, ValueError, ArithmeticError, pa.ArrowException) as error:  # decimal.InvalidOperation
        raise IndexCorruptError(f"index root holds a key {raw!r} that is not a {key_type}") from error


def serialize_type(key_type: pa.DataType) -> str:
    """An exact, engine-neutral serialisation of an Arrow type (base64 of an Arrow IPC schema)."""
    return base64.b64encode(pa.schema([pa.field("key", key_type)]).serialize().to_pybytes()).decode()


def deserialize_type(text: str) -> pa.DataType:
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text))).field("key").type
    except (ValueError, pa.ArrowException) as error:
        raise IndexCorruptError("index root holds an unreadable key type") from error


def serialize_schema(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def deserialize_schema(text: str) -> pa.Schema:
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))
    except (ValueError, pa.ArrowException) as error:
        raise IndexCorruptError("index root holds an unreadable lake schema") from error
