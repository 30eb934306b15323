"""Lineage: the data files an index covers, as a Parquet manifest.

One row per indexed file: ``file_id`` (what index entries point at), the file's path as
its lake source names it (relative to the lake's root), and the stamp it had when indexed:
``size``, ``mtime_ns`` and ``version`` (the storage's token of its content, see
``lakeseek.io.Stamp``). A file whose stamp differs now is treated as not indexed.

A manifest is named after its checksum and size (:mod:`lakeseek.format.sealed`), which
binds it to the root that names it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakeseek.exceptions import IndexCorruptError
from lakeseek.format.sealed import check_sealed, sealed_name
from lakeseek.io import Stamp, Storage

SCHEMA = pa.schema(
    [
        pa.field("file_id", pa.int32(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("size", pa.int64(), nullable=False),
        pa.field("mtime_ns", pa.int64(), nullable=False),
        pa.field("version", pa.string(), nullable=False),
    ]
)
LINEAGE_DIR = "lineage"


# Index files hold file ids as int32.
MAX_FILE_IDS = 2**31


@dataclass(frozen=True)
class Lineage:
    """Indexed files by id: ``paths[i]``, ``sizes[i]``, ``mtimes[i]``, ``versions[i]`` belong
    to file id ``ids[i]``."""

    ids: list[int]
    paths: list[str]
    sizes: list[int]
    mtimes: list[int]
    versions: list[str]

    def __len__(self) -> int:
        return len(self.ids)

    def stamps(self) -> list[Stamp]:
        """Each file's stamp when it was indexed, in the order of ``ids``."""
        return list(map(Stamp, self.sizes, self.mtimes, self.versions))

    @classmethod
    def concat(cls, parts: list[Lineage]) -> Lineage:
        return cls(
            [i for p in parts for i in p.ids],
            [x for p in parts for x in p.paths],
            [x for p in parts for x in p.sizes],
            [x for p in parts for x in p.mtimes],
            [x for p in parts for x in p.versions],
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
            [self.versions[n] for n in keep],
        )

    def to_table(self) -> pa.Table:
        return pa.table([self.ids, self.paths, self.sizes, self.mtimes, self.versions], schema=SCHEMA)

    def checked(self, next_file_id: int) -> Lineage:
        """This lineage, if its ids are ones lakeseek could have given (distinct, below
        ``next_file_id``); else IndexCorruptError: an index entry names its files by id."""
        ids = np.asarray(self.ids, dtype=np.int64)
        # Ids rising (as lakeseek writes them) are distinct without sorting a copy of them.
        distinct = bool(np.all(ids[1:] > ids[:-1])) or len(np.unique(ids)) == len(ids)
        if len(ids) and (ids.min() < 0 or ids.max() >= next_file_id or not distinct):
            raise IndexCorruptError("the index's lineage has file ids it never gives (negative, repeated or too large)")
        return self


def write_lineage(storage: Storage, index_dir: str, operation_id: str, lineage: Lineage) -> tuple[str, int]:
    """Write ``lineage`` as a manifest of the index at ``index_dir``; returns its path
    relative to ``index_dir`` (which binds its checksum and size) and its size."""
    sink = pa.BufferOutputStream()
    pq.write_table(lineage.to_table(), sink, compression="zstd", write_page_checksum=True)
    data = sink.getvalue().to_pybytes()
    path = f"{LINEAGE_DIR}/{sealed_name(operation_id, data)}"
    storage.write(f"{index_dir}/{path}", data)
    return path, len(data)


def read_lineage(storage: Storage, path: str) -> Lineage:
    """The manifest at ``path``, checked against the checksum and size its name binds."""
    try:
        data = storage.read(path)
    except FileNotFoundError as error:
        raise IndexCorruptError(f"lineage file {path} is missing") from error
    check_sealed(path, data, "lineage file")
    try:
        table = pq.read_table(pa.BufferReader(data), page_checksum_verification=True).select(SCHEMA.names).cast(SCHEMA)
    except (pa.ArrowException, OSError, KeyError, ValueError) as error:  # pyarrow: OSError for CRC and thrift
        raise IndexCorruptError(f"lineage file {path} is truncated or corrupt") from error
    columns = table.to_pydict()
    return Lineage(columns["file_id"], columns["path"], columns["size"], columns["mtime_ns"], columns["version"])
