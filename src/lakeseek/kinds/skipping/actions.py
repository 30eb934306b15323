"""The skipping kind's actions on its part of a root, and what they require (see
:mod:`lakeseek.format.actions`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa

from lakeseek.format.actions import ContentAction, Requirement
from lakeseek.format.root import Root
from lakeseek.kinds.skipping.content import SketchSegment, SkippingIndex


@dataclass(frozen=True)
class AppendSketches(ContentAction):
    """A segment of new files (a refresh) or of new columns (``key_types``: add_columns)."""

    name: ClassVar[str] = "append_sketches"
    segment: SketchSegment | None
    key_types: dict[str, pa.DataType] = dataclasses.field(default_factory=dict)

    def apply_content(self, content: SkippingIndex) -> SkippingIndex:
        segments = content.segments if self.segment is None else (*content.segments, self.segment)
        return dataclasses.replace(content, key_types={**content.key_types, **self.key_types}, segments=segments)

    def describe(self) -> dict:
        files = 0 if self.segment is None else self.segment.files
        return {"action": self.name, "files": files, "columns": list(self.key_types)}


@dataclass(frozen=True)
class ReplaceSketches(ContentAction):
    """Segments ``start`` to ``start + len(replaced)`` merged into ``segment`` (an optimize)."""

    name: ClassVar[str] = "replace_sketches"
    start: int
    replaced: tuple[SketchSegment, ...]
    segment: SketchSegment | None

    def apply_content(self, content: SkippingIndex) -> SkippingIndex:
        merged = () if self.segment is None else (self.segment,)
        end = self.start + len(self.replaced)
        return dataclasses.replace(content, segments=content.segments[: self.start] + merged + content.segments[end:])

    def describe(self) -> dict:
        return {"action": self.name, "replaced": len(self.replaced)}


@dataclass(frozen=True)
class SketchesStillThere(Requirement):
    """The segments an optimize read are still where it read them."""

    start: int
    segments: tuple[SketchSegment, ...]

    def holds(self, root: Root) -> bool:
        segments = getattr(root.content, "segments", ())
        return tuple(segments[self.start : self.start + len(self.segments)]) == self.segments
