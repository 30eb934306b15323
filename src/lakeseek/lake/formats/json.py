"""JSON lines data files (one object per line), as pyarrow reads them: a field absent from an
object is NULL, fields no file's schema has are ignored. Text stays text, as Spark's JSON
reader infers it (pyarrow would take text shaped as a timestamp for one)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.json as pajson

from lakeseek.lake.formats.base import register_format
from lakeseek.lake.formats.text import TextFormat, in_microseconds


def _timestamps_as_text(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct([field.with_type(_timestamps_as_text(field.type)) for field in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field.with_type(_timestamps_as_text(t.value_type))
        return pa.list_(item) if pa.types.is_list(t) else pa.large_list(item)
    return t


class JsonFormat(TextFormat):
    name = "json"
    title = "JSON lines"

    def read_whole(self, file: pa.NativeFile, block_size: int) -> pa.Table:
        # newlines_in_values: pyarrow 26's default chunker reads a file of one object and no
        # newline at its end as one row of NULLs; this one also takes an object over several lines.
        read = pajson.ReadOptions(block_size=block_size)
        table = pajson.read_json(file, read_options=read, parse_options=pajson.ParseOptions(newlines_in_values=True))
        text = pa.schema([field.with_type(_timestamps_as_text(field.type)) for field in table.schema])
        if text.equals(table.schema):
            return in_microseconds(table)
        file.seek(0)
        parse = pajson.ParseOptions(explicit_schema=text, newlines_in_values=True)
        return pajson.read_json(file, read_options=read, parse_options=parse)

    def infer(self, table: pa.Table) -> pa.Schema:
        return table.schema

    def convert(self, column: pa.ChunkedArray, to: pa.DataType) -> pa.ChunkedArray:
        return column if column.type.equals(to) else column.cast(to)

    def common_type(self, a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
        # Spark's JSON inference merges whole numbers and fractions into DOUBLE.
        if {a, b} == {pa.int64(), pa.float64()}:
            return pa.float64()
        return super().common_type(a, b)

    def spark_read(self, reader: Any, uris: list[str], *, floats_filtered: bool = True) -> Any:
        return reader.json(uris)


JSON = register_format(JsonFormat())
