"""Writing one task's rows into OTree files: each row to its cube and file (the write's
tree), each file sorted by weight (so a sample reads a prefix of it: Parquet's row-group
statistics of the weight skip the rest), with its blocks and column bounds.

A Spark write runs in two stages of Python tasks, so that the rows cross from the JVM to
Python once: :func:`route_task` assigns each input partition's rows and spills them, per
write task of the files they go to, as Arrow files in the write's scratch directory (a
shuffle of Arrow batches, cheaper here than Spark's shuffle followed by a second conversion
of every row to Arrow); :func:`write_spilled` writes one write task's files from its spills.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeseek.io import storage_for
from lakeseek.io.spills import read_spill, write_spill
from lakeseek.lake.formats.parquet import spark_filterable
from lakeseek.layout.table import DATA_DIR, Block, LayoutFile, Revision, file_statistics, now_ms
from lakeseek.layout.tree import OFFSET, WEIGHT, Assignment, Rollup, Tree, assign, cube_of, sample_threshold, unsigned

FILE = "__lakeseek_file"  # a row's file in the write
CUBE = "__lakeseek_cube"  # a row's cube (a code: see layout.tree.cube_of)


@dataclass(frozen=True)
class WritePlan:
    """What every task of one write needs: where, the schema, the revision and the tree."""

    location: str
    schema: pa.Schema  # the files', the weight column included
    revision: Revision
    tree: Tree
    rollup: Rollup
    row_group_rows: int
    storage_options: Mapping[str, object] = field(default_factory=dict)
    write_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    write_tasks: int = 1  # tasks writing the files of a Spark write: a range of file numbers each
    spill_bytes: int = 256 << 20  # a routing task spills what it holds once it holds this much

    def points(self, table: pa.Table | pa.RecordBatch) -> np.ndarray:
        columns = [t.positions(table.column(t.column)) for t in self.revision.transformations]
        return np.column_stack(columns) if columns else np.zeros((table.num_rows, 0))

    def assign(self, table: pa.Table | pa.RecordBatch) -> Assignment:
        return assign(self.tree, self.rollup, self.points(table), unsigned(_weights(table)))


def write_task_of(plan: WritePlan, files: np.ndarray) -> np.ndarray:
    """The write task of each of the write's file numbers (consecutive files: near cubes)."""
    return np.asarray(files, dtype=np.int64) * plan.write_tasks // max(plan.rollup.files, 1)


def _weights(table: pa.Table | pa.RecordBatch) -> np.ndarray:
    return table.column(WEIGHT).to_numpy(zero_copy_only=False)


def write_task(batches: Iterable[pa.RecordBatch], plan: WritePlan) -> list[dict]:
    """Write the rows of ``batches`` (of ``plan.schema``, perhaps with more columns; with
    their ``FILE`` and ``CUBE`` when the write assigned them already) into one file per file
    of the write they go to; the files' entries, for the commit."""
    tables = []
    for batch in batches:
        if not batch.num_rows:
            continue
        table = pa.Table.from_batches([batch])
        if FILE in table.column_names:
            assigned = table.column(FILE), table.column(CUBE)
        else:
            found = plan.assign(table)
            assigned = pa.array(found.file, pa.int32()), pa.array(found.cube, pa.int64())
        table = table.select(plan.schema.names).cast(plan.schema)
        tables.append(table.append_column(FILE, assigned[0]).append_column(CUBE, assigned[1]))
    if not tables:
        return []
    table = pa.concat_tables(tables)
    table = table.take(_by_file_and_weight(table))
    files = table.column(FILE).to_numpy()
    starts = np.flatnonzero(np.r_[True, files[1:] != files[:-1]])
    ends = np.r_[starts[1:], len(files)]
    storage, root = storage_for(plan.location, plan.storage_options)
    written = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        rows = table.slice(start, end - start)
        blocks = _blocks(rows, plan.tree)
        data = rows.drop_columns([FILE, CUBE])
        number = int(files[start])
        path = f"{DATA_DIR}/r{plan.revision.id}-{plan.write_id}-{number:05d}-{uuid.uuid4().hex[:8]}.parquet"
        size = _write_parquet(storage, f"{root}/{path}", data, plan.row_group_rows)
        written.append(
            LayoutFile(path, size, data.num_rows, plan.revision.id, blocks, file_statistics(data), now_ms()).to_json()
        )
    return written


def route_task(batches: Iterable[pa.RecordBatch], plan: WritePlan, scratch: str) -> list[dict]:
    """Stage one of a Spark write: the rows of ``batches`` with their file and cube, spilled
    per write task under ``scratch``: ``[{"task": n, "path": spill}, ...]``."""
    storage, _ = storage_for(plan.location, plan.storage_options)
    held: list[pa.Table] = []
    tasks: list[np.ndarray] = []
    spills: list[dict] = []
    name = uuid.uuid4().hex[:12]

    def spill() -> None:
        if not held:
            return
        routed = np.concatenate(tasks)
        order = np.argsort(routed, kind="stable")
        table, routed = pa.concat_tables(held).take(order), routed[order]
        starts = np.flatnonzero(np.r_[True, routed[1:] != routed[:-1]])
        for start, end in zip(starts.tolist(), np.r_[starts[1:], len(routed)].tolist(), strict=True):
            path = f"{scratch}/{int(routed[start]):05d}-{name}-{len(spills):05d}.arrow"
            write_spill(storage, path, table.slice(start, end - start))
            spills.append({"task": int(routed[start]), "path": path})
        held.clear()
        tasks.clear()

    holding = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        table = pa.Table.from_batches([batch]).select(plan.schema.names).cast(plan.schema)
        found = plan.assign(table)
        table = table.append_column(FILE, pa.array(found.file, pa.int32()))
        held.append(table.append_column(CUBE, pa.array(found.cube, pa.int64())))
        tasks.append(write_task_of(plan, found.file))
        holding += table.nbytes
        if holding >= plan.spill_bytes:
            spill()
            holding = 0
    spill()
    return spills


def write_spilled(plan: WritePlan, paths: list[str]) -> list[dict]:
    """Stage two of a Spark write: the files of one write task, from its spills."""
    storage, _ = storage_for(plan.location, plan.storage_options)
    return write_task((batch for path in paths for batch in read_spill(storage, path).to_batches()), plan)


def _by_file_and_weight(table: pa.Table) -> np.ndarray:
    """The order of rows by file, then weight: one 64-bit key sorted by NumPy (a fifth of the
    time of Arrow's sort by two keys)."""
    files = table.column(FILE).to_numpy().astype(np.uint64)
    return np.argsort((files << np.uint64(32)) | unsigned(_weights(table)).astype(np.uint64))


def _blocks(table: pa.Table, tree: Tree) -> tuple[Block, ...]:
    grouped = table.group_by(CUBE).aggregate([(WEIGHT, "min"), (WEIGHT, "count")])
    blocks = []
    columns = (grouped.column(name).to_pylist() for name in (CUBE, f"{WEIGHT}_min", f"{WEIGHT}_count"))
    for code, low, count in zip(*columns, strict=True):
        name, max_weight = cube_of(tree, code)
        blocks.append(Block(name, int(low), max_weight - OFFSET, int(count)))
    return tuple(sorted(blocks, key=lambda b: (len(b.cube), b.cube)))


# Row groups also end where a sample of one of these fractions ends (files are sorted by
# weight), so a sample of a round fraction reads its rows and no more of the file.
SAMPLE_CUTS = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


def _write_parquet(storage, path: str, table: pa.Table, row_group_rows: int) -> int:
    weights = table.column(WEIGHT).to_numpy()
    cuts = np.searchsorted(weights, [sample_threshold(fraction) for fraction in SAMPLE_CUTS])
    bounds = np.unique(np.r_[0, cuts, np.arange(0, len(weights), row_group_rows), len(weights)])
    with storage.output(path) as out:
        dictionary = _repetitive_columns(table)
        # No statistics of floating-point columns: they leave NaN out, and Spark's Parquet reader
        # then skips row groups holding NaN for x > 2 (NaN is above every number in Spark). The
        # layout prunes by cube boxes, not by these.
        statistics = spark_filterable(table.schema)
        with pq.ParquetWriter(
            out, table.schema, compression="snappy", use_dictionary=dictionary, write_statistics=statistics
        ) as writer:
            for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
                writer.write_table(table.slice(start, end - start), row_group_size=end - start)
        return out.tell()


def _repetitive_columns(table: pa.Table, probe: int = 8192) -> list[str]:
    """The columns worth dictionary encoding: those repeating values in the file's first rows
    (and those already dictionaries). A row group here is small enough that a dictionary never
    overflows into Parquet's plain fallback, so for distinct values it would double the write
    time and grow the file. Columns Arrow cannot count values of (nested, all NULL) are not,
    nor floating-point ones: Spark's Parquet reader filters row groups by their dictionaries
    comparing doubles bit by bit, and so drops a dictionary of -0.0 for ``x = 0.0``."""
    head = table.slice(0, probe)
    found = []
    for name in table.column_names:
        column = head.column(name)
        if name == WEIGHT or pa.types.is_floating(column.type):
            continue
        if pa.types.is_dictionary(column.type):
            found.append(name)
            continue
        try:
            distinct = pc.count_distinct(column).as_py()
        except pa.ArrowNotImplementedError:
            continue
        if distinct <= head.num_rows // 2:
            found.append(name)
    return found
