"""The ``sorted`` kind: the paper's exact value -> file index.

Per column, index files of ``(key, file_id[, row_group])`` entries sorted by key, each
covering a key range no other file of its segment overlaps (:mod:`.index_file`); a lookup
reads a footer and one chunk (:mod:`.reader`). ``create`` and a full refresh build them with
Algorithm 1 (:mod:`.build`), an incremental refresh adds an increment with bloom filters,
and optimize folds increments in with Algorithm 2 (:mod:`.fold`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from lakeseek.cost import Estimate
from lakeseek.format.lineage import Lineage
from lakeseek.format.root import Root
from lakeseek.io import Storage
from lakeseek.kinds.base import (
    Change,
    Hypothesis,
    IndexKind,
    Job,
    OperationFiles,
    check_options,
    check_whole_number,
    chunk_lookup_estimate,
)
from lakeseek.kinds.file_keys import indexed_columns
from lakeseek.kinds.sorted_index.actions import AddColumns, AppendSegments, ReplaceSegments, SegmentsStartWith
from lakeseek.kinds.sorted_index.build import IndexJob, index_file_prefix
from lakeseek.kinds.sorted_index.content import ColumnIndex, IndexConfig, SortedIndex
from lakeseek.kinds.sorted_index.filters import read_filter_bytes, write_filters
from lakeseek.kinds.sorted_index.fold import fold_increments, merge_increments
from lakeseek.kinds.sorted_index.index_file import DEFAULT_CHUNK_ROWS, read_footer
from lakeseek.kinds.sorted_index.reader import SortedReader

# An entry's file id, as the what-if estimate counts it.
FILE_ID_BYTES = 4
# Index entries per index file (one write task each); fewer files when the lake is small.
ENTRIES_PER_INDEX_FILE = 4_000_000
# A chunk is read whole by a lookup and an index file is written by one task: bounds that
# keep both within one machine's memory.
MAX_CHUNK_ROWS = 1 << 26
MAX_ENTRIES_PER_INDEX_FILE = 1 << 40
_LIMITS = {"chunk_rows": MAX_CHUNK_ROWS, "entries_per_index_file": MAX_ENTRIES_PER_INDEX_FILE}


class SortedKind(IndexKind):
    """Options: ``chunk_rows`` (entries per chunk, the unit a lookup reads; default 32,768),
    ``entries_per_index_file`` (sets how many index files, and write tasks, a column gets;
    default 4,000,000) and ``row_groups`` (entries name the data files' row groups, so reads
    skip those that cannot match; default False)."""

    name = "sorted"

    def configure(self, options: Mapping[str, Any]) -> IndexConfig:
        check_options(self.name, options, ("chunk_rows", "entries_per_index_file", "row_groups"))
        config = IndexConfig(
            options.get("chunk_rows", DEFAULT_CHUNK_ROWS),
            options.get("entries_per_index_file", ENTRIES_PER_INDEX_FILE),
            bool(options.get("row_groups", False)),
        )
        for option, limit in _LIMITS.items():
            check_whole_number(option, getattr(config, option), 1, limit)
        return config

    def check_columns(self, names: list[str], schema: pa.Schema, partition_columns: tuple[str, ...]) -> list[str]:
        return [column.name for column in indexed_columns(names, schema, partition_columns)]

    def what_if(self, config: IndexConfig, hypothesis: Hypothesis) -> Estimate:
        return chunk_lookup_estimate(hypothesis, config.chunk_rows, hypothesis.key_bytes + FILE_ID_BYTES)

    def decode(self, raw: dict) -> SortedIndex:
        return SortedIndex.from_json(raw)

    def reader(self, storage: Storage, index_dir: str, root: Root) -> SortedReader:
        return SortedReader(storage, index_dir, root)

    def build(self, job: Job, config: IndexConfig, columns: list[str], files: Lineage) -> SortedIndex:
        return SortedIndex(config, self._index(job, config, columns, files, bloom=False))

    def add_columns(self, job: Job, content: SortedIndex, columns: list[str], files: Lineage) -> Change:
        return Change((AddColumns(self._index(job, content.config, columns, files, bloom=False)),))

    def add_files(self, job: Job, content: SortedIndex, files: Lineage) -> Change:
        columns = indexed_columns(list(content.columns), job.schema, job.partition_columns)
        segments = IndexJob(job, content.config).run(columns, files, bloom=True)
        return Change((AppendSegments(segments),))

    def _index(
        self, job: Job, config: IndexConfig, names: list[str], files: Lineage, *, bloom: bool
    ) -> dict[str, ColumnIndex]:
        columns = indexed_columns(names, job.schema, job.partition_columns)
        segments = IndexJob(job, config).run(columns, files, bloom=bloom)
        return {c.name: ColumnIndex(c.name, c.key_type, (segments[c.name],)) for c in columns}

    def optimize(self, job: Job, content: SortedIndex, mode: str, removed: frozenset[int]) -> Change | None:
        if mode == "quick":
            chosen = {name: index for name, index in content.indexes.items() if len(index.segments) > 2}
        elif any(len(index.segments) > 1 for index in content.indexes.values()) or removed:
            chosen = dict(content.indexes)
        else:
            return None
        if not chosen:
            return None
        actions, requirements = [], []
        for number, (name, index) in enumerate(chosen.items()):
            prefix = index_file_prefix(job.files.data_dir, number)
            if mode == "quick":
                merged = merge_increments(job.runner, job.files.index, prefix, index, removed, content.config)
                segments = index.segments[:1] + ((merged,) if merged.files else ())
            else:
                segments = (fold_increments(job.runner, job.files.index, prefix, index, removed, content.config),)
            actions.append(ReplaceSegments(name, len(index.segments), segments))
            requirements.append(SegmentsStartWith(name, index.segments))
        return Change(tuple(actions), tuple(requirements))

    def complete(self, content: SortedIndex, previous: SortedIndex | None, files: OperationFiles) -> SortedIndex:
        """``content`` with an increment filter file covering exactly its increments' index files."""
        increments = content.increment_files()
        if not increments:
            return dataclasses.replace(content, increment_filters=None)
        known = {}
        if previous is not None and previous.increment_filters is not None:
            if set(increments) == set(previous.increment_files()):
                return dataclasses.replace(content, increment_filters=previous.increment_filters)
            known = read_filter_bytes(files.storage, f"{files.index_dir}/{previous.increment_filters.path}")
        blooms = {}
        for path, (column, info) in increments.items():
            if path in known:
                blooms[path] = known[path]
                continue
            footer = read_footer(
                files.storage, f"{files.index_dir}/{path}", info, column.key_type, content.config.row_groups
            )
            if footer.bloom is not None:
                blooms[path] = footer.bloom.to_bytes()
        return dataclasses.replace(content, increment_filters=write_filters(files, blooms))


__all__ = ["MAX_CHUNK_ROWS", "SortedIndex", "SortedKind"]
