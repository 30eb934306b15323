"""The ``skipping`` kind: per-file sketches of each column (min/max, NULLs, a value list or a
bloom filter), Hyperspace's data-skipping index evaluated in-process.

One Parquet row per data file (:mod:`.sketches`), in segments: ``create`` writes one, each
refresh one for its new files, optimize merges them (:mod:`.build`). A lookup tests every
file's sketch at once with Arrow and NumPy (:mod:`.reader`). Small and quick to build; it
narrows well what the lake's layout clusters (ranges on a sorted or time column) and values
of low cardinality, and leaves more files than the sorted index for scattered needles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from lakeseek.exceptions import LakeseekError
from lakeseek.format.lineage import Lineage
from lakeseek.format.root import Root
from lakeseek.io import Storage
from lakeseek.kinds.base import Change, IndexKind, Job
from lakeseek.kinds.file_keys import indexed_columns
from lakeseek.kinds.skipping.actions import AppendSketches, ReplaceSketches, SketchesStillThere
from lakeseek.kinds.skipping.build import build_segment, merge_segments
from lakeseek.kinds.skipping.content import SkippingConfig, SkippingIndex
from lakeseek.kinds.skipping.reader import SkippingReader

MAX_VALUE_LIST = 4096


class SkippingKind(IndexKind):
    """Options: ``bloom`` (a bloom filter per file and column, for = and IN; default True) and
    ``value_list`` (files with at most this many distinct values keep them exactly instead of a
    bloom filter; default 16, 0 for never)."""

    name = "skipping"

    def configure(self, options: Mapping[str, Any]) -> SkippingConfig:
        unknown = sorted(set(options) - {"bloom", "value_list"})
        if unknown:
            raise LakeseekError(f"the skipping index has no option {unknown[0]!r} (its options: bloom, value_list)")
        config = SkippingConfig(**options)
        if not isinstance(config.bloom, bool):
            raise LakeseekError(f"bloom must be true or false, not {config.bloom!r}")
        value_list = config.value_list
        if not isinstance(value_list, int) or isinstance(value_list, bool) or not 0 <= value_list <= MAX_VALUE_LIST:
            raise LakeseekError(f"value_list must be a whole number from 0 to {MAX_VALUE_LIST:,}, not {value_list!r}")
        return config

    def check_columns(self, names: list[str], schema: pa.Schema, partition_columns: tuple[str, ...]) -> list[str]:
        return [column.name for column in indexed_columns(names, schema, partition_columns)]

    def decode(self, raw: dict) -> SkippingIndex:
        return SkippingIndex.from_json(raw)

    def reader(self, storage: Storage, index_dir: str, root: Root) -> SkippingReader:
        return SkippingReader(storage, index_dir, root)

    def build(self, job: Job, config: SkippingConfig, columns: list[str], files: Lineage) -> SkippingIndex:
        indexed = indexed_columns(columns, job.schema, job.partition_columns)
        segment = build_segment(job, config, indexed, files)
        return SkippingIndex(config, {c.name: c.key_type for c in indexed}, (segment,) if segment.files else ())

    def add_columns(self, job: Job, content: SkippingIndex, columns: list[str], files: Lineage) -> Change:
        indexed = indexed_columns(columns, job.schema, job.partition_columns)
        segment = build_segment(job, content.config, indexed, files)
        return Change((AppendSketches(segment if segment.files else None, {c.name: c.key_type for c in indexed}),))

    def add_files(self, job: Job, content: SkippingIndex, files: Lineage) -> Change:
        indexed = indexed_columns(list(content.columns), job.schema, job.partition_columns)
        segment = build_segment(job, content.config, indexed, files)
        return Change((AppendSketches(segment if segment.files else None),))

    def optimize(self, job: Job, content: SkippingIndex, mode: str, removed: frozenset[int]) -> Change | None:
        start = 1 if mode == "quick" else 0
        chosen = content.segments[start:]
        if (mode == "quick" and len(chosen) < 2) or (mode != "quick" and len(chosen) < 2 and not removed):
            return None
        merged = merge_segments(
            job.storage, job.files.index_dir, job.files.data_dir, list(chosen), content.key_types, removed
        )
        return Change((ReplaceSketches(start, chosen, merged),), (SketchesStillThere(start, chosen),))


__all__ = ["SkippingIndex", "SkippingKind"]
