"""The covering kind's part of a root: its settings, and its segments of sorted row files.

A segment is what one build wrote for one indexed (key) column: the rows of some data files,
every indexed and included column of them plus the ``file_id`` they came from, sorted by the
key (NULL first) into Parquet files of row groups of ``chunk_rows`` rows. The root keeps each
file's row groups' first keys, so a lookup knows the row groups to read without a footer.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pyarrow as pa

from lakeseek.format import values
from lakeseek.format.root import ColumnStatus
from lakeseek.format.sealed import index_path
from lakeseek.format.values import KeyValue, sort_key
from lakeseek.kinds.segments import SegmentedIndex

DEFAULT_CHUNK_ROWS = 8_192
ROWS_PER_FILE = 4_000_000


@dataclass(frozen=True)
class CoveringConfig:
    """``include``: columns carried beside the indexed ones (as given; resolved at build);
    ``chunk_rows``: rows per row group, the unit a lookup reads."""

    include: tuple[str, ...] = ()
    chunk_rows: int = DEFAULT_CHUNK_ROWS

    def to_json(self) -> dict:
        return {"include": list(self.include), "chunk_rows": self.chunk_rows}

    @classmethod
    def from_json(cls, raw: dict) -> CoveringConfig:
        include, chunk_rows = raw["include"], raw["chunk_rows"]
        if not isinstance(include, list) or not all(isinstance(c, str) for c in include):
            raise ValueError("the covering index's included columns are malformed")
        if not isinstance(chunk_rows, int) or isinstance(chunk_rows, bool) or chunk_rows < 1:
            raise ValueError("the covering index's chunk_rows is malformed")
        return cls(tuple(include), chunk_rows)


@dataclass(frozen=True)
class RowFile:
    """One sorted file of a segment: its row groups (``chunk_rows`` rows each but the last),
    the first key of each, its last key, and how many rows (the first ones) hold NULL."""

    path: str
    size: int
    rows: int
    firsts: tuple[KeyValue, ...]
    last: KeyValue
    null_rows: int
    footer_crc32: int  # of its footer and trailer (lakeseek.format.footers)

    @functools.cached_property
    def sort_keys(self) -> list[tuple]:
        """``firsts`` in index order, for bisection."""
        return [sort_key(key) for key in self.firsts]

    def to_json(self, key_type: pa.DataType) -> dict:
        return {
            "path": self.path,
            "size": self.size,
            "rows": self.rows,
            "firsts": [values.encode(k, key_type) for k in self.firsts],
            "last": values.encode(self.last, key_type),
            "null_rows": self.null_rows,
            "footer_crc32": self.footer_crc32,
        }

    @classmethod
    def from_json(cls, raw: dict, key_type: pa.DataType) -> RowFile:
        return cls(
            index_path(raw["path"]),
            int(raw["size"]),
            int(raw["rows"]),
            tuple(values.decode(k, key_type) for k in raw["firsts"]),
            values.decode(raw["last"], key_type),
            int(raw["null_rows"]),
            int(raw["footer_crc32"]),
        )


@dataclass(frozen=True)
class RowSegment:
    """The rows of ``files`` data files sorted by ``column``, carrying ``carried`` columns."""

    column: str
    carried: tuple[str, ...]  # the lake columns in the rows (the key column first)
    row_files: tuple[RowFile, ...]
    files: int  # data files whose rows it holds
    pairs: int  # distinct (key, data file) pairs
    distinct: int  # distinct non-NULL keys

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.row_files)

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.row_files)

    def to_json(self, key_type: pa.DataType) -> dict:
        return {
            "column": self.column,
            "carried": list(self.carried),
            "row_files": [f.to_json(key_type) for f in self.row_files],
            "files": self.files,
            "pairs": self.pairs,
            "distinct": self.distinct,
        }

    @classmethod
    def from_json(cls, raw: dict, key_types: dict[str, pa.DataType]) -> RowSegment:
        column = raw["column"]
        return cls(
            column,
            tuple(raw["carried"]),
            tuple(RowFile.from_json(f, key_types[column]) for f in raw["row_files"]),
            int(raw["files"]),
            int(raw["pairs"]),
            int(raw["distinct"]),
        )


@dataclass(frozen=True)
class CoveringIndex(SegmentedIndex):
    """The covering kind's part of a root (a :class:`lakeseek.format.root.IndexContent`)."""

    config: CoveringConfig
    segments: tuple[RowSegment, ...]
    include: tuple[str, ...] = ()  # the included columns as the lake names them

    @property
    def stored_columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.columns, *self.include]))

    def column_statuses(self) -> list[ColumnStatus]:
        statuses = []
        for column, key_type in self.key_types.items():
            segments = self.segments_of(column)
            files = sum(len(s.row_files) for s in segments)
            rows = sum(s.rows for s in segments)
            size = sum(s.size for s in segments)
            statuses.append(ColumnStatus(column, str(key_type), rows, files, len(segments), size))
        return statuses

    def referenced_paths(self) -> set[str]:
        return {f.path for s in self.segments for f in s.row_files}

    def to_json(self) -> dict:
        return {
            "config": self.config.to_json(),
            "columns": self.key_types_json(),
            "include": list(self.include),
            "segments": [s.to_json(self.key_types[s.column]) for s in self.segments],
        }

    @classmethod
    def from_json(cls, raw: dict) -> CoveringIndex:
        key_types = cls.key_types_from_json(raw)
        if any(s["column"] not in key_types for s in raw["segments"]):
            raise ValueError("a segment names a column the index does not have")
        segments = tuple(RowSegment.from_json(s, key_types) for s in raw["segments"])
        return cls(CoveringConfig.from_json(raw["config"]), key_types, segments, tuple(raw["include"]))
