"""Writing one task's rows into OTree files: each row to its cube and file (the write's
tree), each file sorted by weight (so a sample reads a prefix of it: Parquet's row-group
statistics of the weight skip the rest), with its blocks and column bounds."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeseek.io import storage_for
from lakeseek.layout.table import DATA_DIR, Block, LayoutFile, Revision, file_statistics, now_ms
from lakeseek.layout.tree import OFFSET, WEIGHT, Assignment, Rollup, Tree, assign, unsigned

_CUBE = "__lakeseek_cube"


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

    def points(self, table: pa.Table | pa.RecordBatch) -> np.ndarray:
        columns = [t.positions(table.column(t.column)) for t in self.revision.transformations]
        return np.column_stack(columns) if columns else np.zeros((table.num_rows, 0))

    def assign(self, table: pa.Table | pa.RecordBatch) -> Assignment:
        return assign(self.tree, self.rollup, self.points(table), unsigned(_weights(table)))


def _weights(table: pa.Table | pa.RecordBatch) -> np.ndarray:
    return table.column(WEIGHT).to_numpy(zero_copy_only=False)


def write_task(batches: Iterable[pa.RecordBatch], plan: WritePlan) -> list[dict]:
    """Write the rows of ``batches`` (of ``plan.schema``, perhaps with more columns) into one
    file per file of the write they go to; the files' entries, for the commit."""
    parts: dict[int, list[pa.Table]] = {}
    max_weights: dict[str, int] = {}  # per cube met: its maximum weight (unsigned)
    for batch in batches:
        if not batch.num_rows:
            continue
        table = pa.Table.from_batches([batch]).select(plan.schema.names).cast(plan.schema)
        found = plan.assign(table)
        cubes = pa.DictionaryArray.from_arrays(pa.array(found.cube, pa.int32()), pa.array(found.names))
        table = table.append_column(_CUBE, cubes.cast(pa.string()))
        order = np.argsort(found.file, kind="stable")
        files = found.file[order]
        starts = np.flatnonzero(np.r_[True, files[1:] != files[:-1]])
        ends = np.r_[starts[1:], len(files)]
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            parts.setdefault(int(files[start]), []).append(table.take(pa.array(order[start:end])))
        for name, weight in zip(found.names, found.max_weights, strict=True):
            max_weights.setdefault(name, weight)
    storage, root = storage_for(plan.location, plan.storage_options)
    written = []
    for number, pieces in sorted(parts.items()):
        table = pa.concat_tables(pieces)
        table = table.take(pc.sort_indices(table, [(WEIGHT, "ascending")]))
        blocks = _blocks(table, max_weights)
        data = table.drop_columns([_CUBE])
        path = f"{DATA_DIR}/r{plan.revision.id}-{plan.write_id}-{number:05d}-{uuid.uuid4().hex[:8]}.parquet"
        size = _write_parquet(storage, f"{root}/{path}", data, plan.row_group_rows)
        written.append(
            LayoutFile(path, size, data.num_rows, plan.revision.id, blocks, file_statistics(data), now_ms()).to_json()
        )
    return written


def _blocks(table: pa.Table, max_weights: Mapping[str, int]) -> tuple[Block, ...]:
    grouped = table.group_by(_CUBE).aggregate([(WEIGHT, "min"), (WEIGHT, "count")])
    blocks = []
    columns = (grouped.column(name).to_pylist() for name in (_CUBE, f"{WEIGHT}_min", f"{WEIGHT}_count"))
    for cube, low, count in zip(*columns, strict=True):
        blocks.append(Block(cube, int(low), int(max_weights[cube]) - OFFSET, int(count)))
    return tuple(sorted(blocks, key=lambda b: (len(b.cube), b.cube)))


def _write_parquet(storage, path: str, table: pa.Table, row_group_rows: int) -> int:
    storage.fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with storage.fs.open_output_stream(path) as out:
        pq.write_table(table, out, row_group_size=row_group_rows, compression="snappy")
        return out.tell()
