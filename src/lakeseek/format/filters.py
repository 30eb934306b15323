"""Delta filters: the bloom filters of every delta index file of a version, in one Parquet file.

Each delta index file also carries its bloom filter in its footer, but a cold lookup would
then read one footer per delta segment just to learn that most cannot hold the value.
This file gathers them (``path``, ``bloom``), so a cold lookup reads it once and then only
the deltas whose filter matches. A commit that changes the deltas writes a new one, named
after its checksum and size (:mod:`lakeseek.format.sealed`), which binds it to its root.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from lakeseek.exceptions import IndexCorruptError
from lakeseek.format.bloom import BloomFilter
from lakeseek.format.sealed import check_sealed, index_path, sealed_name
from lakeseek.io import Storage

SCHEMA = pa.schema([pa.field("path", pa.string(), nullable=False), pa.field("bloom", pa.binary(), nullable=False)])
FILTERS_DIR = "filters"


@dataclass(frozen=True)
class FiltersRef:
    path: str
    size: int

    def to_json(self) -> dict:
        return {"path": self.path, "size": self.size}

    @classmethod
    def from_json(cls, raw: dict | None) -> FiltersRef | None:
        return None if raw is None else cls(index_path(raw["path"]), int(raw["size"]))


def write_filters(storage: Storage, index_dir: str, operation_id: str, blooms: dict[str, bytes]) -> FiltersRef:
    """Write the filters of the index at ``index_dir``; the reference holds the path relative to it."""
    table = pa.table([list(blooms), list(blooms.values())], schema=SCHEMA)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", write_page_checksum=True)
    data = sink.getvalue().to_pybytes()
    path = f"{FILTERS_DIR}/{sealed_name(operation_id, data)}"
    storage.write(f"{index_dir}/{path}", data)
    return FiltersRef(path, len(data))


def read_filter_bytes(storage: Storage, path: str) -> dict[str, bytes]:
    try:
        data = storage.read(path)
    except FileNotFoundError as error:
        raise IndexCorruptError(f"delta filter file {path} is missing") from error
    check_sealed(path, data, "delta filter file")
    try:
        table = pq.read_table(pa.BufferReader(data), page_checksum_verification=True).cast(SCHEMA)
    except (pa.ArrowException, OSError, ValueError) as error:  # pyarrow: OSError for CRC and thrift errors
        raise IndexCorruptError(f"delta filter file {path} is truncated or corrupt") from error
    return dict(zip(table.column("path").to_pylist(), table.column("bloom").to_pylist(), strict=True))


def read_filters(storage: Storage, path: str) -> dict[str, BloomFilter]:
    try:
        return {p: BloomFilter.from_bytes(b) for p, b in read_filter_bytes(storage, path).items()}
    except ValueError as error:
        raise IndexCorruptError(f"delta filter file {path} holds a damaged bloom filter") from error
