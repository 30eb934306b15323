"""Writing sketch segments: a build over some lake files, and a merge of segments (optimize).

A build is one stage of tasks (:mod:`lakeseek.engine.runner`): each reads a group of lake
files once, for every column, sketches each file and spills its rows; the driver puts the
rows in file order into one segment file. No sort or shuffle of keys: a file's sketch is
small, which is why this kind builds faster than the sorted one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.format.hashing import distinct_estimate, smallest_hashes
from lakeseek.format.lineage import Lineage
from lakeseek.io import Stamp, Storage
from lakeseek.kinds.base import FILE_ID, KEY, Job
from lakeseek.kinds.file_keys import IndexedColumn, LakeScan, file_groups, read_spill, scratch_cleared, write_spill
from lakeseek.kinds.skipping.content import SketchSegment, SkippingConfig
from lakeseek.kinds.skipping.sketches import (
    BOUNDS,
    MEMBERS,
    column_bytes,
    encode_segment,
    read_segment,
    rows_table,
    sketch,
    sketch_fields,
    sketch_schema,
    summarize,
    values_in_files,
)
from lakeseek.lake.files import reading_data_files


def segment_path(data_dir: str) -> str:
    return f"{data_dir}/sketches-{uuid.uuid4().hex}.parquet"


def build_segment(job: Job, config: SkippingConfig, columns: list[IndexedColumn], files: Lineage) -> SketchSegment:
    """A segment sketching ``columns`` of ``files``."""
    storage = job.storage
    spec = _SketchSpec(LakeScan.of(job, columns), config)
    with scratch_cleared(job):
        groups = file_groups(files, job.runner.parallelism) if len(files) else []
        spills = job.runner.run("sketching the lake", [(spec, group) for group in groups], _sketch_task)
        tables = [read_spill(storage, spill["path"]) for spill in spills]
    key_types = [column.key_type for column in columns]
    table = pa.concat_tables(tables) if tables else sketch_schema(key_types).empty_table()
    table = table.sort_by(FILE_ID)
    distinct = [
        distinct_estimate(smallest_hashes([np.array(spill["smallest"][n], np.uint64) for spill in spills]))
        for n in range(len(columns))
    ]
    return _written(
        storage, job.files.index_dir, job.files.data_dir, table, [c.name for c in columns], key_types, distinct
    )


def merge_segments(
    storage: Storage,
    index_dir: str,
    data_dir: str,
    segments: list[SketchSegment],
    key_types: dict[str, pa.DataType],
    removed: frozenset[int],
) -> SketchSegment | None:
    """One segment holding every row of ``segments`` but those of ``removed`` files, for
    every column any of them has. A file some segment sketches without a column gets an
    *unknown* sketch of it (always read). None: no row is left."""
    tables = [read_segment(storage, f"{index_dir}/{s.path}", s.size, s.files, None) for s in segments]
    ids = np.unique(np.concatenate([t.column(FILE_ID).to_numpy() for t in tables] or [np.zeros(0, np.int32)]))
    ids = ids[~np.isin(ids, np.fromiter(removed, np.int64, len(removed)))]
    if not len(ids):
        return None
    columns = list(dict.fromkeys(c for s in segments for c in s.columns))
    merged = {FILE_ID: pa.array(ids, pa.int32())}
    per_values = []
    for number, column in enumerate(columns):
        fields = sketch_fields(number, key_types[column])
        having = [(s, t) for s, t in zip(segments, tables, strict=True) if column in s.columns]
        parts = []
        for segment, table in having:
            own = segment.columns.index(column)
            parts.append(
                pa.table(
                    [table.column(FILE_ID), *(table.column(f"{part}_{own}") for part in (*BOUNDS, *MEMBERS))],
                    names=[FILE_ID, *(f.name for f in fields)],
                )
            )
        rows = pa.concat_tables(parts)
        # A file rewritten in place keeps its id only when it was not removed: one row per id.
        positions = pc.index_in(pa.array(ids, pa.int32()), value_set=rows.column(FILE_ID))
        for field in fields:
            merged[field.name] = rows.column(field.name).take(positions).cast(field.type)
        files = sum(s.files for s, _ in having)
        per_value = sum(s.summary(column).files_per_value * s.files for s, _ in having) / max(files, 1)
        per_values.append(per_value)
    table = pa.table(merged)
    distinct = [values_in_files(table, n) / max(per_value, 1.0) for n, per_value in enumerate(per_values)]
    return _written(storage, index_dir, data_dir, table, columns, [key_types[c] for c in columns], distinct)


def _written(
    storage: Storage,
    index_dir: str,
    data_dir: str,
    table: pa.Table,
    columns: list[str],
    key_types: list[pa.DataType],
    distinct: list[float],
) -> SketchSegment:
    """``table`` written as a segment of ``columns``, with their summaries."""
    data = encode_segment(table)
    sizes = column_bytes(data)
    summaries = tuple(summarize(table, n, key_types[n], distinct[n], sizes) for n in range(len(columns)))
    path = segment_path(data_dir)
    storage.write(f"{index_dir}/{path}", data)
    return SketchSegment(path, len(data), table.num_rows, tuple(columns), summaries)


# -- tasks (run on Spark executors, or in process) -------------------------------------
@dataclass(frozen=True)
class _SketchSpec:
    scan: LakeScan
    config: SkippingConfig


def _sketch_task(spec: _SketchSpec, files: list[tuple[int, str, Stamp]]) -> list[dict]:
    reader, storage, scratch = spec.scan.open()
    columns = spec.scan.columns
    file_ids, rows = [], []
    hashes: list[list[np.ndarray]] = [[] for _ in columns]
    for file_id, path, stamp in files:
        with reading_data_files(reader.source, [path]):  # a damaged file: an error naming it
            distinct = reader.distinct_keys(path, stamp, columns)
        row = []
        for number, column in enumerate(columns):
            found, hashed = sketch(distinct[column.name].column(KEY).combine_chunks(), spec.config)
            row.append(found)
            hashes[number].append(hashed)
        file_ids.append(file_id)
        rows.append(row)
    table = rows_table(file_ids, rows, [column.key_type for column in columns])
    path = f"{scratch}/sketches-{uuid.uuid4().hex}.arrow"
    write_spill(storage, path, table)
    return [{"path": path, "smallest": [smallest_hashes(h).tolist() for h in hashes]}]
