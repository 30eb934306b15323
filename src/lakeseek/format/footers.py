"""Parquet footers an index's root vouches for by their crc32.

A Parquet footer carries no checksum of its own, and a damaged one that still parses can
make the Parquet reader fail deep inside its C++ code, where an error ends the process (seen:
one flipped bit in a row file's footer, "Definition level histogram size mismatch", an abort).
So the root records the crc32 of each index file's footer with its 8-byte trailer, and a
footer is parsed only once its bytes are the ones written.

The crc32 also binds the root to the file: every index file's footer holds a random id
(:func:`unique_footer`), so another file put in its place (an older file of the index, one
of another lake) fails the check even where its content has the same shape, and an equal
footer.

A process keeps the footers it read and reads row groups later, decoding them with the footer
it kept: a file put in place since would be decoded as if it were the one read. So a file read
by row groups also holds its id in each row group (:class:`FileStamp`): a last column, the id
in a dictionary page stored uncompressed, which a reader finds in the bytes it read for the row
group (:func:`check_stamp`) without decoding it, at the cost of about 100 bytes per row group.
"""

from __future__ import annotations

import io
import uuid
import zlib
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakeseek.exceptions import IndexCorruptError

FOOTER_READ = 64 * 1024  # the tail read first for a footer (most fit)
TRAILER = 8  # the footer's length (4 bytes, little-endian) and "PAR1"


FILE_ID_KEY = "lakeseek.file"
FILE_COLUMN = "__lakeseek_file"  # a stamped file's id on every row (FileStamp)
_FILE_COLUMN_FIELD = pa.field(FILE_COLUMN, pa.dictionary(pa.int8(), pa.string()), nullable=False)


def unique_footer() -> dict[str, str]:
    """Key-value metadata that makes a new index file's footer its own."""
    return {FILE_ID_KEY: uuid.uuid4().hex}


class FileStamp:
    """The id of an index file about to be written: in its footer (``footer``, the key-value
    metadata to add) and in each of its row groups (``on`` each table written, ``options``
    for the writer)."""

    def __init__(self) -> None:
        self.footer = unique_footer()
        self._ids = pa.array([self.footer[FILE_ID_KEY]])

    @staticmethod
    def schema(schema: pa.Schema) -> pa.Schema:
        return schema.append(_FILE_COLUMN_FIELD)

    @staticmethod
    def options(schema: pa.Schema, compression: str, use_dictionary: list[str] | None = None) -> dict:
        """Writer options for a stamped ``schema``: ``compression`` for its columns, none for the
        id (found in the bytes as written), which is dictionary-encoded."""
        return {
            "compression": {name: compression for name in schema.names} | {FILE_COLUMN: "none"},
            "use_dictionary": [*(schema.names if use_dictionary is None else use_dictionary), FILE_COLUMN],
        }

    def on(self, table: pa.Table) -> pa.Table:
        """``table`` with the file's id on every row."""
        ids = pa.DictionaryArray.from_arrays(pa.array(np.zeros(table.num_rows, np.int8)), self._ids)
        return table.append_column(_FILE_COLUMN_FIELD, ids)


def stamp_chunk(footer: pq.FileMetaData, row_group: int) -> tuple[int, int]:
    """Where the id column's chunk of ``row_group`` lies in a stamped file: [start, end)."""
    chunk = footer.row_group(row_group).column(footer.num_columns - 1)
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    return start, start + chunk.total_compressed_size


def is_stamped(footer: pq.FileMetaData) -> bool:
    """Whether a footer is of a stamped file (its last column the id, its metadata the id)."""
    last = footer.schema.column(footer.num_columns - 1)
    return last.path == FILE_COLUMN and FILE_ID_KEY.encode() in (footer.metadata or {})


def check_stamp(footer: pq.FileMetaData, row_group: int, start: int, data: bytes, path: str) -> None:
    """IndexCorruptError unless ``data``, read from the stamped file ``path`` at ``start`` and
    holding ``row_group``'s id chunk, holds the id of the file whose footer this is: a file put
    in place since the footer was read would be decoded with it."""
    low, high = stamp_chunk(footer, row_group)
    if footer.metadata[FILE_ID_KEY.encode()] not in data[low - start : high - start]:
        raise IndexCorruptError(
            f"the index file {path} changed after its footer was read: another file was put in its place"
        )


def parquet_bytes(table: pa.Table, row_group_size: int | None = None, **options) -> bytes:
    """``table`` as a Parquet file with a footer of its own (:func:`unique_footer`);
    ``options`` are :class:`pyarrow.parquet.ParquetWriter`'s."""
    return _written(table, row_group_size, unique_footer(), options)


def stamped_parquet_bytes(table: pa.Table, row_group_size: int, compression: str) -> bytes:
    """``table`` as a stamped Parquet file (:class:`FileStamp`), pages checksummed."""
    stamp = FileStamp()
    options = FileStamp.options(table.schema, compression)
    return _written(stamp.on(table), row_group_size, stamp.footer, {**options, "write_page_checksum": True})


def _written(table: pa.Table, row_group_size: int | None, footer: dict[str, str], options: dict) -> bytes:
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema, **options) as writer:
        writer.write_table(table, row_group_size=row_group_size)
        writer.add_key_value_metadata(footer)
    return sink.getvalue().to_pybytes()


def footer_crc32(data: bytes) -> int:
    """The crc32 of a whole Parquet file's footer and trailer (``data``: the file's bytes)."""
    length = int.from_bytes(data[-TRAILER:-4], "little")
    return zlib.crc32(data[-length - TRAILER :])


def read_checked_footer(read_range: Callable[[int, int], bytes], size: int, crc32: int) -> pq.FileMetaData:
    """The footer of a Parquet file of ``size`` bytes whose footer and trailer have this crc32,
    read with ``read_range(offset, length)`` (one read, two for a footer over FOOTER_READ); an
    OSError saying why when the file does not hold it."""
    tail = read_range(max(size - FOOTER_READ, 0), min(FOOTER_READ, size))
    if len(tail) != min(FOOTER_READ, size):
        raise OSError(f"shorter than the {size} bytes the root says")
    length = int.from_bytes(tail[-TRAILER:-4], "little")
    if tail[-4:] != b"PAR1" or length + TRAILER > size:
        raise OSError("no Parquet footer")
    if length + TRAILER > len(tail):
        tail = read_range(size - length - TRAILER, length + TRAILER)
    footer = tail[-length - TRAILER :]
    if zlib.crc32(footer) != crc32:
        raise OSError("its footer is not the one written (crc32)")
    return pq.read_metadata(io.BytesIO(b"PAR1" + footer))
