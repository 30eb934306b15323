"""The optimize job: fold increments into the main index (the paper's Algorithm 2).

Each main index file owns the key range from its minimum up to the next file's minimum
(the first one also owns everything below, NULL included). The increments' entries are
assigned to those ranges (a broadcast of the ranges against the increments' files, done by
each task on its own range) and only the index files whose range receives entries or
holds tombstoned entries are rewritten; the rest are kept as they are.

``quick`` mode merges a column's increments into one increment instead.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.engine.runner import Runner
from lakeseek.format import values
from lakeseek.format.values import KeyValue, sort_key
from lakeseek.io import Address
from lakeseek.kinds.sorted_index.content import ColumnIndex, IndexConfig, Segment
from lakeseek.kinds.sorted_index.index_file import (
    FILE_ID,
    KEY,
    ROW_GROUP,
    IndexFileInfo,
    entry_order,
    read_entries,
    split_at_key_changes,
    write_index_file,
)


def fold_increments(
    runner: Runner,
    index: Address,
    prefix: str,
    column: ColumnIndex,
    removed: frozenset[int],
    config: IndexConfig,
) -> Segment:
    """The column's main index with its increments folded in and tombstoned entries dropped."""
    main = column.segments[0].files if column.segments else ()
    increments = [f for segment in column.segments[1:] for f in segment.files]
    lows: list[KeyValue | None] = [None, *(f.min for f in main[1:])]
    highs: list[KeyValue | None] = [*(f.min for f in main[1:]), None]
    # Without main index files (every indexed file was removed), one range takes every entry.
    tasks = [
        (_task_spec(index, prefix, column, removed, config, low, high, main[n] if main else None, increments, False),)
        for n, (low, high) in enumerate(zip(lows, highs, strict=True))
    ]
    written = runner.run(f"folding '{column.name}'", tasks, _fold_task)
    return _segment(written, column.key_type)


def merge_increments(
    runner: Runner,
    index: Address,
    prefix: str,
    column: ColumnIndex,
    removed: frozenset[int],
    config: IndexConfig,
) -> Segment:
    """The column's increments merged into one increment, tombstoned entries dropped."""
    increments = [f for segment in column.segments[1:] for f in segment.files]
    spec = _task_spec(index, prefix, column, removed, config, None, None, None, increments, bloom=True)
    return _segment(runner.run(f"merging '{column.name}'", [(spec,)], _fold_task), column.key_type)


def _segment(written: list[dict], key_type: pa.DataType) -> Segment:
    infos = [IndexFileInfo.from_json(w, key_type) for w in written]
    return Segment(tuple(sorted(infos, key=lambda info: sort_key(info.min))))


@dataclass(frozen=True)
class _FoldSpec:
    index: Address
    prefix: str
    key_type_text: str
    chunk_rows: int
    max_entries: int
    removed: tuple[int, ...]
    bloom: bool
    low: object  # encoded key, or None: unbounded (NULL included)
    high: object  # encoded key (exclusive), or None: unbounded
    owner: dict | None  # the main index file of this range
    increments: tuple[dict, ...]  # increment index files overlapping the range


def _task_spec(
    index: Address,
    prefix: str,
    column: ColumnIndex,
    removed: frozenset[int],
    config: IndexConfig,
    low: KeyValue | None,
    high: KeyValue | None,
    owner: IndexFileInfo | None,
    increments: list[IndexFileInfo],
    bloom: bool,
) -> _FoldSpec:
    key_type = column.key_type
    overlapping = [
        d
        for d in increments
        if (high is None or sort_key(d.min) < sort_key(high)) and (low is None or sort_key(d.max) >= sort_key(low))
    ]
    return _FoldSpec(
        index=index,
        prefix=prefix,
        key_type_text=values.serialize_type(key_type),
        chunk_rows=config.chunk_rows,
        max_entries=config.entries_per_index_file,
        removed=tuple(sorted(removed)),
        bloom=bloom,
        low=None if low is None else values.encode(low, key_type),
        high=None if high is None else values.encode(high, key_type),
        owner=None if owner is None else owner.to_json(key_type),
        increments=tuple(d.to_json(key_type) for d in overlapping),
    )


def _fold_task(spec: _FoldSpec) -> list[dict]:
    storage, index_dir = spec.index.open()
    key_type = values.deserialize_type(spec.key_type_text)
    dead = pa.array(spec.removed, pa.int32())

    def entries(raw: dict) -> pa.Table:
        info = IndexFileInfo.from_json(raw, key_type)
        return read_entries(storage, f"{index_dir}/{info.path}", info, key_type)

    owned = entries(spec.owner) if spec.owner else None
    owned_live = owned.filter(pc.invert(pc.is_in(owned.column(FILE_ID), value_set=dead))) if owned else None
    incoming = [_in_range(entries(d), spec, key_type) for d in spec.increments]
    incoming = [t for t in incoming if t.num_rows]
    if owned is not None and not incoming and owned_live.num_rows == owned.num_rows:
        return [spec.owner]  # Algorithm 2: a range that receives nothing keeps its index file
    parts = [t for t in (owned_live, *incoming) if t is not None]
    if not parts:
        return []
    merged = pa.concat_tables(parts)
    order = pc.sort_indices(merged, sort_keys=entry_order(ROW_GROUP in merged.column_names))
    written = []
    for piece in split_at_key_changes(merged.take(order), spec.max_entries):
        result = write_index_file(
            piece.to_batches(max_chunksize=spec.chunk_rows), key_type, spec.chunk_rows, bloom=spec.bloom
        )
        if result is None:
            continue
        data, info = result
        path = f"{spec.prefix}-{uuid.uuid4().hex}.parquet"
        storage.write(f"{index_dir}/{path}", data)
        written.append({"path": path, **info})
    return written


def _in_range(table: pa.Table, spec: _FoldSpec, key_type: pa.DataType) -> pa.Table:
    keys = table.column(KEY)
    mask = pc.invert(pc.is_in(table.column(FILE_ID), value_set=pa.array(spec.removed, pa.int32())))
    if spec.low is not None:
        mask = pc.and_(
            mask, pc.fill_null(pc.greater_equal(keys, pa.scalar(values.decode(spec.low, key_type), key_type)), False)
        )
    if spec.high is not None:
        below = pc.fill_null(pc.less(keys, pa.scalar(values.decode(spec.high, key_type), key_type)), True)
        mask = pc.and_(mask, below)
    return table.filter(mask)
