"""Writing sketch segments: a build over some lake files, and a merge of segments (optimize).

A build is one stage of tasks (:mod:`lakeseek.engine.runner`): each reads a group of lake
files once, for every column, sketches each file and spills its rows; the driver puts the
rows in file order into one segment file. No sort or shuffle of keys: a file's sketch is
small, which is why this kind builds faster than the sorted one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.format.footers import footer_crc32
from lakeseek.format.hashing import distinct_estimate, smallest_hashes
from lakeseek.format.lineage import Lineage
from lakeseek.io import Stamp, Storage
from lakeseek.io.spills import read_spill, write_spill
from lakeseek.kinds.base import FILE_ID, KEY, LOCATION_SHIFT, ROW_GROUP, Job
from lakeseek.kinds.file_keys import (
    FileKeyReader,
    IndexedColumn,
    LakeScan,
    file_groups,
    scratch_cleared,
)
from lakeseek.kinds.skipping.content import SketchSegment, SkippingConfig
from lakeseek.kinds.skipping.sketches import (
    BOUNDS,
    MEMBERS,
    column_bytes,
    encode_segment,
    locations,
    read_segment,
    rows_table,
    sketch,
    sketch_fields,
    sketch_schema,
    summarize,
    values_in_files,
)
from lakeseek.lake.files import reading_data_files

_PLACE = "place"  # a merge's key: a sketch row's location


def segment_path(data_dir: str) -> str:
    return f"{data_dir}/sketches-{uuid.uuid4().hex}.parquet"


def build_segment(job: Job, config: SkippingConfig, columns: list[IndexedColumn], files: Lineage) -> SketchSegment:
    """A segment sketching ``columns`` of ``files``."""
    storage = job.storage
    key_types = [column.key_type for column in columns]
    recorded, files = _recorded_sketches(job, config, columns, files)
    spec = _SketchSpec(LakeScan.of(job, columns), config)
    spills, tables = [], [recorded]
    if len(files):  # else no task, and no Spark started for none
        with scratch_cleared(job):
            groups = file_groups(files, job.runner.parallelism)
            spills = job.runner.run("sketching the lake", [(spec, group) for group in groups], _sketch_task)
            tables.extend(read_spill(storage, spill["path"]) for spill in spills)
    table = pa.concat_tables(tables).sort_by([(FILE_ID, "ascending"), (ROW_GROUP, "ascending")])
    distinct = [
        distinct_estimate(smallest_hashes([np.array(spill["smallest"][n], np.uint64) for spill in spills]))
        for n in range(len(columns))
    ]
    return _written(
        storage, job.files.index_dir, job.files.data_dir, table, [c.name for c in columns], key_types, distinct
    )


def _recorded_sketches(
    job: Job, config: SkippingConfig, columns: list[IndexedColumn], files: Lineage
) -> tuple[pa.Table, Lineage]:
    """Sketch rows of the files whose bounds the lake's own metadata records (a Delta or Iceberg
    table's statistics), made without reading them, and the files left to read. Only a sketch of
    a whole file's bounds alone is made so: a value list or bloom filter needs the file's values."""
    key_types = [column.key_type for column in columns]
    if config.bloom or config.value_list or config.row_groups or not len(files):
        return sketch_schema(key_types).empty_table(), files
    recorded = job.source.recorded_statistics(files.paths, job.schema)
    reader = FileKeyReader(job.source, job.schema, job.partition_columns)
    file_ids, rows = [], []
    for file_id, path in zip(files.ids, files.paths, strict=True):
        bounds = reader.recorded_bounds(path, recorded.get(path, {}), columns)
        if bounds is None:
            continue
        row = []
        for column in columns:
            keys, nulls = bounds[column.name]
            low, high = (keys[0], keys[1]) if len(keys) else (None, None)
            row.append({"min": low, "max": high, "nulls": nulls, "values": None, "bloom": None})
        file_ids.append(file_id)
        rows.append(row)
    places = [(file_id, 0) for file_id in file_ids]
    return rows_table(places, rows, key_types), files.without(frozenset(file_ids))


def merge_segments(
    storage: Storage,
    index_dir: str,
    data_dir: str,
    segments: list[SketchSegment],
    key_types: dict[str, pa.DataType],
    removed: frozenset[int],
) -> SketchSegment | None:
    """One segment holding every row of ``segments`` but those of ``removed`` files, for
    every column any of them has. A file (or row group) some segment sketches without a
    column gets an *unknown* sketch of it (always read). None: no row is left."""
    tables = [read_segment(storage, f"{index_dir}/{s.path}", s, None) for s in segments]
    places = np.unique(np.concatenate([locations(t) for t in tables] or [np.zeros(0, np.int64)]))
    gone = np.fromiter(removed, np.int64, len(removed))
    places = places[~np.isin(places >> LOCATION_SHIFT, gone)]
    if not len(places):
        return None
    columns = list(dict.fromkeys(c for s in segments for c in s.columns))
    merged = {
        FILE_ID: pa.array(places >> LOCATION_SHIFT, pa.int32()),
        ROW_GROUP: pa.array(places & ((1 << LOCATION_SHIFT) - 1), pa.int32()),
    }
    per_values = []
    for number, column in enumerate(columns):
        fields = sketch_fields(number, key_types[column])
        having = [(s, t) for s, t in zip(segments, tables, strict=True) if column in s.columns]
        parts = []
        for segment, table in having:
            own = segment.columns.index(column)
            parts.append(
                pa.table(
                    [pa.array(locations(table)), *(table.column(f"{part}_{own}") for part in (*BOUNDS, *MEMBERS))],
                    names=[_PLACE, *(f.name for f in fields)],
                )
            )
        rows = pa.concat_tables(parts)
        # A file rewritten in place keeps its id only when it was not removed: one row per place.
        positions = pc.index_in(pa.array(places), value_set=rows.column(_PLACE))
        for field in fields:
            merged[field.name] = rows.column(field.name).take(positions).cast(field.type)
        sketched = sum(s.rows for s, _ in having)
        per_value = sum(s.summary(column).files_per_value * s.rows for s, _ in having) / max(sketched, 1)
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
    files = len(pc.unique(table.column(FILE_ID)))
    return SketchSegment(path, len(data), table.num_rows, files, tuple(columns), summaries, footer_crc32(data))


# -- tasks (run on Spark executors, or in process) -------------------------------------
@dataclass(frozen=True)
class _SketchSpec:
    scan: LakeScan
    config: SkippingConfig


def _sketch_task(spec: _SketchSpec, files: list[tuple[int, str, Stamp]]) -> list[dict]:
    reader, storage, scratch = spec.scan.open()
    columns = spec.scan.columns
    places, rows = [], []
    hashes: list[list[np.ndarray]] = [[] for _ in columns]
    for file_id, path, stamp in files:
        with reading_data_files(reader.source, [path]):  # a damaged file: an error naming it
            distinct = reader.distinct_keys(path, stamp, columns, spec.config.row_groups)
        for row_group, keys in _by_row_group(distinct, columns, spec.config.row_groups):
            row = []
            for number, column in enumerate(columns):
                found, hashed = sketch(keys[column.name], spec.config)
                row.append(found)
                hashes[number].append(hashed)
            places.append((file_id, row_group))
            rows.append(row)
    table = rows_table(places, rows, [column.key_type for column in columns])
    path = f"{scratch}/sketches-{uuid.uuid4().hex}.arrow"
    write_spill(storage, path, table)
    return [{"path": path, "smallest": [smallest_hashes(h).tolist() for h in hashes]}]


def _by_row_group(
    distinct: dict[str, pa.Table], columns: tuple[IndexedColumn, ...], row_groups: bool
) -> Iterator[tuple[int, dict[str, pa.Array]]]:
    """A file's distinct keys per column, for the whole file (row group 0) or for each row group
    holding a row the lake keeps (every column has a key, NULL included, for each of those)."""
    if not row_groups:
        yield 0, {c.name: distinct[c.name].column(KEY).combine_chunks() for c in columns}
        return
    ordered = {}  # per column: its keys by row group, and where each row group's start
    for column in columns:
        table = distinct[column.name].sort_by(ROW_GROUP)
        ordered[column.name] = (table.column(KEY).combine_chunks(), table.column(ROW_GROUP).to_numpy())
    groups = np.unique(np.concatenate([groups for _, groups in ordered.values()]))
    for row_group in groups.tolist():
        found = {}
        for name, (keys, of_rows) in ordered.items():
            start, end = np.searchsorted(of_rows, [row_group, row_group + 1])
            found[name] = keys.slice(int(start), int(end - start))
        yield row_group, found
