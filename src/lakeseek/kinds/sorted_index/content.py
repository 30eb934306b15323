"""The sorted kind's part of a root: per column, its segments of index files.

A column's first segment is its main index; each incremental refresh adds an *increment*
segment (index files with bloom filters) until an optimize folds the increments back in.
Within a segment the index files cover disjoint key ranges, sorted; each file's entry in the
root has its key range and the exact byte range of its footer, so a lookup reads the footer
in one exact read.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import pyarrow as pa

from lakeseek.format import values
from lakeseek.format.root import ColumnStatus
from lakeseek.format.values import KeyValue, sort_key
from lakeseek.kinds.sorted_index.filters import FiltersRef
from lakeseek.kinds.sorted_index.index_file import IndexFileInfo


@dataclass(frozen=True)
class IndexConfig:
    """How the index is built; refreshes and optimizes keep it.

    ``row_groups``: entries point at the data files' row groups, not just the files, so
    reads skip the row groups that cannot match (bigger index, fewer bytes read).
    """

    chunk_rows: int
    entries_per_index_file: int
    row_groups: bool = False

    def to_json(self) -> dict:
        return {
            "chunk_rows": self.chunk_rows,
            "entries_per_index_file": self.entries_per_index_file,
            "row_groups": self.row_groups,
        }

    @classmethod
    def from_json(cls, raw: dict) -> IndexConfig:
        return cls(int(raw["chunk_rows"]), int(raw["entries_per_index_file"]), bool(raw["row_groups"]))


@dataclass(frozen=True)
class Segment:
    """Index files of one column written by one operation: disjoint key ranges, sorted."""

    files: tuple[IndexFileInfo, ...]
    _mins: list[tuple] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._mins.extend(sort_key(f.min) for f in self.files)

    @property
    def entries(self) -> int:
        return sum(f.entries for f in self.files)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def file_for(self, value: KeyValue) -> IndexFileInfo | None:
        """The index file whose range holds ``value``, if any."""
        position = bisect.bisect_right(self._mins, sort_key(value)) - 1
        if position < 0:
            return None
        candidate = self.files[position]
        return candidate if sort_key(value) <= sort_key(candidate.max) else None


@dataclass(frozen=True)
class ColumnIndex:
    """The index of one column: its segments, main first."""

    name: str
    key_type: pa.DataType
    segments: tuple[Segment, ...]

    @property
    def files(self) -> list[IndexFileInfo]:
        return [f for segment in self.segments for f in segment.files]

    @property
    def entries(self) -> int:
        return sum(s.entries for s in self.segments)

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    def to_json(self) -> dict:
        return {
            "type": str(self.key_type),
            "key_type": values.serialize_type(self.key_type),
            "entries": self.entries,
            "segments": [[f.to_json(self.key_type) for f in s.files] for s in self.segments],
        }

    @classmethod
    def from_json(cls, name: str, raw: dict) -> ColumnIndex:
        key_type = values.deserialize_type(raw["key_type"])
        segments = tuple(
            Segment(tuple(IndexFileInfo.from_json(f, key_type) for f in files)) for files in raw["segments"]
        )
        return cls(name, key_type, segments)


@dataclass(frozen=True)
class SortedIndex:
    """The sorted kind's part of a root (a :class:`lakeseek.format.root.IndexContent`)."""

    config: IndexConfig
    indexes: dict[str, ColumnIndex]
    increment_filters: FiltersRef | None = None  # bloom filters of the increments' index files

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.indexes)

    @property
    def stored_columns(self) -> tuple[str, ...]:
        return self.columns

    @property
    def size(self) -> int:
        filters = self.increment_filters.size if self.increment_filters else 0
        return sum(c.size for c in self.indexes.values()) + filters

    @property
    def segments(self) -> int:
        return max((len(c.segments) for c in self.indexes.values()), default=0)

    def increment_files(self) -> dict[str, tuple[ColumnIndex, IndexFileInfo]]:
        """The index files of every increment, by path."""
        return {f.path: (c, f) for c in self.indexes.values() for s in c.segments[1:] for f in s.files}

    def column_statuses(self) -> list[ColumnStatus]:
        return [
            ColumnStatus(c.name, str(c.key_type), c.entries, len(c.files), len(c.segments), c.size)
            for c in self.indexes.values()
        ]

    def referenced_paths(self) -> set[str]:
        paths = {f.path for c in self.indexes.values() for f in c.files}
        if self.increment_filters is not None:
            paths.add(self.increment_filters.path)
        return paths

    def to_json(self) -> dict:
        return {
            "config": self.config.to_json(),
            "columns": {name: column.to_json() for name, column in self.indexes.items()},
            "increment_filters": None if self.increment_filters is None else self.increment_filters.to_json(),
        }

    @classmethod
    def from_json(cls, raw: dict) -> SortedIndex:
        if not raw["columns"]:  # lakeseek never commits an index of no column: a forged or damaged entry
            raise ValueError("the root indexes no column")
        return cls(
            config=IndexConfig.from_json(raw["config"]),
            indexes={name: ColumnIndex.from_json(name, column) for name, column in raw["columns"].items()},
            increment_filters=FiltersRef.from_json(raw.get("increment_filters")),
        )
