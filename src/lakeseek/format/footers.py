"""Parquet footers an index's root vouches for by their crc32.

A Parquet footer carries no checksum of its own, and a damaged one that still parses can
make the Parquet reader fail deep inside its C++ code, where an error ends the process (seen:
one flipped bit in a row file's footer, "Definition level histogram size mismatch", an abort).
So the root records the crc32 of each index file's footer with its 8-byte trailer, and a
footer is parsed only once its bytes are the ones written.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable

import pyarrow.parquet as pq

FOOTER_READ = 64 * 1024  # the tail read first for a footer (most fit)
TRAILER = 8  # the footer's length (4 bytes, little-endian) and "PAR1"


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
