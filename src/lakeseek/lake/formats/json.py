"""JSON lines data files (one object per line), as pyarrow reads them: a field absent from an
object is NULL, fields no file's schema has are ignored. Text stays text, as Spark's JSON
reader infers it (pyarrow would take text shaped as a timestamp for one)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from lakeseek.lake.formats.base import register_format
from lakeseek.lake.formats.text import TextFormat, decompressed


def _timestamps_as_text(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct([field.with_type(_timestamps_as_text(field.type)) for field in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field.with_type(_timestamps_as_text(t.value_type))
        return pa.list_(item) if pa.types.is_list(t) else pa.large_list(item)
    return t


def _past_bigint(column: pa.ChunkedArray) -> bool:
    """Whether a DOUBLE column pyarrow inferred holds a value past BIGINT: the only case where
    its numbers may all be whole, which Spark types as a DECIMAL instead."""
    bounds = pc.min_max(column)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    return low is not None and (low <= -(2.0**63) or high >= 2.0**63)  # -2**63 - 1 rounds to -2**63


def _nested_past_bigint(column: pa.ChunkedArray | pa.Array) -> bool:
    """Whether a struct or list column holds a DOUBLE past BIGINT at any depth."""
    t = column.type
    if pa.types.is_struct(t):
        children = [pc.struct_field(column, [i]) for i in range(t.num_fields)]
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        children = [pc.list_flatten(column)]
    else:
        return False
    return any(
        _past_bigint(child) if pa.types.is_float64(child.type) else _nested_past_bigint(child) for child in children
    )


def _whole_number_type(file: pa.NativeFile, name: str) -> pa.DataType:
    """Spark's JSON type of the numbers of top-level field ``name``: DOUBLE if one has a
    fraction or an exponent, else DECIMAL(p, 0) of the most digits (at least 20 where one
    fits a BIGINT; DOUBLE past 38)."""
    file.seek(0)
    text = file.read().decode()
    decoder = json.JSONDecoder(parse_int=lambda token: ("whole", token), parse_float=lambda token: ("fraction", token))
    digits, fits, fraction = [0], False, False
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            break
        value, position = decoder.raw_decode(text, position)
        number = value.get(name) if isinstance(value, dict) else None
        if isinstance(number, tuple):
            kind, token = number
            fraction = fraction or kind == "fraction"
            digits.append(len(token.lstrip("-")))
            fits = fits or (kind == "whole" and -(2**63) <= int(token) < 2**63)
    precision = max(*digits, 20 if fits else 0)
    return pa.float64() if fraction or precision > 38 else pa.decimal128(precision, 0)


class JsonFormat(TextFormat):
    name = "json"
    title = "JSON lines"

    def read_whole(self, file: pa.NativeFile, block_size: int) -> pa.Table:
        # newlines_in_values: pyarrow 26's default chunker reads a file of one object and no
        # newline at its end as one row of NULLs; this one also takes an object over several lines.
        read = pajson.ReadOptions(block_size=block_size)
        table = pajson.read_json(file, read_options=read, parse_options=pajson.ParseOptions(newlines_in_values=True))
        file.seek(0)
        lines = sum(1 for line in file.read().split(b"\n") if line.strip())
        if lines != table.num_rows:
            raise pa.ArrowInvalid(
                f"{lines} lines hold {table.num_rows} objects: an object over several lines is a corrupt record "
                "to Spark's JSON lines reader, which lakeseek does not read"
            )
        spark = pa.schema([field.with_type(_timestamps_as_text(field.type)) for field in table.schema])
        for position, field in enumerate(spark):
            if pa.types.is_float64(field.type) and _past_bigint(table.column(position)):
                spark = spark.set(position, field.with_type(_whole_number_type(file, field.name)))
            elif _nested_past_bigint(table.column(position)):
                raise pa.ArrowInvalid(
                    f"field '{field.name}' holds a number past BIGINT inside a nested value, which Spark reads "
                    "as a DECIMAL if it is whole and pyarrow as a DOUBLE: lakeseek cannot read it as Spark does"
                )
        if spark.equals(table.schema):
            return table
        file.seek(0)
        parse = pajson.ParseOptions(explicit_schema=spark, newlines_in_values=True)
        return pajson.read_json(file, read_options=read, parse_options=parse)

    def read_as(self, file: pa.NativeFile, path: str, schema: pa.Schema) -> pa.Table:
        file, block = decompressed(file, path)
        options = pajson.ParseOptions(
            explicit_schema=schema, unexpected_field_behavior="ignore", newlines_in_values=True
        )
        return pajson.read_json(file, read_options=pajson.ReadOptions(block_size=block), parse_options=options)

    def infer(self, table: pa.Table) -> pa.Schema:
        return table.schema

    def convert(self, column: pa.ChunkedArray, to: pa.DataType) -> pa.ChunkedArray:
        return column if column.type.equals(to) else column.cast(to)

    def common_type(self, a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
        # Spark's JSON inference merges whole numbers and fractions into DOUBLE.
        if {a, b} == {pa.int64(), pa.float64()}:
            return pa.float64()
        return super().common_type(a, b)

    def spark_read(self, reader: Any, uris: list[str], *, statistics_unsafe: bool = True) -> Any:
        return reader.json(uris)


JSON = register_format(JsonFormat())
