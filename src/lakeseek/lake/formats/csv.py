"""CSV data files with a header line, read as Spark's CSV reader with ``header`` and
``inferSchema`` reads them: an empty field, quoted or not, is NULL (no other text is: not
``NA``, ``null`` nor ``NaN``); a newline may sit inside a quoted value; a doubled quote inside
quotes is one quote (RFC 4180). Columns are typed and values read as Spark types and reads the
text (:mod:`lakeseek.lake.formats.spark_csv`); header names as Spark makes them safe (an empty
one is ``_c<position>``, one named twice in any case is suffixed with its position)."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from lakeseek.lake.formats import spark_csv
from lakeseek.lake.formats.base import register_format
from lakeseek.lake.formats.text import TextFormat, decompressed

_PARSE = pacsv.ParseOptions(newlines_in_values=True)
# Blocks tried for the header line: small first (a block is parsed whole), larger if it is longer.
_HEADER_BLOCKS = (1 << 14, 1 << 20)
# RFC 4180 quoting: a quoted field ends at its delimiter or line end; an unquoted one may hold
# quotes after its first character (read as written by Spark and Arrow alike).
_FIELD = rb'(?>"(?:[^"]|"")*+"|[^,"\r\n][^,\r\n]*+|)'
_WELL_QUOTED = re.compile(rb"(?:" + _FIELD + rb"(?:," + _FIELD + rb")*+(?:\r\n|\n|\r|\Z))*+\Z")
_ARROW_READS = (pa.int32(), pa.int64(), pa.float64(), pa.string(), pa.date32(), pa.timestamp("us", tz="UTC"))


def _converted(types: dict[str, pa.DataType]) -> pacsv.ConvertOptions:
    return pacsv.ConvertOptions(
        column_types=types, null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=True
    )


def _as_text(columns: int) -> pacsv.ConvertOptions:
    return _converted({f"f{i}": pa.string() for i in range(columns)})


def _start(file: pa.NativeFile, block_size: int) -> tuple[list[str | None], pa.Table, bool]:
    """The fields of the file's first line (its header) as written, the rows of text after it
    in the file's first block (columns ``f0``, ``f1``, ...), and whether that line ends in CRLF."""
    for block in (*(min(block_size, b) for b in _HEADER_BLOCKS), block_size):
        # Parsed from a copy of the file's start: Arrow's streaming reader reads ahead in a
        # thread, which would move the file's position under the next read.
        file.seek(0)
        data = file.read(block)
        whole = len(data) < block or file.tell() == file.size()
        if not whole:  # up to the last line's end: a row cut by the block is a malformed one
            data = data[: data.rfind(b"\n") + 1]
        try:
            read = pacsv.ReadOptions(block_size=max(len(data), 1), autogenerate_column_names=True, use_threads=False)
            columns = len(pacsv.open_csv(pa.BufferReader(data), read_options=read, parse_options=_PARSE).schema)
            text = pacsv.read_csv(
                pa.BufferReader(data), read_options=read, parse_options=_PARSE, convert_options=_as_text(columns)
            )
        except pa.ArrowInvalid:
            if whole:
                raise
            continue
        if text.num_rows > 1 or whole:  # a second row began: the first one ended inside the block
            header = [text.column(i)[0].as_py() for i in range(columns)] if text.num_rows else []
            first_line = data.split(b"\n", 1)[0]
            return header, text.slice(1), first_line.endswith(b"\r")
    raise AssertionError("unreachable")  # pragma: no cover


def _timestamp_as_written(sample: pa.ChunkedArray) -> pa.DataType:
    """The type Arrow reads a timestamp column as, by its first values: an instant where each
    names its zone, a wall clock (then read in UTC, as the session) where none does, else text."""
    zoned = pc.match_substring_regex(sample.drop_null(), rf"{spark_csv.ISO_OFFSET}$")
    if pc.all(zoned).as_py():
        return spark_csv.TIMESTAMP
    return pa.timestamp("us") if not pc.any(zoned).as_py() else pa.string()


def safe_header(names: list[str | None]) -> list[str]:
    """Spark's ``CSVUtils.makeSafeHeader`` (case-insensitive, as Spark's default)."""
    lowered = [name.lower() for name in names if name]
    twice = {name for name in lowered if lowered.count(name) > 1}
    return [f"_c{i}" if not name else f"{name}{i}" if name.lower() in twice else name for i, name in enumerate(names)]


class CsvFormat(TextFormat):
    name = "csv"
    title = "CSV with a header line"

    def read_whole(self, file: pa.NativeFile, block_size: int) -> pa.Table:
        file.seek(0)
        data = file.read()
        if b'"' in data and not _WELL_QUOTED.fullmatch(data):
            raise pa.ArrowInvalid(
                "a quoted value is followed by other text before its delimiter (or holds a lone quote): "
                "Spark keeps such a value as written, which lakeseek's reader does not"
            )
        return self._read_body(file, block_size, {})

    def read_as(self, file: pa.NativeFile, path: str, schema: pa.Schema) -> pa.Table | None:
        # Arrow's reader reads these types straight from the text where every value is one
        # Java reads the same (else it refuses the file, which is then read as text).
        file, block = decompressed(file, path)
        try:
            table = self._read_body(file, block, {f.name: f.type for f in schema if f.type in _ARROW_READS})
        except pa.ArrowInvalid:
            return None
        columns = []
        for field in schema:
            if field.name not in table.column_names:
                columns.append(pa.nulls(table.num_rows, field.type))
                continue
            column = table.column(field.name)
            if not pa.types.is_string(column.type):  # Arrow's (a timestamp without a zone is in UTC)
                columns.append(column.cast(field.type))
            else:
                columns.append(column if field.type == pa.string() else self.convert(column, field.type))
        return pa.table(columns, schema=schema)

    def _read_body(self, file: pa.NativeFile, block_size: int, types: dict[str, pa.DataType]) -> pa.Table:
        """The rows after the header, columns named as Spark names them, those of ``types`` read
        by Arrow (a timestamp as the first block writes it: with or without a zone, else as text)
        and the others as text."""
        written, sample, crlf = _start(file, block_size)
        names = safe_header(written)
        for position, name in enumerate(names):
            if types.get(name) == spark_csv.TIMESTAMP:
                types = {**types, name: _timestamp_as_written(sample.column(position))}
        # Arrow names the columns as the header writes them: one written twice is read as text.
        typed = {
            raw or "": types.get(name, pa.string()) if written.count(raw) == 1 else pa.string()
            for raw, name in zip(written, names, strict=True)
        }
        file.seek(0)
        # Every column's type is given, so blocks of Arrow's default size (parsed in parallel) infer nothing.
        table = pacsv.read_csv(file, parse_options=_PARSE, convert_options=_converted(typed)).rename_columns(names)
        if not crlf:
            return table
        # A file whose lines end in CRLF: Spark's parser makes a CRLF inside quotes a newline too.
        for position, column in enumerate(table.columns):
            if pa.types.is_string(column.type):
                table = table.set_column(position, names[position], pc.replace_substring(column, "\r\n", "\n"))
        return table

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

    def spark_read(self, reader: Any, uris: list[str], *, statistics_unsafe: bool = True) -> Any:
        # enforceSchema off: Spark checks each file's header against the schema's names rather
        # than reading columns by position, so a file with its columns in another order fails
        # instead of reading wrong. The other options read the files as described above.
        options = {"header": "true", "enforceSchema": "false", "multiLine": "true", "escape": '"'}
        return reader.options(**options).csv(uris)


CSV = register_format(CsvFormat())
