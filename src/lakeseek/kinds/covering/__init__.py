"""The ``covering`` kind: Hyperspace's covering index, which answers queries without the lake.

For each indexed column, a copy of the lake's rows (every indexed column and the ``include``
ones, with the data file each row came from) sorted by that column's key into row groups
(:mod:`.build`). A lookup finds the row groups a condition's keys can be in from the root
alone, and reads only those (:mod:`.reader`): the files holding a match for planning, or the
rows themselves for a read whose columns the index carries, which then opens no data file
but those added or rewritten since indexing. The lineage per row keeps this exact: rows of
removed or rewritten files are left out, and a full optimize drops them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from lakeseek.cost import Estimate
from lakeseek.exceptions import LakeseekError
from lakeseek.expressions.binding import resolve_column
from lakeseek.format.lineage import Lineage
from lakeseek.format.root import Root
from lakeseek.io import Storage
from lakeseek.kinds.base import (
    Change,
    Hypothesis,
    IndexKind,
    Job,
    check_options,
    check_whole_number,
    chunk_lookup_estimate,
)
from lakeseek.kinds.covering.build import build_segments, merge_segments
from lakeseek.kinds.covering.content import CoveringConfig, CoveringIndex
from lakeseek.kinds.covering.reader import CoveringReader
from lakeseek.kinds.file_keys import indexed_columns
from lakeseek.kinds.segments import AppendSegments, merged_per_column

logger = logging.getLogger(__name__)

MAX_CHUNK_ROWS = 1 << 20


class CoveringKind(IndexKind):
    """Options: ``include`` (columns carried beside the indexed ones: a list, or text with
    commas) and ``chunk_rows`` (rows per row group, the unit a lookup reads; default 8,192)."""

    name = "covering"
    carries_rows = True

    def configure(self, options: Mapping[str, Any]) -> CoveringConfig:
        check_options(self.name, options, ("include", "chunk_rows"))
        include = options.get("include", ())
        if isinstance(include, str):
            include = [name.strip() for name in include.split(",") if name.strip()]
        if not isinstance(include, list | tuple) or not all(isinstance(name, str) for name in include):
            raise LakeseekError(f"include must be a list of column names, not {include!r}")
        config = CoveringConfig(tuple(include), options.get("chunk_rows", CoveringConfig.chunk_rows))
        check_whole_number("chunk_rows", config.chunk_rows, 1, MAX_CHUNK_ROWS)
        return config

    def check_columns(self, names: list[str], schema: pa.Schema, partition_columns: tuple[str, ...]) -> list[str]:
        return [column.name for column in indexed_columns(names, schema, partition_columns)]

    def config_for(self, config: CoveringConfig, schema: pa.Schema) -> CoveringConfig:
        names = {name.lower() for name in schema.names}
        kept = tuple(name for name in config.include if name.lower() in names)
        for name in config.include:
            if name not in kept:
                logger.warning("column '%s' is no longer the lake's, the index no longer carries it", name)
        return dataclasses.replace(config, include=kept)

    def stored_columns(self, config: CoveringConfig, columns: list[str]) -> list[str]:
        return [*columns, *config.include]

    def what_if(self, config: CoveringConfig, hypothesis: Hypothesis) -> Estimate:
        return chunk_lookup_estimate(hypothesis, config.chunk_rows, hypothesis.row_bytes)

    def decode(self, raw: dict) -> CoveringIndex:
        return CoveringIndex.from_json(raw)

    def reader(self, storage: Storage, index_dir: str, root: Root) -> CoveringReader:
        return CoveringReader(storage, index_dir, root)

    def build(self, job: Job, config: CoveringConfig, columns: list[str], files: Lineage) -> CoveringIndex:
        indexed = indexed_columns(columns, job.schema, job.partition_columns)
        include = tuple(dict.fromkeys(resolve_column(name, job.schema).name for name in config.include))
        carried = _carried([c.name for c in indexed], include)
        segments = build_segments(job, indexed, carried, config.chunk_rows, files)
        return CoveringIndex(config, {c.name: c.key_type for c in indexed}, tuple(segments), include)

    def add_columns(self, job: Job, content: CoveringIndex, columns: list[str], files: Lineage) -> Change:
        indexed = indexed_columns(columns, job.schema, job.partition_columns)
        carried = _carried([*content.columns, *(c.name for c in indexed)], content.include)
        segments = build_segments(job, indexed, carried, content.config.chunk_rows, files)
        return Change((AppendSegments(tuple(segments), {c.name: c.key_type for c in indexed}),))

    def add_files(self, job: Job, content: CoveringIndex, files: Lineage) -> Change:
        indexed = indexed_columns(list(content.columns), job.schema, job.partition_columns)
        carried = _carried(list(content.columns), content.include)
        segments = build_segments(job, indexed, carried, content.config.chunk_rows, files)
        return Change((AppendSegments(tuple(segments)),))

    def optimize(self, job: Job, content: CoveringIndex, mode: str, removed: frozenset[int]) -> Change | None:
        return merged_per_column(
            content,
            mode,
            removed,
            lambda chosen: merge_segments(job.storage, job.files, chosen, removed, content.config.chunk_rows),
        )


def _carried(indexed: list[str], include: tuple[str, ...]) -> list[str]:
    return list(dict.fromkeys([*indexed, *include]))


__all__ = ["CoveringIndex", "CoveringKind"]
