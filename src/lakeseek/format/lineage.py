"""Lineage: the data files an index covers, as a Parquet manifest.

One row per indexed file: ``file_id`` (what index entries point at), the file's path
relative to the lake root, and the ``size`` and ``mtime_ns`` it had when indexed. A file
whose size or modification time differs now is treated as not indexed.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from lakeseek.exceptions import IndexCorruptError
from lakeseek.io import Storage

SCHEMA = pa.schema(
    [
        pa.field("file_id", pa.int32(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("size", pa.int64(), nullable=False),
        pa.field("mtime_ns", pa.int64(), nullable=False),
    ]
)


@dataclass(frozen=True)
class Lineage:
    """Indexed files by id: ``paths[i]``, ``sizes[i]``, ``mtimes[i]`` belong to file id ``ids[i]``."""

    ids: list[int]
    paths: list[str]
    sizes: list[int]
    mtimes: list[int]

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def concat(cls, parts: list[Lineage]) -> Lineage:
        return cls(
            [i for p in parts for i in p.ids],
            [x for p in parts for x in p.paths],
            [x for p in parts for x in p.sizes],
            [x for p in parts for x in p.mtimes],
        )

    def without(self, removed: frozenset[int]) -> Lineage:
        if not removed:
            return self
        keep = [n for n, file_id in enumerate(self.ids) if file_id not in removed]
        return Lineage(
            [self.ids[n] for n in keep],
            [self.paths[n] for n in keep],
            [self.sizes[n] for n in keep],
            [self.mtimes[n] for n in keep],
        )

    def to_table(self) -> pa.Table:
        return pa.table([self.ids, self.paths, self.sizes, self.mtimes], schema=SCHEMA)


def write_lineage(storage: Storage, path: str, lineage: Lineage) -> int:
    sink = pa.BufferOutputStream()
    pq.write_table(lineage.to_table(), sink, compression="zstd", write_page_checksum=True)
    data = sink.getvalue().to_pybytes()
    storage.write(path, data)
    return len(data)


def read_lineage(storage: Storage, path: str) -> Lineage:
    try:
        data = storage.read(path)
    except FileNotFoundError as error:
        raise IndexCorruptError(f"lineage file {path} is missing") from error
    try:
        table = pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
        table = table.select(SCHEMA.names).cast(SCHEMA)
    except (pa.ArrowException, KeyError, ValueError) as error:
        raise IndexCorruptError(f"lineage file {path} is truncated or corrupt") from error
    columns = table.to_pydict()
    return Lineage(columns["file_id"], columns["path"], columns["size"], columns["mtime_ns"])
