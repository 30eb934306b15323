"""Increment filters: the bloom filters of every increment index file of a version, in one Parquet file.

Each increment's index file also carries its bloom filter in its footer, but a cold lookup
would then read one footer per increment just to learn that most cannot hold the value.
This file gathers them (``path``, ``bloom``), so a cold lookup reads it once and then only
the increments whose filter matches. A commit that changes the increments writes a new one,
``data/<operation>/filters-<crc32>-<size>.parquet``: named after its checksum and size
(:mod:`lakeseek.format.sealed`), which binds it to its root.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from lakeseek.exceptions import IndexCorruptError
from lakeseek.format.bloom import BloomFilter
from lakeseek.format.sealed import check_sealed, index_path, sealed_name
from lakeseek.io import Storage
from lakeseek.kinds.base import OperationFiles

SCHEMA = pa.schema([pa.field("path", pa.string(), nullable=False), pa.field("bloom", pa.binary(), nullable=False)])


@dataclass(frozen=True)
class FiltersRef:
    path: str
    size: int

    def to_json(self) -> dict:
        return {"path": self.path, "size": self.size}

    @classmethod
    def from_json(cls, raw: dict | None) -> FiltersRef | None:
        return None if raw is None else cls(index_path(raw["path"]), int(raw["size"]))


def write_filters(files: OperationFiles, blooms: dict[str, bytes]) -> FiltersRef:
    """Write the filters of the operation's index; the reference holds the path relative to its directory."""
    table = pa.table([list(blooms), list(blooms.values())], schema=SCHEMA)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", write_page_checksum=True)
    data = sink.getvalue().to_pybytes()
    path = f"{files.data_dir}/{sealed_name('filters', data)}"
    files.storage.write(f"{files.index_dir}/{path}", data)
    return FiltersRef(path, len(data))


def read_filter_bytes(storage: Storage, path: str) -> dict[str, bytes]:
    try:
        data = storage.read(path)
    except FileNotFoundError as error:
        raise IndexCorruptError(f"increment filter file {path} is missing") from error
    check_sealed(path, data, "increment filter file")
    try:
        table = pq.read_table(pa.BufferReader(data), page_checksum_verification=True).cast(SCHEMA)
    except (pa.ArrowException, OSError, ValueError) as error:  # pyarrow: OSError for CRC and thrift errors
        raise IndexCorruptError(f"increment filter file {path} is truncated or corrupt") from error
    return dict(zip(table.column("path").to_pylist(), table.column("bloom").to_pylist(), strict=True))


def read_filters(storage: Storage, path: str) -> dict[str, BloomFilter]:
    try:
        return {p: BloomFilter.from_bytes(b) for p, b in read_filter_bytes(storage, path).items()}
    except ValueError as error:
        raise IndexCorruptError(f"increment filter file {path} holds a damaged bloom filter") from error
