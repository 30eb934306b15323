"""Text data files (CSV, JSON lines): no row groups and no footer, so opening one reads it whole,
and the types of its columns are inferred from every row (not only the first block, whose types
a later row could contradict). A file's values are read from what the format keeps of it
(:meth:`TextFormat.read_whole`) as the lake's types (:meth:`TextFormat.convert`): the same way
whether one file is read for an index or many for a query (:class:`TextDataset`)."""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from lakeseek.lake.formats.base import DataFile, DataFormat
from lakeseek.lake.rows import concat_rows

# pyarrow's block size is a 32-bit integer; files larger than this are inferred from their first 2 GiB.
LARGEST_BLOCK = 2**31 - 1
SMALLEST_BLOCK = 1 << 20
# Compressed files by extension, which Spark's readers and pyarrow's dataset reader both take.
# Not .zst (pyarrow 26's dataset reader misparses it) nor .lz4 (Hadoop's framing is not LZ4's):
# such a file stays unreadable, named in one line.
COMPRESSIONS = {"gz": "gzip", "bz2": "bz2"}
UNREAD_COMPRESSIONS = frozenset({"zst", "zstd", "lz4", "snappy", "deflate", "br", "lzo"})
_READERS = 8


class TextFile(DataFile):
    """A text file as its format keeps it (``table``), with the types inferred for its columns."""

    def __init__(self, table: pa.Table, data_format: TextFormat) -> None:
        self.table = table
        self._format = data_format

    @functools.cached_property
    def schema(self) -> pa.Schema:
        # Inferred when asked: a read under the lake's types needs only the file's text.
        return self._format.infer(self.table)

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def read(self, columns: list[str], types: Mapping[str, pa.DataType] | None = None) -> pa.Table:
        chosen = types or {}
        fields = [pa.field(name, chosen[name] if name in chosen else self.schema.field(name).type) for name in columns]
        arrays = [self._format.convert(self.table.column(field.name), field.type) for field in fields]
        return pa.table(arrays, schema=pa.schema(fields))


class TextFormat(DataFormat):
    def open(self, file: pa.NativeFile, path: str) -> TextFile:
        file, block = decompressed(file, path)
        table = self.read_whole(file, block)
        names = table.schema.names
        twice = next((name for name in names if names.count(name) > 1), None)
        if twice is not None:
            raise pa.ArrowInvalid(f"the file names column '{twice}' twice")
        return TextFile(table, self)

    def read_as(self, file: pa.NativeFile, path: str, schema: pa.Schema) -> pa.Table | None:
        """Every row of ``file`` with the columns of ``schema`` read as its types (NULL where the
        file lacks one), where the format reads them so in one pass; else None (then the file
        is opened and read as :meth:`TextFile.read` reads it)."""
        return None

    @abstractmethod
    def read_whole(self, file: pa.NativeFile, block_size: int) -> pa.Table:
        """Every row of ``file`` as the format keeps it, read ``block_size`` bytes at a time."""

    @abstractmethod
    def infer(self, table: pa.Table) -> pa.Schema:
        """The types of the columns of a file read whole (``table``)."""

    @abstractmethod
    def convert(self, column: pa.ChunkedArray, to: pa.DataType) -> pa.Array | pa.ChunkedArray:
        """A column of :meth:`read_whole`'s table read as type ``to``."""

    def dataset_format(self, schema: pa.Schema, *, local: bool = False) -> ds.FileFormat:
        return ds.CsvFileFormat()  # only names the files: TextDataset reads them

    def view(self, dataset: ds.FileSystemDataset) -> TextDataset:
        return TextDataset(dataset, self)

    def spark_reading_schema(self, schema: Any) -> Any:
        # A column no file holds a value of is NULL to lakeseek; Spark's text readers take no
        # NULL type (VOID) and infer such a column as STRING.
        from pyspark.sql.types import NullType, StringType, StructField, StructType

        return StructType(
            [
                StructField(f.name, StringType(), f.nullable, f.metadata) if isinstance(f.dataType, NullType) else f
                for f in schema.fields
            ]
        )


class TextDataset:
    """The part of a pyarrow dataset lakeseek uses (``schema``, ``to_table``, ``to_batches``,
    ``get_fragments``), over text files: each read whole as the dataset's types, with its
    partition values, then filtered and projected."""

    def __init__(self, dataset: ds.FileSystemDataset, data_format: TextFormat) -> None:
        self.schema = dataset.schema
        self.files = dataset.files
        self._fragments = list(dataset.get_fragments())
        self._format = data_format

    def get_fragments(self, filter=None) -> Iterator[ds.Fragment]:
        return iter(self._fragments)

    def _read(self, fragment: ds.Fragment) -> pa.Table:
        partition = ds.get_partition_keys(fragment.partition_expression)
        data = pa.schema([field for field in self.schema if field.name not in partition])
        with fragment.filesystem.open_input_file(fragment.path) as file:
            table = self._format.read_as(file, fragment.path, data)
        if table is None:
            # Opened again: the decompressing stream of a .gz or .bz2 file closed the first.
            with fragment.filesystem.open_input_file(fragment.path) as file:
                opened = self._format.open(file, fragment.path)
            present = set(opened.table.column_names)
            stored = [field.name for field in data if field.name in present]
            table = opened.read(stored, {name: data.field(name).type for name in stored})
        stored = table.column_names
        rows = table.num_rows
        columns = []
        for field in self.schema:
            if field.name in stored:
                columns.append(table.column(field.name))
            else:  # a partition value (NULL where the path has none), or a column the file lacks
                columns.append(pa.array([partition.get(field.name)] * rows, field.type))
        return pa.table(columns, schema=self.schema)

    def to_table(self, columns=None, filter=None, **kwargs: Any) -> pa.Table:
        if len(self._fragments) > 1:
            with ThreadPoolExecutor(min(_READERS, len(self._fragments))) as pool:
                tables = list(pool.map(self._read, self._fragments))
        else:
            tables = [self._read(fragment) for fragment in self._fragments]
        table = concat_rows(tables) if tables else self.schema.empty_table()
        if filter is not None:
            table = table.filter(filter)
        return table if columns is None else table.select(list(columns))

    def to_batches(self, columns=None, filter=None, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        yield from self.to_table(columns=columns, filter=filter).to_batches()

    def count_rows(self, filter=None) -> int:
        return self.to_table(filter=filter).num_rows


def decompressed(file: pa.NativeFile, path: str) -> tuple[pa.NativeFile, int]:
    """The file's text, decompressed as its extension says, and the block size to read it whole."""
    extension = path.rpartition(".")[2]
    if extension in UNREAD_COMPRESSIONS:
        raise pa.ArrowInvalid(f"compressed as .{extension}, which lakeseek does not read (.gz and .bz2 it does)")
    codec = COMPRESSIONS.get(extension)
    if codec is not None:
        file = pa.BufferReader(pa.CompressedInputStream(file, codec).read())
    return file, min(LARGEST_BLOCK, max(SMALLEST_BLOCK, file.size() + 1))
