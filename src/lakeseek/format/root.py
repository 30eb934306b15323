"""The root of an index version: what every kind of index shares, plus the kind's own part.

A root names the lake's schema as the index reads it, the data files the index covers (its
lineage, in parts) and its state; the kind of the index (``sorted``, ...) keeps its own
structure under ``index`` (:class:`IndexContent`). A root is small (a few hundred bytes per
index file, plus up to 20,000 inline lineage rows) and is the JSON body of a log entry, so
opening the latest version is one read. docs/format.md specifies it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

from lakeseek.exceptions import IndexCorruptError, IndexFormatError
from lakeseek.format import values
from lakeseek.format.lineage import MAX_FILE_IDS, Lineage, read_lineage
from lakeseek.format.sealed import index_path
from lakeseek.io import Storage

# 7: the root names the lake source it was created on (a directory of CSV files reads wrong as
# Parquet). Earlier versions are not read: an index of one is created again (docs/format.md).
# 8: bloom filters hash keys with lakeseek.format.hashing (format byte 2), and the skipping kind.
# 9: skipping sketch files have a row_group column (sketches per row group: config.row_groups),
#    and skipping segments count their rows apart from their files.
FORMAT_VERSION = 12
READABLE_FORMAT_VERSIONS = (12,)

ACTIVE = "active"
DELETED = "deleted"
# Never committed: the state of the stand-in for an index none of whose log entries reads whole
# (lakeseek.index.Index.unreadable), which looks nothing up.
UNREADABLE = "unreadable"


@dataclass(frozen=True)
class ColumnStatus:
    """An indexed column as its kind tells it (``status``)."""

    name: str
    type: str  # of its keys
    entries: int
    index_files: int
    segments: int  # 1, plus one per refresh since the last optimize (where the kind keeps them)
    bytes: int


class IndexContent(Protocol):
    """The part of a root that belongs to the index's kind (see :mod:`lakeseek.kinds`)."""

    @property
    def columns(self) -> tuple[str, ...]:
        """The indexed columns, in the order they were added."""
        ...

    @property
    def size(self) -> int:
        """Bytes of the index files this part names."""
        ...

    @property
    def stored_columns(self) -> tuple[str, ...]:
        """The lake columns whose values the index files hold (a type change in new files
        makes a refresh rebuild the index): the indexed ones, and any the kind carries."""
        ...

    def referenced_paths(self) -> set[str]:
        """Files of the index directory this part names, relative to it."""
        ...

    def column_statuses(self) -> list[ColumnStatus]: ...

    def to_json(self) -> dict: ...


# The kind's name and the JSON of its part -> its part, or IndexCorruptError/IndexFormatError.
ContentDecoder = Callable[[str, dict], IndexContent]


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

    def read(self, storage: Storage, index_dir: str) -> Lineage:
        """The part's files (IndexCorruptError when its manifest is damaged)."""
        if self.inline is not None:  # an empty one too (every file tombstoned, then optimized)
            return self.inline
        return read_lineage(storage, f"{index_dir}/{self.path}")

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
    lineage = Lineage(
        _listed(raw["ids"], int),
        _listed(raw["paths"], str),
        _listed(raw["sizes"], int),
        _listed(raw["mtimes_ns"], int),
        _listed(raw["versions"], str),
    )
    if not len(lineage.ids) == len(lineage.paths) == len(lineage.sizes) == len(lineage.mtimes) == len(lineage.versions):
        raise ValueError("the inline lineage's lists differ in length")
    return lineage


def _listed(raw: object, kind: type) -> list:
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
        return sum(p.files for p in self.all_parts if p.inline is not None)

    @property
    def all_parts(self) -> tuple[LineagePart, ...]:
        return (*self.parts, self.pending) if self.pending else self.parts

    def indexed(self, storage: Storage, index_dir: str) -> Lineage:
        """The indexed files (tombstoned ones left out)."""
        lineage = Lineage.concat([part.read(storage, index_dir) for part in self.parts])
        return lineage.checked(self.next_file_id).without(self.removed)

    def recorded(self, storage: Storage, index_dir: str) -> Lineage:
        """Files a quick refresh recorded without indexing them."""
        if self.pending is None:
            return Lineage.concat([])
        return self.pending.read(storage, index_dir).checked(self.next_file_id)

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
        lineage = cls(
            parts=tuple(LineagePart.from_json(p) for p in raw["parts"]),
            removed=frozenset(int(i) for i in raw["removed"]),
            next_file_id=int(raw["next_file_id"]),
            pending=None if pending is None else LineagePart.from_json(pending),
        )
        if not 0 <= lineage.next_file_id <= MAX_FILE_IDS:
            raise ValueError("the lineage's next file id is out of range")
        return lineage


@dataclass(frozen=True)
class Root:
    """One committed version of an index."""

    version: int
    operation: str
    timestamp_ms: int
    state: str  # ACTIVE, or DELETED: kept on storage but not used by queries (nor is UNREADABLE)
    data_version: int  # the version that last changed the lineage: a refresh's work is valid on top of it
    # The lake's schema: the merge of every indexed file's (lakeseek.lake.schemas), so each
    # value of an indexed file is exact in it, and so is its key.
    schema: pa.Schema
    spark_schema: str  # the same as Spark's StructType JSON
    partition_columns: tuple[str, ...]
    lineage: LineageSet
    kind: str  # the index's kind (lakeseek.kinds), which reads ``content``
    content: IndexContent
    # The lake source's token of the version the lineage describes, where the source has one
    # (a table format's version): while the lake is at that version, nothing changed.
    source_version: str | None = None
    # The lake source the index was created on (lakeseek.sources: "directory", "csv", "delta", ...).
    source_format: str = "directory"

    @property
    def columns(self) -> tuple[str, ...]:
        return self.content.columns

    @property
    def is_active(self) -> bool:
        """Whether queries look the index up: not when it is DELETED, nor the UNREADABLE stand-in."""
        return self.state == ACTIVE

    @property
    def index_bytes(self) -> int:
        return self.content.size + self.lineage.size

    def referenced_paths(self) -> set[str]:
        """Files of the index directory this version needs, relative to it."""
        paths = self.content.referenced_paths()
        paths.update(p.path for p in self.lineage.all_parts if p.path is not None)
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
            "schema": values.serialize_schema(self.schema),
            "spark_schema": self.spark_schema,
            "partition_columns": list(self.partition_columns),
            "lineage": self.lineage.to_json(),
            "source_version": self.source_version,
            "source_format": self.source_format,
            "kind": self.kind,
            "index": self.content.to_json(),
        }

    @classmethod
    def from_json(cls, raw: dict, decode_content: ContentDecoder) -> Root:
        if not isinstance(raw, dict) or raw.get("format") != "lakeseek":
            raise IndexCorruptError("index log entry is not a lakeseek root")
        if raw.get("format_version") not in READABLE_FORMAT_VERSIONS:
            readable = ", ".join(map(str, READABLE_FORMAT_VERSIONS))
            version = raw.get("format_version")
            older = (
                isinstance(version, int) and not isinstance(version, bool) and version < min(READABLE_FORMAT_VERSIONS)
            )
            cure = "delete the index directory and create the index again" if older else "upgrade lakeseek"
            raise IndexFormatError(
                f"index format version {version} is not supported by this lakeseek (it reads version {readable}): "
                f"{cure}"
            )
        try:
            kind = raw["kind"]
            if not isinstance(kind, str) or not isinstance(raw["index"], dict):
                raise ValueError("the root's kind or index is not of the right form")
            source_version = raw.get("source_version")
            if source_version is not None and not isinstance(source_version, str):
                raise ValueError("the root's source version is not text")
            source_format = raw["source_format"]
            if not isinstance(source_format, str):
                raise ValueError("the root's source format is not text")
            root = cls(
                version=int(raw["version"]),
                operation=str(raw["operation"]),
                timestamp_ms=int(raw["timestamp_ms"]),
                state=str(raw["state"]),
                data_version=int(raw["data_version"]),
                schema=values.deserialize_schema(raw["schema"]),
                spark_schema=str(raw["spark_schema"]),
                partition_columns=tuple(raw["partition_columns"]),
                lineage=LineageSet.from_json(raw["lineage"]),
                kind=kind,
                content=decode_content(kind, raw["index"]),
                source_version=source_version,
                source_format=source_format,
            )
            unknown = set(root.partition_columns) | set(root.columns)
            if not unknown <= set(root.schema.names):
                raise ValueError(
                    f"the root names columns its schema does not have: {sorted(unknown - set(root.schema.names))}"
                )
            return root
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise IndexCorruptError(f"index log entry is malformed ({error!r})") from error
