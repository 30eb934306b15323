"""CSV data files with a header line, read as Spark's CSV reader with ``header`` reads them: an
empty field, quoted or not, is NULL (no other text is: not ``NA``, ``null`` nor ``NaN``); a
newline may sit inside a quoted value; a doubled quote inside quotes is one quote (RFC 4180).
A column of times of day is text, as Spark infers it."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds

from lakeseek.lake.formats.base import register_format
from lakeseek.lake.formats.text import TextFormat

_PARSE = pacsv.ParseOptions(newlines_in_values=True)


def _convert_options(column_types: dict[str, pa.DataType] | None = None) -> pacsv.ConvertOptions:
    return pacsv.ConvertOptions(
        column_types=column_types, null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=True
    )


class CsvFormat(TextFormat):
    name = "csv"
    title = "CSV with a header line"

    def read_whole(self, file: pa.NativeFile, block_size: int) -> pa.Table:
        read = pacsv.ReadOptions(block_size=block_size)
        table = pacsv.read_csv(file, read_options=read, parse_options=_PARSE, convert_options=_convert_options())
        times = {field.name: pa.string() for field in table.schema if pa.types.is_time(field.type)}
        if not times:
            return table
        file.seek(0)
        return pacsv.read_csv(file, read_options=read, parse_options=_PARSE, convert_options=_convert_options(times))

    def dataset_format(self, schema: pa.Schema, *, local: bool = False) -> ds.CsvFileFormat:
        # The lake's types, not each block's inference: a later row never contradicts the first ones.
        return ds.CsvFileFormat(
            parse_options=_PARSE, convert_options=_convert_options({field.name: field.type for field in schema})
        )

    def spark_read(self, reader: Any, uris: list[str], *, floats_filtered: bool = True) -> Any:
        # enforceSchema off: Spark checks each file's header against the schema's names rather
        # than reading columns by position, so a file with its columns in another order fails
        # instead of reading wrong. The other options read the files as described above.
        options = {"header": "true", "enforceSchema": "false", "multiLine": "true", "escape": '"'}
        return reader.options(**options).csv(uris)


CSV = register_format(CsvFormat())
