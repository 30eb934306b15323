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

from lakeseek.cost import Cost, Estimate
from lakeseek.exceptions import LakeseekError
from lakeseek.expressions.like import like_prefix
from lakeseek.format.bloom import BITS_PER_KEY, FALSE_POSITIVE_RATE
from lakeseek.format.lineage import Lineage
from lakeseek.format.root import Root
from lakeseek.io import Storage
from lakeseek.kinds.base import (
    Change,
    Hypothesis,
    IndexKind,
    Job,
    Pattern,
    Values,
    check_options,
    check_whole_number,
)
from lakeseek.kinds.file_keys import indexed_columns
from lakeseek.kinds.segments import AppendSegments, ReplaceSegments, SegmentsStillThere, to_merge
from lakeseek.kinds.skipping.build import build_segment, merge_segments
from lakeseek.kinds.skipping.content import SketchSegment, SkippingConfig, SkippingIndex
from lakeseek.kinds.skipping.reader import SkippingReader

MAX_VALUE_LIST = 4096


class SkippingKind(IndexKind):
    """Options: ``bloom`` (a bloom filter per file and column, for = and IN; default True),
    ``value_list`` (files with at most this many distinct values keep them exactly instead of a
    bloom filter; default 16, 0 for never) and ``row_groups`` (sketch each row group of a file,
    so that reads skip row groups too; default False)."""

    name = "skipping"

    def configure(self, options: Mapping[str, Any]) -> SkippingConfig:
        check_options(self.name, options, ("bloom", "value_list", "row_groups"))
        config = SkippingConfig(**options)
        for name in ("bloom", "row_groups"):
            if not isinstance(getattr(config, name), bool):
                raise LakeseekError(f"{name} must be true or false, not {getattr(config, name)!r}")
        check_whole_number("value_list", config.value_list, 0, MAX_VALUE_LIST)
        return config

    def check_columns(self, names: list[str], schema: pa.Schema, partition_columns: tuple[str, ...]) -> list[str]:
        return [column.name for column in indexed_columns(names, schema, partition_columns)]

    def what_if(self, config: SkippingConfig, hypothesis: Hypothesis) -> Estimate | str:
        """One read of the sketches' bounds (and, for values, their bloom filters); a range
        leaves the min/max floor, values the files holding them plus the bloom filters'
        false positives among the rest of the floor."""
        condition = hypothesis.condition
        if isinstance(condition, Pattern) and not like_prefix(condition.pattern):
            return f"LIKE '{condition.pattern}' on '{condition.column}' has no literal prefix for the sketches"
        bounds = hypothesis.files * (2 * hypothesis.key_bytes + 1)
        if not (isinstance(condition, Values) and hypothesis.keys):
            return Estimate(hypothesis.bounded, Cost(1, bounds))
        members = hypothesis.entries * BITS_PER_KEY / 8 if config.bloom else 0.0
        missed = FALSE_POSITIVE_RATE if config.bloom else 1.0
        candidates = hypothesis.holding + missed * max(hypothesis.bounded - hypothesis.holding, 0.0)
        return Estimate(candidates, Cost(1, bounds + members))

    def decode(self, raw: dict) -> SkippingIndex:
        return SkippingIndex.from_json(raw)

    def reader(self, storage: Storage, index_dir: str, root: Root) -> SkippingReader:
        return SkippingReader(storage, index_dir, root)

    def build(self, job: Job, config: SkippingConfig, columns: list[str], files: Lineage) -> SkippingIndex:
        indexed = indexed_columns(columns, job.schema, job.partition_columns)
        segment = build_segment(job, config, indexed, files)
        return SkippingIndex(config, {c.name: c.key_type for c in indexed}, _written(segment))

    def add_columns(self, job: Job, content: SkippingIndex, columns: list[str], files: Lineage) -> Change:
        indexed = indexed_columns(columns, job.schema, job.partition_columns)
        segment = build_segment(job, content.config, indexed, files)
        return Change((AppendSegments(_written(segment), {c.name: c.key_type for c in indexed}),))

    def add_files(self, job: Job, content: SkippingIndex, files: Lineage) -> Change:
        indexed = indexed_columns(list(content.columns), job.schema, job.partition_columns)
        segment = build_segment(job, content.config, indexed, files)
        return Change((AppendSegments(_written(segment)),))

    def optimize(self, job: Job, content: SkippingIndex, mode: str, removed: frozenset[int]) -> Change | None:
        chosen = to_merge(content.segments, mode, removed)
        if not chosen:
            return None
        files = job.files
        merged = merge_segments(job.storage, files.index_dir, files.data_dir, chosen, content.key_types, removed)
        return Change((ReplaceSegments(tuple(chosen), _written(merged)),), (SegmentsStillThere(tuple(chosen)),))


def _written(segment: SketchSegment | None) -> tuple[SketchSegment, ...]:
    """A build's segment, left out when it sketches no file."""
    return (segment,) if segment is not None and segment.rows else ()


__all__ = ["SkippingIndex", "SkippingKind"]
