"""Writing covering segments: a build over some lake files, and a merge (optimize).

A build is one stage of tasks (:mod:`lakeseek.engine.runner`): each reads the carried columns
of a group of lake files as reads see them (deleted rows left out, partition values filled
in) and spills them with their ``file_id``; the driver sorts each indexed column's copy by
key and writes it in files of row groups. A merge concatenates segments' rows, drops those of
tombstoned files and sorts again: no lake file is read.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeseek.exceptions import IndexCorruptError, LakeseekError, UnsupportedColumnError, one_line
from lakeseek.format.footers import footer_crc32, stamped_parquet_bytes
from lakeseek.format.lineage import Lineage
from lakeseek.format.values import keys_of
from lakeseek.io import Stamp, Storage
from lakeseek.io.spills import read_spill, write_spill
from lakeseek.kinds.base import ROW_FILE, Job, OperationFiles
from lakeseek.kinds.covering.content import ROWS_PER_FILE, RowFile, RowSegment
from lakeseek.kinds.file_keys import IndexedColumn, LakeScan, file_groups, scratch_cleared
from lakeseek.lake.files import reading_data_files

# Rows of an index file are the carried lake columns, the key (the key column as an index key)
# and the data file they came from.
INTERNAL_PREFIX = "__lakeseek_"
ROW_KEY = f"{INTERNAL_PREFIX}key"


def build_segments(
    job: Job, columns: list[IndexedColumn], carried: list[str], chunk_rows: int, files: Lineage
) -> list[RowSegment]:
    """One segment per indexed column of ``columns`` over ``files``, carrying ``carried``."""
    internal = [name for name in carried if name.startswith(INTERNAL_PREFIX)]
    if internal:
        raise UnsupportedColumnError(
            f"column '{internal[0]}' cannot be carried by a covering index: names starting with "
            f"'{INTERNAL_PREFIX}' are its own"
        )
    storage = job.storage
    spec = _RowSpec(LakeScan.of(job, columns), tuple(carried))
    with scratch_cleared(job):
        groups = file_groups(files, job.runner.parallelism) if len(files) else []
        spills = job.runner.run("reading the lake's rows", [(spec, group) for group in groups], _rows_task)
        tables = [read_spill(storage, spill["path"]) for spill in spills]
    if not tables:
        return []
    rows = pa.concat_tables(tables)
    segments = []
    for column in columns:
        keyed = rows.append_column(ROW_KEY, rows.column(f"{ROW_KEY}_{column.name}"))
        keyed = keyed.select([*carried, ROW_KEY, ROW_FILE])
        segments.append(write_segment(storage, job.files, column.name, tuple(carried), keyed, chunk_rows))
    return segments


def merge_segments(
    storage: Storage, files: OperationFiles, segments: list[RowSegment], removed: frozenset[int], chunk_rows: int
) -> RowSegment | None:
    """One segment of a column with the rows of ``segments`` but those of ``removed`` files,
    carrying the columns all of them carry. None: no row is left."""
    first = segments[0]
    carried = tuple(c for c in first.carried if all(c in s.carried for s in segments))
    tables = []
    for segment in segments:
        for row_file in segment.row_files:
            table = read_row_file(storage, files.index_dir, row_file, [*carried, ROW_KEY, ROW_FILE])
            gone = pa.array(sorted(removed), pa.int32())
            tables.append(table.filter(pc.invert(pc.is_in(table.column(ROW_FILE), value_set=gone))))
    try:  # segments written before a carried column widened hold the narrower type
        rows = pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise LakeseekError(
            f"the covering index's segments of '{first.column}' hold a column in types no common type holds "
            f"({error}): run `lakeseek refresh --mode full`"
        ) from error
    if not rows.num_rows:
        return None
    return write_segment(storage, files, first.column, carried, rows, chunk_rows)


def read_row_file(storage: Storage, index_dir: str, row_file: RowFile, columns: list[str]) -> pa.Table:
    """A row file whole, checked to be the one the root names (its size and footer's crc32)
    and its pages' checksums: a damaged one fails the operation (a full refresh rebuilds from
    the lake) instead of passing its damage on to the segment written."""
    path = f"{index_dir}/{row_file.path}"
    try:
        data = storage.read(path)
        if len(data) != row_file.size or footer_crc32(data) != row_file.footer_crc32:
            raise IndexCorruptError(f"the covering index file {path} is not the one its index wrote")
        return pq.read_table(io.BytesIO(data), columns=columns, page_checksum_verification=True)
    except FileNotFoundError as error:
        raise IndexCorruptError(f"the covering index file {path} is missing") from error
    except (OSError, pa.ArrowException) as error:
        raise IndexCorruptError(f"the covering index file {path} is damaged ({one_line(error)})") from error


def write_segment(
    storage: Storage, files: OperationFiles, column: str, carried: tuple[str, ...], rows: pa.Table, chunk_rows: int
) -> RowSegment:
    """``rows`` sorted by key (NULL first, then by data file) and written as a segment."""
    rows = rows.sort_by([(ROW_KEY, "ascending", "at_start"), (ROW_FILE, "ascending", "at_start")])
    row_files = []
    for start in range(0, rows.num_rows, ROWS_PER_FILE):
        part = rows.slice(start, ROWS_PER_FILE)
        data = stamped_parquet_bytes(part, chunk_rows, "zstd")
        path = f"{files.data_dir}/rows-{uuid.uuid4().hex}.parquet"
        storage.write(f"{files.index_dir}/{path}", data)
        keys = part.column(ROW_KEY)
        firsts = tuple(keys_of(keys.take(pa.array(range(0, part.num_rows, chunk_rows)))))
        last = keys_of(keys[-1:])[0]
        row_files.append(RowFile(path, len(data), part.num_rows, firsts, last, keys.null_count, footer_crc32(data)))
    pairs = rows.select([ROW_KEY, ROW_FILE]).drop_null().group_by([ROW_KEY, ROW_FILE]).aggregate([]).num_rows
    distinct = len(pc.unique(rows.column(ROW_KEY).drop_null()))
    files_count = len(pc.unique(rows.column(ROW_FILE)))
    return RowSegment(column, carried, tuple(row_files), files_count, pairs, distinct)


# -- tasks (run on Spark executors, or in process) -------------------------------------------
@dataclass(frozen=True)
class _RowSpec:
    scan: LakeScan
    carried: tuple[str, ...]


def _rows_task(spec: _RowSpec, files: list[tuple[int, str, Stamp]]) -> list[dict]:
    reader, storage, scratch = spec.scan.open()
    partitions = spec.scan.partition_columns
    tables = []
    for file_id, path, stamp in files:
        with reading_data_files(reader.source, [path]):  # a damaged file: an error naming it
            rows = reader.source.dataset([path], reader.schema, partitions, stamps={path: stamp})
            table = rows.to_table(columns=list(spec.carried))
        for column in spec.scan.columns:
            raw = table.column(column.name).combine_chunks()
            table = table.append_column(f"{ROW_KEY}_{column.name}", reader.keys(raw, column, path))
        tables.append(table.append_column(ROW_FILE, pa.array(np.full(table.num_rows, file_id, np.int32))))
    path = f"{scratch}/rows-{uuid.uuid4().hex}.arrow"
    table = pa.concat_tables(tables) if tables else None
    if table is None:
        return []
    write_spill(storage, path, table)
    return [{"path": path}]
