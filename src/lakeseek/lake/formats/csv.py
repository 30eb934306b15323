"""CSV data files with a header line, read as Spark's CSV reader with ``header`` and
``inferSchema`` reads them: an empty field, quoted or not, is NULL (no other text is: not
``NA``, ``null`` nor ``NaN``); a newline may sit inside a quoted value; a doubled quote inside
quotes is one quote (RFC 4180). Columns are typed and values read as Spark types and reads the
text (:mod:`lakeseek.lake.formats.spark_csv`); header names as Spark makes them safe (an empty
one is ``_c<position>``, one named twice in any case is suffixed with its position)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

from lakeseek.lake.formats import spark_csv
from lakeseek.lake.formats.base import register_format
from lakeseek.lake.formats.text import TextFormat

_PARSE = pacsv.ParseOptions(newlines_in_values=True)
_HEADER_BLOCK = 1 << 20


def _as_text(columns: int) -> pacsv.ConvertOptions:
    return pacsv.ConvertOptions(
        column_types={f"f{i}": pa.string() for i in range(columns)},
        null_values=[""],
        strings_can_be_null=True,
        quoted_strings_can_be_null=True,
    )


def _column_count(file: pa.NativeFile, block_size: int) -> int:
    for block in (min(block_size, _HEADER_BLOCK), block_size):
        file.seek(0)
        try:
            read = pacsv.ReadOptions(block_size=block, autogenerate_column_names=True)
            return len(pacsv.open_csv(file, read_options=read, parse_options=_PARSE).schema)
        except pa.ArrowInvalid:
            if block == block_size:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def safe_header(names: list[str | None]) -> list[str]:
    """Spark's ``CSVUtils.makeSafeHeader`` (case-insensitive, as Spark's default)."""
    lowered = [name.lower() for name in names if name]
    twice = {name for name in lowered if lowered.count(name) > 1}
    return [f"_c{i}" if not name else f"{name}{i}" if name.lower() in twice else name for i, name in enumerate(names)]


class CsvFormat(TextFormat):
    name = "csv"
    title = "CSV with a header line"

    def read_whole(self, file: pa.NativeFile, block_size: int) -> pa.Table:
        columns = _column_count(file, block_size)
        file.seek(0)
        read = pacsv.ReadOptions(block_size=block_size, autogenerate_column_names=True)
        table = pacsv.read_csv(file, read_options=read, parse_options=_PARSE, convert_options=_as_text(columns))
        header = [table.column(i)[0].as_py() for i in range(columns)] if table.num_rows else []
        return table.slice(1).rename_columns(safe_header(header)) if header else table.slice(0, 0)

    def infer(self, table: pa.Table) -> pa.Schema:
        # A column of NULLs stays NULL here, so that other files' values type it in the lake.
        return pa.schema(
            [
                pa.field(name, spark_csv.infer_type(column))
                for name, column in zip(table.column_names, table.columns, strict=True)
            ]
        )

    def convert(self, column: pa.ChunkedArray, to: pa.DataType) -> pa.Array:
        return spark_csv.convert(column, to)

    def common_type(self, a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
        return spark_csv.common_type(a, b)

    def spark_read(self, reader: Any, uris: list[str], *, floats_filtered: bool = True) -> Any:
        # enforceSchema off: Spark checks each file's header against the schema's names rather
        # than reading columns by position, so a file with its columns in another order fails
        # instead of reading wrong. The other options read the files as described above.
        options = {"header": "true", "enforceSchema": "false", "multiLine": "true", "escape": '"'}
        return reader.options(**options).csv(uris)


CSV = register_format(CsvFormat())
