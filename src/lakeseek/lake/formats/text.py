"""Text data files (CSV, JSON lines): no row groups and no footer, so opening one reads it whole,
and the types of its columns are inferred from every row (not only the first block, whose types
a later row could contradict)."""

from __future__ import annotations

from abc import abstractmethod

import pyarrow as pa

from lakeseek.lake.formats.base import DataFile, DataFormat

# pyarrow's block size is a 32-bit integer; files larger than this are inferred from their first 2 GiB.
LARGEST_BLOCK = 2**31 - 1
SMALLEST_BLOCK = 1 << 20
# Compressed files by extension, which Spark's readers and pyarrow's dataset reader both take.
# Not .zst (pyarrow 26's dataset reader misparses it) nor .lz4 (Hadoop's framing is not LZ4's):
# such a file stays unreadable, named in one line.
COMPRESSIONS = {"gz": "gzip", "bz2": "bz2"}
UNREAD_COMPRESSIONS = frozenset({"zst", "zstd", "lz4", "snappy", "deflate", "br", "lzo"})


class TextFile(DataFile):
    def __init__(self, table: pa.Table) -> None:
        self.table = table

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def read(self, columns: list[str]) -> pa.Table:
        return self.table.select(columns)


class TextFormat(DataFormat):
    def open(self, file: pa.NativeFile, path: str) -> TextFile:
        extension = path.rpartition(".")[2]
        if extension in UNREAD_COMPRESSIONS:
            raise pa.ArrowInvalid(f"compressed as .{extension}, which lakeseek does not read (.gz and .bz2 it does)")
        codec = COMPRESSIONS.get(extension)
        if codec is not None:
            file = pa.BufferReader(pa.CompressedInputStream(file, codec).read())
        block = min(LARGEST_BLOCK, max(SMALLEST_BLOCK, file.size() + 1))
        table = self.read_whole(file, block)
        names = table.schema.names
        twice = next((name for name in names if names.count(name) > 1), None)
        if twice is not None:
            raise pa.ArrowInvalid(f"the file names column '{twice}' twice")
        return TextFile(_in_microseconds(table))

    @abstractmethod
    def read_whole(self, file: pa.NativeFile, block_size: int) -> pa.Table:
        """Every row of ``file``, its column types inferred from ``block_size`` bytes."""


def _in_microseconds(table: pa.Table) -> pa.Table:
    """Timestamps in microseconds, as Spark holds them: whole seconds and nanoseconds (which
    pyarrow infers from text) would merge across files into nanoseconds, which end in 2262.
    A column with digits past the microsecond keeps its nanoseconds."""
    for position, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type) and field.type.unit != "us":
            try:
                column = table.column(position).cast(pa.timestamp("us", field.type.tz))
            except pa.ArrowInvalid:
                continue
            table = table.set_column(position, field.with_type(column.type), column)
    return table
