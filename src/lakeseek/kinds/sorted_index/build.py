"""The index-building job (the paper's Algorithm 1), run by a :mod:`~lakeseek.engine.runner`.

Two stages of Arrow-native tasks (pyarrow does the per-row work; Spark's row-based sort
and its JVM-to-Python transfer would cost several times more):

0. the driver samples keys from a few files and picks range boundaries per column;
1. *scan*: each task reads a group of lake files once, for all columns, and emits each
   file's distinct ``(value, file_id)`` pairs, split by key range into spill files;
2. *write*: each task takes one key range of one column, sorts its pairs and writes one
   index file of bounded chunks (so index files cover disjoint, ordered key ranges).

The result is one segment per column: a whole index when ``create`` runs it over the lake,
an increment (with bloom filters) when a refresh runs it over new files. Everything is
written under the operation's id (``data/<id>/``, spills in ``_tmp/<id>/``), so files of
an operation that never commits are known and vacuumed.
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections import defaultdict
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.exceptions import LakeseekError
from lakeseek.format import values
from lakeseek.format.lineage import Lineage
from lakeseek.format.values import sort_key
from lakeseek.io import Address, Stamp
from lakeseek.io.spills import read_spill, write_spill
from lakeseek.kinds.base import Job
from lakeseek.kinds.file_keys import (
    FileKeyReader,
    IndexedColumn,
    LakeScan,
    file_groups,
    scratch_cleared,
)
from lakeseek.kinds.sorted_index.content import IndexConfig, Segment
from lakeseek.kinds.sorted_index.index_file import (
    FILE_ID,
    KEY,
    ROW_GROUP,
    IndexFileInfo,
    entry_order,
    entry_schema,
    write_index_file,
)
from lakeseek.lake.files import reading_data_files


def index_file_prefix(data_dir: str, column_number: int) -> str:
    """Where an operation writes the index files of its ``column_number``-th column (every
    operation names them so: ``data/<operation>/c<n>-<uuid>.parquet``)."""
    return f"{data_dir}/c{column_number}"


SAMPLE_FILES = 24


@dataclass(frozen=True)
class IndexJob:
    """Index some lake files into one new segment per column."""

    job: Job
    config: IndexConfig

    def run(self, columns: list[IndexedColumn], files: Lineage, *, bloom: bool) -> dict[str, Segment]:
        with scratch_cleared(self.job):
            return self._run(columns, files, bloom)

    def _run(self, columns: list[IndexedColumn], files: Lineage, bloom: bool) -> dict[str, Segment]:
        if not len(files):
            return {c.name: Segment(()) for c in columns}
        job = self.job
        boundaries = self._boundaries(columns, files)
        scan = _ScanSpec(
            LakeScan.of(job, columns),
            {c.name: [values.encode(b, c.key_type) for b in boundaries[c.name]] for c in columns},
            self.config.row_groups,
        )
        groups = file_groups(files, job.runner.parallelism)
        spills = job.runner.run("scanning the lake", [(scan, group) for group in groups], _scan_task)
        by_range: dict[tuple[int, int], list[str]] = defaultdict(list)
        for spill in spills:
            by_range[(spill["column"], spill["range"])].append(spill["path"])
        by_position = {c.position: c for c in columns}
        write_tasks = [
            (
                _WriteSpec(
                    job.files.index,
                    index_file_prefix(job.files.data_dir, position),
                    by_position[position],
                    self.config.chunk_rows,
                    bloom,
                ),
                paths,
            )
            for (position, _), paths in sorted(by_range.items())
        ]
        written = job.runner.run("writing index files", write_tasks, _write_task)
        segments = {}
        for column in columns:
            infos = sorted(
                (
                    IndexFileInfo.from_json(w["info"], column.key_type)
                    for w in written
                    if w["column"] == column.position
                ),
                key=lambda info: sort_key(info.min),
            )
            for before, after in itertools.pairwise(infos):
                if not sort_key(before.max) < sort_key(after.min):
                    raise LakeseekError(f"index files of '{column.name}' overlap; index not committed")
            segments[column.name] = Segment(tuple(infos))
        return segments

    def _boundaries(self, columns: list[IndexedColumn], files: Lineage) -> dict[str, list]:
        """Range boundaries per column, from the distinct keys of a few evenly spread files."""
        step = max(1, len(files) // SAMPLE_FILES)
        sampled = list(zip(files.paths[::step], files.stamps()[::step], strict=True))
        reader = FileKeyReader(self.job.source, self.job.schema, self.job.partition_columns)
        keys: dict[str, list[pa.Array]] = defaultdict(list)
        for path, stamp in sampled:
            with reading_data_files(self.job.source, [path]):
                distinct_keys = reader.distinct_keys(path, stamp, columns)
            for column, distinct in distinct_keys.items():
                keys[column].append(distinct.column(KEY).combine_chunks())
        scale = len(files) / len(sampled)
        boundaries = {}
        for column in columns:
            sample = pa.concat_arrays(keys[column.name]) if keys[column.name] else pa.array([], column.key_type)
            ranges = max(1, math.ceil(len(sample) * scale / self.config.entries_per_index_file))
            boundaries[column.name] = _quantiles(sample, ranges)
        return boundaries


def _quantiles(sample: pa.Array, ranges: int) -> list:
    """``ranges - 1`` increasing keys splitting the sample's non-null distinct keys evenly."""
    distinct = pc.unique(sample.drop_null())
    if ranges <= 1 or len(distinct) < 2:
        return []
    ordered = distinct.take(pc.sort_indices(distinct))
    picks = [values.key_of(ordered[len(ordered) * i // ranges], ordered.type) for i in range(1, ranges)]
    return [p for i, p in enumerate(picks) if i == 0 or sort_key(picks[i - 1]) < sort_key(p)]


# -- tasks (run on Spark executors, or in process) -------------------------------------
@dataclass(frozen=True)
class _ScanSpec:
    scan: LakeScan
    boundaries: dict[str, list]
    row_groups: bool


def _scan_task(spec: _ScanSpec, files: list[tuple[int, str, Stamp]]) -> list[dict]:
    reader, storage, scratch = spec.scan.open()
    source, columns = reader.source, spec.scan.columns
    found: dict[str, list[pa.Table]] = defaultdict(list)
    for file_id, path, stamp in files:
        with reading_data_files(source, [path]):  # a damaged file: an error naming it
            distinct_keys = reader.distinct_keys(path, stamp, columns, spec.row_groups)
        for column, distinct in distinct_keys.items():
            found[column].append(distinct.append_column(FILE_ID, pa.array([file_id] * len(distinct), pa.int32())))
    task = uuid.uuid4().hex
    spills = []
    for column in columns:
        key_type = column.key_type
        schema = entry_schema(key_type, spec.row_groups)
        entries = pa.concat_tables(found[column.name]).select(schema.names).cast(schema)
        ranges = _range_numbers(entries.column(KEY), [values.decode(b, key_type) for b in spec.boundaries[column.name]])
        for number in pc.unique(ranges).to_pylist():
            part = entries.filter(pc.equal(ranges, number))
            path = f"{scratch}/c{column.position}-r{number}-{task}.arrow"
            write_spill(storage, path, part)
            spills.append({"column": column.position, "range": number, "path": path})
    return spills


def _range_numbers(keys: pa.ChunkedArray, boundaries: list) -> pa.Array:
    """For each key, the number of boundaries <= it: its key range (NULL goes to range 0)."""
    numbers = pa.array([0] * len(keys), pa.int32())
    for boundary in boundaries:
        above = pc.fill_null(pc.greater_equal(keys, pa.scalar(boundary, keys.type)), False).cast(pa.int32())
        numbers = pc.add(numbers, above)
    return numbers.combine_chunks() if isinstance(numbers, pa.ChunkedArray) else numbers


@dataclass(frozen=True)
class _WriteSpec:
    index: Address
    prefix: str
    column: IndexedColumn
    chunk_rows: int
    bloom: bool


def _write_task(spec: _WriteSpec, spill_paths: list[str]) -> list[dict]:
    storage, index_dir = spec.index.open()
    tables = [read_spill(storage, path) for path in spill_paths]
    entries = pa.concat_tables(tables)
    order = pc.sort_indices(entries, sort_keys=entry_order(ROW_GROUP in entries.column_names))
    result = write_index_file(
        entries.take(order).to_batches(max_chunksize=spec.chunk_rows),
        spec.column.key_type,
        spec.chunk_rows,
        bloom=spec.bloom,
    )
    if result is None:
        return []
    data, info = result
    path = f"{spec.prefix}-{uuid.uuid4().hex}.parquet"
    storage.write(f"{index_dir}/{path}", data)
    return [{"column": spec.column.position, "info": {"path": path, **info}}]
