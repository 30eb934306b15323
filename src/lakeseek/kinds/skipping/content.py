"""The skipping kind's part of a root: its settings, and its segments of sketch files.

Each build writes one *segment*: a Parquet file of one row per data file (see
:mod:`.sketches`) for some columns. ``create`` writes one over the lake, an incremental
refresh one over the new files, ``add_columns`` one over every file for the new columns;
optimize merges them. The root keeps, per segment and column, a summary the cost model
reads without opening the segment: the key range, the files holding NULL, how many files
a value is in on average, and how spread each file's range is.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from lakeseek.format import values
from lakeseek.format.root import ColumnStatus
from lakeseek.format.sealed import index_path
from lakeseek.format.values import KeyValue
from lakeseek.kinds.segments import SegmentedIndex

DEFAULT_VALUE_LIST = 16


@dataclass(frozen=True)
class SkippingConfig:
    """``bloom``: a bloom filter per file and column (for = and IN); ``value_list``: files with
    at most this many distinct values keep them exactly instead (0: never); ``row_groups``:
    sketches per row group of each file rather than per file, so reads skip row groups too."""

    bloom: bool = True
    value_list: int = DEFAULT_VALUE_LIST
    row_groups: bool = False

    def to_json(self) -> dict:
        return {"bloom": self.bloom, "value_list": self.value_list, "row_groups": self.row_groups}

    @classmethod
    def from_json(cls, raw: dict) -> SkippingConfig:
        bloom, value_list, row_groups = raw["bloom"], raw["value_list"], raw["row_groups"]
        flags = isinstance(bloom, bool) and isinstance(row_groups, bool)
        if not flags or not isinstance(value_list, int) or isinstance(value_list, bool):
            raise ValueError("the skipping index's settings are malformed")
        return cls(bloom, value_list, row_groups)


@dataclass(frozen=True)
class ColumnSummary:
    """One column over one segment's files, for the cost model."""

    min: KeyValue  # the lowest and highest non-NULL key of any file (None: no such key)
    max: KeyValue
    null_files: int  # files holding NULL
    bounds_only_files: int  # files with keys but neither a value list nor a bloom filter: min/max alone tests them
    files_per_value: float  # files a non-NULL value is in, on average
    distinct: float  # distinct non-NULL values over the segment's files (estimated)
    span_share: float  # a file's key range as a share of the segment's, on average
    bounds_bytes: int  # bytes of its min/max/NULL columns in the segment file
    members_bytes: int  # bytes of its value lists and bloom filters

    def to_json(self, key_type: pa.DataType) -> dict:
        return {
            "min": values.encode(self.min, key_type),
            "max": values.encode(self.max, key_type),
            "null_files": self.null_files,
            "bounds_only_files": self.bounds_only_files,
            "files_per_value": self.files_per_value,
            "distinct": self.distinct,
            "span_share": self.span_share,
            "bounds_bytes": self.bounds_bytes,
            "members_bytes": self.members_bytes,
        }

    @classmethod
    def from_json(cls, raw: dict, key_type: pa.DataType) -> ColumnSummary:
        return cls(
            values.decode(raw["min"], key_type),
            values.decode(raw["max"], key_type),
            int(raw["null_files"]),
            int(raw["bounds_only_files"]),
            float(raw["files_per_value"]),
            float(raw["distinct"]),
            float(raw["span_share"]),
            int(raw["bounds_bytes"]),
            int(raw["members_bytes"]),
        )


@dataclass(frozen=True)
class SketchSegment:
    """A sketch file: one row per data file (or row group of one), for ``columns`` (in the file
    as column numbers 0, 1, ... in this order: see :func:`.sketches.sketch_fields`)."""

    path: str
    size: int
    rows: int
    files: int
    columns: tuple[str, ...]
    summaries: tuple[ColumnSummary, ...]
    footer_crc32: int  # of its footer and trailer (lakeseek.format.footers)

    def summary(self, column: str) -> ColumnSummary | None:
        return self.summaries[self.columns.index(column)] if column in self.columns else None

    def to_json(self, key_types: dict[str, pa.DataType]) -> dict:
        return {
            "path": self.path,
            "size": self.size,
            "rows": self.rows,
            "files": self.files,
            # A list: the file's column numbers follow this order (a JSON object's keys may be reordered).
            "columns": list(self.columns),
            "summaries": [s.to_json(key_types[c]) for c, s in zip(self.columns, self.summaries, strict=True)],
            "footer_crc32": self.footer_crc32,
        }

    @classmethod
    def from_json(cls, raw: dict, key_types: dict[str, pa.DataType]) -> SketchSegment:
        columns = tuple(raw["columns"])
        if not all(isinstance(c, str) for c in columns) or len(raw["summaries"]) != len(columns):
            raise ValueError("a sketch segment's columns are malformed")
        return cls(
            index_path(raw["path"]),
            int(raw["size"]),
            int(raw["rows"]),
            int(raw["files"]),
            columns,
            tuple(ColumnSummary.from_json(s, key_types[c]) for c, s in zip(columns, raw["summaries"], strict=True)),
            int(raw["footer_crc32"]),
        )


@dataclass(frozen=True)
class SkippingIndex(SegmentedIndex):
    """The skipping kind's part of a root (a :class:`lakeseek.format.root.IndexContent`)."""

    config: SkippingConfig
    segments: tuple[SketchSegment, ...]

    def column_statuses(self) -> list[ColumnStatus]:
        statuses = []
        for column, key_type in self.key_types.items():
            segments = self.segments_of(column)
            statuses.append(
                ColumnStatus(
                    column,
                    str(key_type),
                    sum(s.rows for s in segments),
                    len(segments),
                    len(segments),
                    sum(s.summary(column).bounds_bytes + s.summary(column).members_bytes for s in segments),
                )
            )
        return statuses

    def referenced_paths(self) -> set[str]:
        return {s.path for s in self.segments}

    def to_json(self) -> dict:
        return {
            "config": self.config.to_json(),
            "columns": self.key_types_json(),
            "segments": [s.to_json(self.key_types) for s in self.segments],
        }

    @classmethod
    def from_json(cls, raw: dict) -> SkippingIndex:
        key_types = cls.key_types_from_json(raw)
        segments = tuple(SketchSegment.from_json(s, key_types) for s in raw["segments"])
        index = cls(SkippingConfig.from_json(raw["config"]), key_types, segments)
        index.check_segments()
        return index
