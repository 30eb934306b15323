"""The root of an index version (the paper's Table 4, extended).

A root lists, per indexed column, its index files with their key ranges and the exact
byte range of their footers, plus the lake's schema and a reference to the lineage
manifest. It is small (a few hundred bytes per index file) and is stored as the JSON
body of a log entry, so finding and reading the latest root is one read.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import pyarrow as pa

from lakeseek.exceptions import IndexCorruptError, IndexFormatError
from lakeseek.format import values
from lakeseek.format.index_file import IndexFileInfo
from lakeseek.format.lineage import Lineage
from lakeseek.format.values import KeyValue, sort_key

FORMAT_VERSION = 1


@dataclass(frozen=True)
class ColumnIndex:
    """The index of one column: disjoint index files ordered by key range."""

    name: str
    key_type: pa.DataType
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

    def to_json(self) -> dict:
        return {
            "type": str(self.key_type),
            "key_type": values.serialize_type(self.key_type),
            "entries": self.entries,
            "files": [f.to_json(self.key_type) for f in self.files],
        }

    @classmethod
    def from_json(cls, name: str, raw: dict) -> ColumnIndex:
        key_type = values.deserialize_type(raw["key_type"])
        files = tuple(IndexFileInfo.from_json(f, key_type) for f in raw["files"])
        return cls(name, key_type, files)


@dataclass(frozen=True)
class LineageRef:
    """Where the lineage is: inline in the root (small lakes: no extra read), or a manifest."""

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
            }
        else:
            body["path"] = self.path
        return body

    @classmethod
    def from_json(cls, raw: dict) -> LineageRef:
        inline = raw.get("inline")
        return cls(
            files=int(raw["files"]),
            lake_bytes=int(raw["lake_bytes"]),
            size=int(raw["size"]),
            path=raw.get("path"),
            inline=None
            if inline is None
            else Lineage(list(inline["ids"]), list(inline["paths"]), list(inline["sizes"]), list(inline["mtimes_ns"])),
        )


@dataclass(frozen=True)
class Root:
    """One committed version of an index."""

    version: int
    operation: str
    timestamp_ms: int
    schema: pa.Schema
    spark_schema: str
    partition_columns: tuple[str, ...]
    columns: dict[str, ColumnIndex]
    lineage: LineageRef

    @property
    def index_bytes(self) -> int:
        return sum(c.size for c in self.columns.values()) + self.lineage.size

    def to_json(self) -> dict:
        return {
            "format": "lakeseek",
            "format_version": FORMAT_VERSION,
            "version": self.version,
            "operation": self.operation,
            "timestamp_ms": self.timestamp_ms,
            "schema": values.serialize_schema(self.schema),
            "spark_schema": self.spark_schema,
            "partition_columns": list(self.partition_columns),
            "columns": {name: column.to_json() for name, column in self.columns.items()},
            "lineage": self.lineage.to_json(),
        }

    @classmethod
    def from_json(cls, raw: dict) -> Root:
        if raw.get("format") != "lakeseek":
            raise IndexCorruptError("index log entry is not a lakeseek root")
        if raw.get("format_version") != FORMAT_VERSION:
            raise IndexFormatError(
                f"index format version {raw.get('format_version')} is not supported by this "
                f"lakeseek (it reads version {FORMAT_VERSION}); upgrade lakeseek"
            )
        try:
            return cls(
                version=int(raw["version"]),
                operation=str(raw["operation"]),
                timestamp_ms=int(raw["timestamp_ms"]),
                schema=values.deserialize_schema(raw["schema"]),
                spark_schema=str(raw["spark_schema"]),
                partition_columns=tuple(raw["partition_columns"]),
                columns={n: ColumnIndex.from_json(n, c) for n, c in raw["columns"].items()},
                lineage=LineageRef.from_json(raw["lineage"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise IndexCorruptError(f"index log entry is malformed ({error!r})") from error
