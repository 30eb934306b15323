"""What kinds kept in segments share: their part of the root's common fields, the actions
that add and merge segments, and which segments an optimize merges.

A kind whose part of the root has ``key_types`` (per indexed column) and ``segments`` (each
with ``files`` and ``columns``) writes one segment per build (``create``, a refresh, added
columns) and merges them on optimize: a quick optimize merges, for each column, its segments
after the first; a full one all of them, dropping tombstoned files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

from lakeseek.format import values
from lakeseek.format.actions import ContentAction, Requirement
from lakeseek.format.root import IndexContent, Root
from lakeseek.kinds.base import Change


@dataclass(frozen=True)
class SegmentedIndex:
    """A kind's part of a root kept in segments: its settings, the key type of each indexed
    column (in the order they were added), and its segments (each with ``columns``, ``files``
    and ``size``)."""

    config: Any
    key_types: dict[str, pa.DataType]
    segments: tuple[Any, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.key_types)

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def stored_columns(self) -> tuple[str, ...]:
        return self.columns

    def segments_of(self, column: str) -> list[Any]:
        return [s for s in self.segments if column in s.columns]

    def key_types_json(self) -> dict[str, str]:
        return {c: values.serialize_type(t) for c, t in self.key_types.items()}

    @staticmethod
    def key_types_from_json(raw: dict) -> dict[str, pa.DataType]:
        if not raw["columns"]:  # lakeseek never commits an index of no column: a forged or damaged entry
            raise ValueError("the root indexes no column")
        return {c: values.deserialize_type(t) for c, t in raw["columns"].items()}

    def check_segments(self) -> None:
        """ValueError when a segment names a column the index does not have."""
        if any(set(s.columns) - set(self.key_types) for s in self.segments):
            raise ValueError("a segment names a column the index does not have")


@dataclass(frozen=True)
class AppendSegments(ContentAction):
    """Segments of new files (a refresh) or of new columns (``key_types``: add_columns)."""

    name: ClassVar[str] = "add_segments"
    segments: tuple[Any, ...]
    key_types: dict[str, pa.DataType] = dataclasses.field(default_factory=dict)

    def apply_content(self, content: IndexContent) -> IndexContent:
        key_types = {**content.key_types, **self.key_types}
        return dataclasses.replace(content, key_types=key_types, segments=content.segments + self.segments)

    def describe(self) -> dict:
        return {"action": self.name, "files": sum(s.files for s in self.segments), "columns": list(self.key_types)}


@dataclass(frozen=True)
class ReplaceSegments(ContentAction):
    """``replaced`` segments merged into ``merged`` (an optimize), put where the first of them was."""

    name: ClassVar[str] = "merge_segments"
    replaced: tuple[Any, ...]
    merged: tuple[Any, ...]

    def apply_content(self, content: IndexContent) -> IndexContent:
        first = content.segments.index(self.replaced[0])
        kept = [s for s in content.segments if s not in self.replaced]
        position = sum(1 for s in content.segments[:first] if s not in self.replaced)
        return dataclasses.replace(content, segments=(*kept[:position], *self.merged, *kept[position:]))

    def describe(self) -> dict:
        return {"action": self.name, "replaced": len(self.replaced)}


@dataclass(frozen=True)
class SegmentsStillThere(Requirement):
    """The segments an optimize read are all still in the index."""

    segments: tuple[Any, ...]

    def holds(self, root: Root) -> bool:
        present = getattr(root.content, "segments", ())
        return all(segment in present for segment in self.segments)


def to_merge(segments: Sequence[Any], mode: str, removed: frozenset[int]) -> list[Any]:
    """The segments an optimize in ``mode`` merges (into one): none when it would change nothing.
    ``quick``: those after the first, when there are two; ``full``: all, when there are two or
    some files were tombstoned (whose entries it drops)."""
    chosen = list(segments[1:] if mode == "quick" else segments)
    if len(chosen) >= 2 or (mode != "quick" and chosen and removed):
        return chosen
    return []


def merged_per_column(
    content: SegmentedIndex, mode: str, removed: frozenset[int], merge: Callable[[list[Any]], Any | None]
) -> Change | None:
    """An optimize of a kind with one column per segment: for each column, the segments
    :func:`to_merge` chooses merged into ``merge(chosen)`` (None: no row left). None: nothing to do."""
    replaced: list[Any] = []
    merged: list[Any] = []
    for column in content.columns:
        chosen = to_merge(content.segments_of(column), mode, removed)
        if chosen:
            replaced.extend(chosen)
            result = merge(chosen)
            merged.extend([] if result is None else [result])
    if not replaced:
        return None
    return Change((ReplaceSegments(tuple(replaced), tuple(merged)),), (SegmentsStillThere(tuple(replaced)),))
