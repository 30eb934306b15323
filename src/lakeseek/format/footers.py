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
"""

from __future__ import annotations

import io
import uuid
import zlib
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

FOOTER_READ = 64 * 1024  # the tail read first for a footer (most fit)
TRAILER = 8  # the footer's length (4 bytes, little-endian) and "PAR1"


FILE_ID_KEY = "lakeseek.file"


def unique_footer() -> dict[str, str]:
    """Key-value metadata that makes a new index file's footer its own."""
    return {FILE_ID_KEY: uuid.uuid4().hex}


def parquet_bytes(table: pa.Table, row_group_size: int | None = None, **options) -> bytes:
    """``table`` as a Parquet file with a footer of its own (:func:`unique_footer`);
    ``options`` are :class:`pyarrow.parquet.ParquetWriter`'s."""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema, **options) as writer:
        writer.write_table(table, row_group_size=row_group_size)
        writer.add_key_value_metadata(unique_footer())
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
