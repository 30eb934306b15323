"""Rows and results as text, the same for every front end (the command line, the service):
JSON lines, CSV and JSON values (binary as base64, decimals as strings, dates and times in
ISO 8601), and Arrow IPC streams."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import math
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pyarrow as pa


def text(value: Any) -> str:
    """A value as CSV and tables show it: Spark's words for booleans, NaN and the infinities,
    and a list, struct or map as its JSON (as the JSON lines show it), never Python's repr."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return json_value(value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(json_value(value), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return str(value)


def json_value(value: Any) -> Any:
    """A value as JSON holds it (NaN and the infinities, which JSON has no number for, as the
    strings Spark's JSON writer gives them: "NaN", "Infinity", "-Infinity")."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_value(dataclasses.asdict(value))
    if hasattr(value, "value") and hasattr(value, "name"):  # an enum member
        return json_value(value.value)
    return text(value)


def python_rows(table: pa.Table) -> Iterator[dict[str, Any]]:
    """The rows as Python values; a column holding a date or time Python cannot (a year past
    9999) as Arrow's text of its values."""
    columns = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        try:
            columns[name] = column.to_pylist()
        except (OverflowError, ValueError):
            columns[name] = column.cast(pa.string()).to_pylist()
    names = list(columns)
    for values in zip(*columns.values(), strict=True):
        yield dict(zip(names, values, strict=True))


def json_lines(table: pa.Table) -> Iterator[str]:
    """One JSON object per row, each ending with a newline."""
    for row in python_rows(table):
        yield json.dumps({k: json_value(v) for k, v in row.items()}, ensure_ascii=False, allow_nan=False) + "\n"


def csv_text(table: pa.Table) -> Iterator[str]:
    """A header line, then one line per row (RFC 4180): NULL an empty field, an empty string
    ``""`` (as Spark writes them, so that the two read back apart)."""
    lines = [_csv_line(table.column_names)]
    size = len(lines[0])
    for row in python_rows(table):
        lines.append(_csv_line([None if v is None else text(v) for v in row.values()]))
        size += len(lines[-1])
        if size > 1 << 16:
            yield "".join(lines)
            lines, size = [], 0
    yield "".join(lines)


def _csv_line(fields: list[str | None]) -> str:
    return ",".join("" if field is None else _csv_field(field) for field in fields) + "\n"


def _csv_field(field: str) -> str:
    if field == "" or any(c in field for c in ',"\n\r'):
        return '"' + field.replace('"', '""') + '"'
    return field


def arrow_stream(table: pa.Table) -> bytes:
    """``table`` as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()
