"""The sorted kind's actions on its part of a root, and what they require (see
:mod:`lakeseek.format.actions`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from lakeseek.format.actions import ContentAction, Requirement
from lakeseek.format.root import Root
from lakeseek.kinds.sorted_index.content import ColumnIndex, Segment, SortedIndex


@dataclass(frozen=True)
class AddColumns(ContentAction):
    name: ClassVar[str] = "add_columns"
    indexes: dict[str, ColumnIndex]

    def apply_content(self, content: SortedIndex) -> SortedIndex:
        return dataclasses.replace(content, indexes={**content.indexes, **self.indexes})

    def describe(self) -> dict:
        return {"action": self.name, "columns": list(self.indexes)}


@dataclass(frozen=True)
class AppendSegments(ContentAction):
    """Each column's increment (an incremental refresh); an empty one adds nothing."""

    name: ClassVar[str] = "append_segments"
    segments: dict[str, Segment]

    def apply_content(self, content: SortedIndex) -> SortedIndex:
        indexes = dict(content.indexes)
        for name, segment in self.segments.items():
            if segment.files:
                indexes[name] = dataclasses.replace(indexes[name], segments=(*indexes[name].segments, segment))
        return dataclasses.replace(content, indexes=indexes)

    def describe(self) -> dict:
        return {
            "action": self.name,
            "index_files": {name: len(segment.files) for name, segment in self.segments.items()},
        }


@dataclass(frozen=True)
class ReplaceSegments(ContentAction):
    """A column's first ``replaced`` segments replaced by ``segments`` (an optimize); the
    segments added since it read them stay after."""

    name: ClassVar[str] = "replace_segments"
    column: str
    replaced: int
    segments: tuple[Segment, ...]

    def apply_content(self, content: SortedIndex) -> SortedIndex:
        index = content.indexes[self.column]
        replaced = dataclasses.replace(index, segments=self.segments + index.segments[self.replaced :])
        return dataclasses.replace(content, indexes={**content.indexes, self.column: replaced})

    def describe(self) -> dict:
        return {"action": self.name, "column": self.column, "replaced": self.replaced, "segments": len(self.segments)}


@dataclass(frozen=True)
class SegmentsStartWith(Requirement):
    """The segments of a column an optimize read are still its first ones."""

    column: str
    segments: tuple[Segment, ...]

    def holds(self, root: Root) -> bool:
        index = root.content.indexes.get(self.column)
        return index is not None and index.segments[: len(self.segments)] == self.segments
