"""Batch lookups (Hudi's getRecordLocations): many keys in, (key, file) pairs out, no Spark.

The keys are sorted once and located in every segment with vectorised searches; each
needed chunk is read once, and an index file most of whose chunks are needed is read whole
in one read (see :mod:`lakeseek.lookup`). Files the index does not cover (new or rewritten
since indexing) are read, only the one column, so the pairs are exact: a file is paired
with a key only if it holds a row with that key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from lakeseek.format.index_file import FILE_ID, KEY, ROW_GROUP
from lakeseek.format.values import KeyValue
from lakeseek.lake import LakeState
from lakeseek.lookup import IndexReader

FILE = "file"


def locate_keys(
    reader: IndexReader,
    state: LakeState,
    column: str,
    keys: Iterable[KeyValue] | pa.Array,
    open_files: Callable[[list[str]], ds.Dataset],
) -> pa.Table:
    """``(key, file[, row_group])`` for every key of ``keys`` held by a file of the lake.

    ``file`` is relative to the lake root; ``open_files(paths)`` gives a pyarrow dataset
    over lake files (here: those the index does not cover, which are read).
    """
    index = reader.root.columns[column]
    wanted = keys if isinstance(keys, pa.Array) else pa.array(list(keys), index.key_type)
    wanted = pc.unique(wanted.cast(index.key_type)).drop_null()
    entries = reader.point_entries(column, wanted)
    live = pa.table(
        {FILE_ID: pa.array(list(state.indexed), pa.int32()), FILE: pa.array(list(state.indexed.values()), pa.string())}
    )
    names = [KEY, FILE, ROW_GROUP] if reader.row_groups else [KEY, FILE]
    found = entries.join(live, FILE_ID, join_type="inner").select(names)
    if state.unindexed:
        found = pa.concat_tables([found, scan_keys(state.unindexed, column, wanted, open_files, reader.row_groups)])
    return found.sort_by([(KEY, "ascending"), (FILE, "ascending")])


def scan_keys(
    paths: list[str],
    column: str,
    keys: pa.Array,
    open_files: Callable[[list[str]], ds.Dataset],
    row_groups: bool = False,
) -> pa.Table:
    """``(key, file)`` pairs found by reading ``column`` of each file (no row group is named)."""
    dataset = open_files(paths)
    keys = keys.drop_null()
    parts = []
    for fragment, path in zip(dataset.get_fragments(), paths, strict=True):
        table = fragment.to_table(columns=[column], filter=pc.field(column).isin(keys), schema=dataset.schema)
        held = pc.unique(table.column(column)).cast(keys.type)
        parts.append(pa.table({KEY: held, FILE: pa.array([path] * len(held), pa.string())}))
    schema = pa.schema([pa.field(KEY, keys.type), pa.field(FILE, pa.string())])
    scanned = pa.concat_tables(parts) if parts else schema.empty_table()
    if row_groups:
        scanned = scanned.append_column(ROW_GROUP, pa.nulls(scanned.num_rows, pa.int32()))
    return scanned.sort_by([(KEY, "ascending"), (FILE, "ascending")])
