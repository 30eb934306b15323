"""The root of an index version (the paper's Table 4, extended).

A root lists, per indexed column, its index files with their key ranges and the exact
byte range of their footers, plus the lake's schema and a reference to the lineage
manifest parts. It is small (a few hundred bytes per index file) and is stored as the JSON
body of a log entry, so finding and reading the latest root is one read.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import pyarrow as pa

from lakeseek.exceptions import IndexCorruptError, IndexFormatError
from lakeseek.format import values
from lakeseek.format.filters import FiltersRef
from lakeseek.format.index_file import IndexFileInfo
from lakeseek.format.lineage import Lineage
from lakeseek.format.sealed import index_path
from lakeseek.format.values import KeyValue, sort_key

# 3: lineage records each file's version token (docs/freshness.md), and manifests and the
# delta filter file are named after their checksum and size (format/sealed.py).
# 4: the schema is the merge of every indexed file's (types widened, other spellings of a
# column in the schema's metadata; see lakeseek.evolution), and ``schema_checked`` says so.
# 5: date and timestamp keys are numbers in JSON (days, microseconds since 1970-01-01 UTC)
# and in bloom filters, so that every date and timestamp Spark holds can be indexed.
FORMAT_VERSION = 5
# Versions this lakeseek reads. A version 2 root recorded no version tokens: its files all
# count as changed (every query reads them) until a refresh records them anew. A root
# without ``schema_checked`` (versions 2 and 3) took its schema from one file: queries merge
# in the schema of every file until a refresh checks them. Bloom filters of dates and
# timestamps written before version 5 hashed other forms of the keys: they are not used
# (``legacy_temporal_blooms``) by this root or any root built on it.
READABLE_FORMAT_VERSIONS = (2, 3, 4, 5)


@dataclass(frozen=True)
class Segment:
    """Index files of one column written by one operation: disjoint key ranges, sorted.

    The first segment of a column is its main index; incremental refreshes add delta
    segments (with bloom filters) until an optimize folds them back in.
    """

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
class LineagePart:
    """Some indexed data files: inline in the root (no extra read), or a Parquet manifest
    whose name binds its checksum and size (``size`` repeats the latter)."""

    files: int
    lake_bytes: int
    size: int
    path: str | None = None
    inline: Lineage | None = None

    def to_json(self) -> dict:
        body: dict = {"files": self.files, "lake_bytes": self.lake_bytes, "size": self.size}
        if self.inline is not None:
            body["inline"] = {
                "ids": self.inline.ids,
                "paths": self.inline.paths,
                "sizes": self.inline.sizes,
                "mtimes_ns": self.inline.mtimes,
                "versions": self.inline.versions,
            }
        else:
            body["path"] = self.path
        return body

    @classmethod
    def from_json(cls, raw: dict) -> LineagePart:
        inline = raw.get("inline")
        return cls(
            files=int(raw["files"]),
            lake_bytes=int(raw["lake_bytes"]),
            size=int(raw["size"]),
            path=None if raw.get("path") is None else index_path(raw["path"]),
            inline=None if inline is None else _inline_lineage(inline),
        )


def _inline_lineage(raw: dict) -> Lineage:
    ids = _listed(raw["ids"], int)
    versions = raw.get("versions", [None] * len(ids))  # format 2 recorded none
    lineage = Lineage(
        ids,
        _listed(raw["paths"], str),
        _listed(raw["sizes"], int),
        _listed(raw["mtimes_ns"], int),
        _listed(versions, (str, type(None))),
    )
    if not len(ids) == len(lineage.paths) == len(lineage.sizes) == len(lineage.mtimes) == len(lineage.versions):
        raise ValueError("the inline lineage's lists differ in length")
    return lineage


def _listed(raw: object, kind: type | tuple[type, ...]) -> list:
    """A JSON list whose every item is of ``kind`` (bool is no int here), else ValueError."""
    if not isinstance(raw, list) or any(isinstance(item, bool) or not isinstance(item, kind) for item in raw):
        raise ValueError(f"an inline lineage list is not a list of {kind}")
    return raw


@dataclass(frozen=True)
class LineageSet:
    """The data files an index version covers.

    A refresh appends a part instead of rewriting the list, so a commit costs the size of
    the change, not of the lake. ``removed`` holds tombstoned file ids: files removed or
    rewritten since they were indexed; lookups ignore their entries and a full optimize
    drops them. ``pending`` lists files a quick refresh recorded without indexing them:
    every query reads them (hybrid scan). Refreshes and optimizes never reuse a file id;
    a full refresh, which rewrites every index file, numbers the files anew.
    """

    parts: tuple[LineagePart, ...]
    removed: frozenset[int]
    next_file_id: int
    pending: LineagePart | None = None

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts) + (self.pending.size if self.pending else 0)

    @property
    def pending_files(self) -> int:
        return self.pending.files if self.pending else 0

    @property
    def inline_files(self) -> int:
        parts = [*self.parts, self.pending] if self.pending else self.parts
        return sum(p.files for p in parts if p.inline is not None)

    def to_json(self) -> dict:
        return {
            "parts": [p.to_json() for p in self.parts],
            "removed": sorted(self.removed),
            "next_file_id": self.next_file_id,
            "pending": None if self.pending is None else self.pending.to_json(),
        }

    @classmethod
    def from_json(cls, raw: dict) -> LineageSet:
        pending = raw.get("pending")
        return cls(
            parts=tuple(LineagePart.from_json(p) for p in raw["parts"]),
            removed=frozenset(int(i) for i in raw["removed"]),
            next_file_id=int(raw["next_file_id"]),
            pending=None if pending is None else LineagePart.from_json(pending),
        )


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
        return cls(int(raw["chunk_rows"]), int(raw["entries_per_index_file"]), bool(raw.get("row_groups", False)))


ACTIVE = "active"
DELETED = "deleted"


@dataclass(frozen=True)
class Root:
    """One committed version of an index."""

    version: int
    operation: str
    timestamp_ms: int
    state: str  # ACTIVE, or DELETED: kept on storage but not used by queries
    data_version: int  # the version that last changed the lineage: a refresh's work is valid on top of it
    config: IndexConfig
    schema: pa.Schema
    spark_schema: str
    partition_columns: tuple[str, ...]
    columns: dict[str, ColumnIndex]
    lineage: LineageSet
    delta_filters: FiltersRef | None = None  # bloom filters of the delta segments' index files
    # Whether ``schema`` holds every indexed file's types (format 4): each value of an indexed
    # file is exact in it, so is its key. False for roots of earlier formats.
    schema_checked: bool = False
    legacy_temporal_blooms: bool = False

    @property
    def index_bytes(self) -> int:
        filters = self.delta_filters.size if self.delta_filters else 0
        return sum(c.size for c in self.columns.values()) + self.lineage.size + filters

    def delta_files(self) -> dict[str, tuple[ColumnIndex, IndexFileInfo]]:
        """The index files of every delta segment, by path."""
        return {f.path: (c, f) for c in self.columns.values() for s in c.segments[1:] for f in s.files}

    @property
    def segments(self) -> int:
        return max((len(c.segments) for c in self.columns.values()), default=0)

    def referenced_paths(self) -> set[str]:
        """Files of the index directory this version needs, relative to it."""
        paths = {f.path for c in self.columns.values() for f in c.files}
        parts = [*self.lineage.parts, self.lineage.pending] if self.lineage.pending else self.lineage.parts
        paths.update(p.path for p in parts if p.path is not None)
        if self.delta_filters is not None:
            paths.add(self.delta_filters.path)
        return paths

    def to_json(self) -> dict:
        return {
            "format": "lakeseek",
            "format_version": FORMAT_VERSION,
            "version": self.version,
            "operation": self.operation,
            "timestamp_ms": self.timestamp_ms,
            "state": self.state,
            "data_version": self.data_version,
            "config": self.config.to_json(),
            "schema": values.serialize_schema(self.schema),
            "spark_schema": self.spark_schema,
            "partition_columns": list(self.partition_columns),
            "columns": {name: column.to_json() for name, column in self.columns.items()},
            "lineage": self.lineage.to_json(),
            "delta_filters": None if self.delta_filters is None else self.delta_filters.to_json(),
            "schema_checked": self.schema_checked,
            "legacy_temporal_blooms": self.legacy_temporal_blooms,
        }

    @classmethod
    def from_json(cls, raw: dict) -> Root:
        if not isinstance(raw, dict) or raw.get("format") != "lakeseek":
            raise IndexCorruptError("index log entry is not a lakeseek root")
        if raw.get("format_version") not in READABLE_FORMAT_VERSIONS:
            raise IndexFormatError(
                f"index format version {raw.get('format_version')} is not supported by this "
                f"lakeseek (it reads versions {', '.join(map(str, READABLE_FORMAT_VERSIONS))}); upgrade lakeseek"
            )
        try:
            return cls(
                version=int(raw["version"]),
                operation=str(raw["operation"]),
                timestamp_ms=int(raw["timestamp_ms"]),
                state=str(raw["state"]),
                data_version=int(raw["data_version"]),
                config=IndexConfig.from_json(raw["config"]),
                schema=values.deserialize_schema(raw["schema"]),
                spark_schema=str(raw["spark_schema"]),
                partition_columns=tuple(raw["partition_columns"]),
                columns=_columns(raw["columns"]),
                lineage=LineageSet.from_json(raw["lineage"]),
                delta_filters=FiltersRef.from_json(raw.get("delta_filters")),
                schema_checked=raw.get("schema_checked") is True,
                legacy_temporal_blooms=raw["format_version"] < 5 or raw.get("legacy_temporal_blooms") is True,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise IndexCorruptError(f"index log entry is malformed ({error!r})") from error


def _columns(raw: dict) -> dict[str, ColumnIndex]:
    if not raw:  # lakeseek never commits an index of no column: a forged or damaged entry
        raise ValueError("the root indexes no column")
    return {name: ColumnIndex.from_json(name, column) for name, column in raw.items()}
