"""Lookups in a sorted index (the paper's Algorithm 3, batched): no Spark.

A cold lookup of one value reads the index file's footer (one exact ranged read; the root
gives its offset) and one chunk; footers stay cached in the reader, so a warm lookup is
one read. A value outside every index file's range, or outside every chunk's range, reads
nothing. Each segment of a column is searched; an increment whose bloom filter (from the
version's increment filter file, read once) rules a value out costs no read.

Many keys at once (a batch lookup, Hudi's getRecordLocations) are sorted and located with
vectorised searches; the chunks an index file must give are read at once, or the whole
file in one read when that costs less (RFC-08's seek-or-scan rule, by cost: see
:func:`lakeseek.kinds.sorted_index.cost.reads_whole`).

Decoded chunks and whole index files stay in a cache of the process, bounded in bytes
($LAKESEEK_INDEX_CACHE_MB, default 256), least recently used first out: index files are
written once under names never used again, so what was decoded stays true. Keys of integer,
date and timestamp columns are then searched in the sorted entries (binary search), others
by a hash set of the keys.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.cost import LakeSize
from lakeseek.exceptions import IndexCorruptError
from lakeseek.expressions.binding import value_type
from lakeseek.expressions.like import like, like_prefix, prefix_successor
from lakeseek.format.bloom import BloomFilter
from lakeseek.format.root import Root
from lakeseek.format.values import KeyValue
from lakeseek.io import Storage, carrying_counters
from lakeseek.kinds.base import LOCATION_SHIFT, REPAIR, Condition, KindReader, Lookup, Pattern, Range, Values
from lakeseek.kinds.keys import KeyRange, bound_key, is_nanoseconds
from lakeseek.kinds.sorted_index.content import ColumnIndex, Segment, SortedIndex
from lakeseek.kinds.sorted_index.cost import chunks_for_share, estimate_files, key_share, reads_whole
from lakeseek.kinds.sorted_index.filters import read_filter_bytes, read_filters
from lakeseek.kinds.sorted_index.index_file import (
    FILE_ID,
    KEY,
    ROW_GROUP,
    IndexFileFooter,
    IndexFileInfo,
    entry_schema,
    read_chunk,
    read_chunks,
    read_entries,
    read_footer,
)
from lakeseek.lru import LRU, megabytes, named


class SortedReader(KindReader):
    """Reads one version of a sorted index. Its caches (footers, the increment filters) fill
    on first use; two threads filling one entry at once both read it, and either copy serves."""

    def __init__(self, storage: Storage, index_dir: str, root: Root) -> None:
        self.storage = storage
        self.index_dir = index_dir
        self.content: SortedIndex = root.content
        self.schema = root.schema
        self.row_groups = self.content.config.row_groups
        self._footers: dict[str, IndexFileFooter] = {}
        self._bounds: dict[object, _Spans] = {}  # by index file path, or id of a segment
        self._filters: dict[str, BloomFilter] | None = None

    # -- what the planner asks ------------------------------------------------------------------
    def lookup(self, condition: Condition, indexed: LakeSize) -> Lookup | str:
        index = self.content.indexes.get(condition.column)
        if index is None:
            return f"column '{condition.column}' is not indexed"
        if isinstance(condition, Values):
            return self._points(index, condition.values, indexed)
        if isinstance(condition, Range):
            return self._range(index, self._key_range(index, condition), indexed)
        if isinstance(condition, Pattern):
            prefix = like_prefix(condition.pattern)
            key_range = KeyRange(prefix or None, prefix_successor(prefix) if prefix else None, True, False)
            return self._range(index, key_range, indexed, lambda keys: like(keys, condition.pattern))
        return f"{type(condition).__name__} on '{condition.column}' is not served by the index"

    def _points(self, index: ColumnIndex, values: tuple, indexed: LakeSize) -> Lookup:
        column_type = self._column_type(index.name)
        keys = [None if v is None else bound_key(v, column_type, index.key_type) for v in values]
        touched: dict[str, list] = {}
        for key in set(keys):
            for segment in index.segments:
                info = segment.file_for(key)
                if info is not None:
                    touched.setdefault(info.path, [info, 0])[1] += 1
        infos = [
            (info, count / max(info.keys or info.entries, 1), min(count, info.chunks))
            for info, count in touched.values()
        ]
        estimate = estimate_files(infos, indexed.files)
        return Lookup(index.name, estimate, lambda: _locations(self.point_entries(index.name, keys)))

    def _range(
        self,
        index: ColumnIndex,
        key_range: KeyRange,
        indexed: LakeSize,
        key_filter: Callable[[pa.ChunkedArray], pa.Array] | None = None,
    ) -> Lookup:
        infos = []
        for info in index.files:
            if key_range.overlaps(info.min, info.max):
                share = 1.0 if key_range.covers(info.min, info.max) else key_share(info, key_range.low, key_range.high)
                infos.append((info, share, chunks_for_share(info, share)))
        estimate = estimate_files(infos, indexed.files)
        return Lookup(index.name, estimate, lambda: _locations(self.range_entries(index.name, key_range, key_filter)))

    def _key_range(self, index: ColumnIndex, condition: Range) -> KeyRange:
        column_type = self._column_type(index.name)
        low = None if condition.low is None else bound_key(condition.low, column_type, index.key_type)
        high = None if condition.high is None else bound_key(condition.high, column_type, index.key_type)
        # Keys of a nanosecond column are truncated to microseconds: bounds widen to keep every row.
        widen = is_nanoseconds(column_type)
        return KeyRange(low, high, condition.low_inclusive or widen, condition.high_inclusive or widen)

    def _column_type(self, column: str) -> pa.DataType:
        return value_type(self.schema.field(column).type)

    def key_type(self, column: str, column_type: pa.DataType) -> pa.DataType:
        return self.content.indexes[column].key_type

    def locate(self, column: str, keys: pa.Array) -> tuple[pa.Table, bool]:
        # A key of a nanosecond column stands for every value of its microsecond.
        return self.point_entries(column, keys), not is_nanoseconds(self._column_type(column))

    def entry_files(self, column: str) -> list[str]:
        return [info.path for info in self.content.indexes[column].files]

    def problems(self) -> list[str]:
        found = []
        for column in self.content.indexes.values():
            for info in column.files:
                try:
                    read_footer(self.storage, self._path(info), info, column.key_type, self.row_groups)
                except IndexCorruptError as error:
                    found.append(f"{error}: queries on '{column.name}' read every file; {REPAIR}")
        filters = self.content.increment_filters
        if filters is not None:
            try:
                read_filter_bytes(self.storage, f"{self.index_dir}/{filters.path}")
            except IndexCorruptError as error:
                found.append(f"{error}: queries read every file; {REPAIR}")
        return found

    # -- points -------------------------------------------------------------------------------
    def point_entries(self, column: str, keys: list[KeyValue] | pa.Array) -> pa.Table:
        """The entries of ``keys`` (None stands for NULL), every segment searched."""
        index = self.content.indexes[column]
        wanted = pc.unique(keys if isinstance(keys, pa.Array) else pa.array(list(keys), index.key_type))
        wanted = wanted.cast(index.key_type)
        present = wanted.drop_null()
        present = present.take(pc.sort_indices(present))
        found = []
        reads = []
        for position, segment in enumerate(index.segments):
            for info, file_keys in self._files_holding(segment, present):
                if position:  # an increment's bloom filter rules keys out without reading its footer
                    file_keys = self._after_increment_filter(info, file_keys)
                if len(file_keys):
                    reads.append((info, file_keys))
            if wanted.null_count:
                found.extend(self._null_entries(index, segment, position))
        if len(reads) > 1:
            # Many keys touch many index files: read and decode them in parallel (pyarrow
            # releases the GIL), as a batch lookup of 100k keys reads most of the index.
            with ThreadPoolExecutor(min(len(reads), os.cpu_count() or 1)) as pool:
                found.extend(pool.map(carrying_counters(lambda read: self._entries_of_keys(index, *read)), reads))
        else:
            found.extend(self._entries_of_keys(index, *read) for read in reads)
        return self._concat(index, found)

    def _null_entries(self, index: ColumnIndex, segment: Segment, position: int) -> list[pa.Table]:
        info = segment.file_for(None)
        if info is None or (position and not self._may_hold(info.path, pa.nulls(1, index.key_type))[0]):
            return []
        footer = self._footer(index, info)
        chunk = footer.chunk_for(None)
        if chunk is None:
            return []
        entries = read_chunk(self.storage, self._path(info), footer, chunk)
        return [entries.filter(pc.is_null(entries.column(KEY)))]

    def _entries_of_keys(self, index: ColumnIndex, info: IndexFileInfo, keys: pa.Array) -> pa.Table:
        footer = self._footer(index, info)
        if footer.bloom is not None:
            keys = keys.filter(footer.may_contain(keys))
        parts = self._decoded(index, info, footer, self._chunks_holding(info, footer, keys))
        return pa.concat_tables([part.matching(keys) for part in parts]) if parts else self._empty(index)

    def _files_holding(self, segment: Segment, keys: pa.Array) -> list[tuple[IndexFileInfo, pa.Array]]:
        """The segment's index files whose key range holds some of the sorted non-NULL
        ``keys``, each with those keys."""
        if not _searchable(keys.type):
            return _keys_by_span(_file_spans(segment), keys)
        bounds = self._bounds.get(id(segment))
        if bounds is None:
            files = segment.files
            bounds = _Spans.of([f.min for f in files], [f.max for f in files], keys.type)
            self._bounds[id(segment)] = bounds
        return [(segment.files[n], held) for n, held in bounds.keys_held(keys)]

    def _chunks_holding(self, info: IndexFileInfo, footer: IndexFileFooter, keys: pa.Array) -> list[int]:
        """The chunks whose key range holds one of the sorted non-NULL ``keys``."""
        if not _searchable(keys.type):
            return sorted({chunk for chunk, _ in _keys_by_span(_chunk_spans(footer), keys)})
        bounds = self._bounds.get(info.path)
        if bounds is None:
            bounds = self._bounds[info.path] = _Spans.of(footer.chunk_min, footer.chunk_max, keys.type)
        return bounds.holding(keys)

    def _after_increment_filter(self, info: IndexFileInfo, keys: pa.Array) -> pa.Array:
        if self.content.increment_filters is None:
            return keys
        return keys.filter(self._may_hold(info.path, keys))

    def _may_hold(self, increment_path: str, keys: pa.Array) -> np.ndarray:
        """Per key, whether the increment's index file may hold it (by its bloom filter)."""
        filters = self.content.increment_filters
        if self._filters is None and filters is not None:
            self._filters = read_filters(self.storage, f"{self.index_dir}/{filters.path}")
        bloom = None if self._filters is None else self._filters.get(increment_path)
        return np.ones(len(keys), dtype=bool) if bloom is None else bloom.may_contain(keys)

    # -- ranges -------------------------------------------------------------------------------
    def range_entries(
        self, column: str, key_range: KeyRange, key_filter: Callable[[pa.ChunkedArray], pa.Array] | None = None
    ) -> pa.Table:
        """The entries whose keys are in ``key_range`` (and pass ``key_filter``, if given)."""
        index = self.content.indexes[column]
        found = []
        for info in index.files:
            if not key_range.overlaps(info.min, info.max):
                continue
            if key_range.covers(info.min, info.max) and info.chunks > 1:
                entries = self._read_chunks(index, info, None, list(range(info.chunks)))  # whole: no footer needed
            else:
                footer = self._footer(index, info)
                chunks = [
                    n
                    for n, (low, high) in enumerate(zip(footer.chunk_min, footer.chunk_max, strict=True))
                    if key_range.overlaps(low, high)
                ]
                entries = self._read_chunks(index, info, footer, chunks)
            mask = key_range.mask(entries.column(KEY))
            if key_filter is not None:
                mask = pc.and_(mask, pc.fill_null(key_filter(entries.column(KEY)), False))
            found.append(entries.filter(mask))
        return self._concat(index, found)

    # -- reading --------------------------------------------------------------------------------
    def _read_chunks(self, index: ColumnIndex, info: IndexFileInfo, footer: IndexFileFooter | None, chunks: list[int]):
        parts = self._decoded(index, info, footer, chunks)
        return pa.concat_tables([part.table for part in parts]) if parts else self._empty(index)

    def _decoded(
        self, index: ColumnIndex, info: IndexFileInfo, footer: IndexFileFooter | None, chunks: list[int]
    ) -> list[_Entries]:
        """The entries of ``chunks`` of an index file, from the cache or read (the whole file in
        one read when that costs less: then ``footer`` may be None)."""
        path = self._path(info)
        whole = (id(self.storage), path, info.size, None)
        if reads_whole(info, len(chunks)):
            found = _DECODED.get(whole)
            if found is None:
                found = _Entries.of(read_entries(self.storage, path, info, index.key_type))
                _DECODED.put(whole, found)
            return [found]
        assert footer is not None
        parts: dict[int, _Entries] = {}
        decoded_file = _DECODED.get(whole)
        for chunk in chunks:
            if decoded_file is not None:  # the whole file is decoded: its part holding the chunk
                parts[chunk] = decoded_file.part(footer, chunk)
            elif (found := _DECODED.get((id(self.storage), path, info.size, chunk))) is not None:
                parts[chunk] = found
        missing = [chunk for chunk in chunks if chunk not in parts]
        for chunk, table in zip(missing, read_chunks(self.storage, path, footer, missing), strict=True):
            parts[chunk] = _Entries.of(table, chunk)
            _DECODED.put((id(self.storage), path, info.size, chunk), parts[chunk])
        return [parts[chunk] for chunk in chunks]

    def _empty(self, index: ColumnIndex) -> pa.Table:
        return entry_schema(index.key_type, self.row_groups).empty_table()

    def _concat(self, index: ColumnIndex, tables: list[pa.Table]) -> pa.Table:
        schema = entry_schema(index.key_type, self.row_groups)
        if not tables:
            return schema.empty_table()
        return pa.concat_tables([t.select(schema.names).cast(schema) for t in tables])

    def _footer(self, index: ColumnIndex, info: IndexFileInfo) -> IndexFileFooter:
        footer = self._footers.get(info.path)
        if footer is None:
            footer = read_footer(self.storage, self._path(info), info, index.key_type, self.row_groups)
            self._footers[info.path] = footer
        return footer

    def _path(self, info: IndexFileInfo) -> str:
        return f"{self.index_dir}/{info.path}"


class _Entries:
    """Decoded entries of an index file (one chunk, or all: ``chunk`` None), sorted by key with
    NULL first; for keys that order as integers, the non-NULL keys as a NumPy array."""

    def __init__(self, table: pa.Table, chunk: int | None) -> None:
        self.table = table
        self.chunk = chunk
        keys = table.column(KEY)
        self.nulls = keys.null_count
        self.sorted_keys = None
        if _searchable(keys.type):
            present = keys.slice(self.nulls).combine_chunks()
            self.sorted_keys = present.cast(_integer_of(keys.type)).to_numpy()

    @classmethod
    def of(cls, table: pa.Table, chunk: int | None = None) -> _Entries:
        return cls(table.combine_chunks(), chunk)

    @property
    def nbytes(self) -> int:
        return self.table.nbytes  # the sorted keys are a view of the table's key column

    def part(self, footer: IndexFileFooter, chunk: int) -> _Entries:
        """The entries of ``chunk``, out of a whole file's."""
        start = sum(footer.metadata.row_group(n).num_rows for n in range(chunk))
        return _Entries(self.table.slice(start, footer.metadata.row_group(chunk).num_rows), chunk)

    def matching(self, keys: pa.Array) -> pa.Table:
        """The entries whose key is one of ``keys`` (non-NULL)."""
        if self.sorted_keys is None:
            return self.table.filter(pc.is_in(self.table.column(KEY), value_set=keys))
        wanted = keys.cast(self.table.column(KEY).type).cast(_integer_of(keys.type)).to_numpy()
        low = np.searchsorted(self.sorted_keys, wanted, side="left")
        high = np.searchsorted(self.sorted_keys, wanted, side="right")
        counts = high - low
        if not counts.any():
            return self.table.slice(0, 0)
        # Every position in [low, high) of each key, in one vector.
        starts = np.repeat(low - np.r_[0, np.cumsum(counts)[:-1]], counts)
        positions = starts + np.arange(int(counts.sum())) + self.nulls
        return self.table.take(positions)


class _Spans:
    """Sorted, disjoint key ranges (an index file's chunks, a segment's files) as integers,
    for keys that order as integers."""

    def __init__(self, low: np.ndarray, high: np.ndarray, usable: np.ndarray) -> None:
        self.low, self.high, self.usable = low, high, usable

    @classmethod
    def of(cls, lows: list, highs: list, key_type: pa.DataType) -> _Spans:
        integer = _integer_of(key_type)
        # Only the first range can start with NULL (or hold nothing else): below every key.
        usable = np.array([high is not None for high in highs], dtype=bool)
        smallest = np.iinfo(integer.to_pandas_dtype()).min
        low = pa.array([smallest if v is None else v for v in lows], integer).to_numpy()
        high = pa.array([smallest if v is None else v for v in highs], integer).to_numpy()
        return cls(low, high, usable)

    def _positions(self, keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Per key, the range it may fall in, and whether it does."""
        wanted = keys.cast(_integer_of(keys.type)).to_numpy()
        if not len(self.low):
            return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=bool)
        position = np.searchsorted(self.low[1:], wanted, side="right")
        inside = self.usable[position] & (self.low[position] <= wanted) & (wanted <= self.high[position])
        return position, inside

    def holding(self, keys: pa.Array) -> list[int]:
        """The ranges holding some of the sorted ``keys``."""
        position, inside = self._positions(keys)
        return np.unique(position[inside]).tolist()

    def keys_held(self, keys: pa.Array) -> list[tuple[int, pa.Array]]:
        """Each range holding some of the sorted ``keys``, with those keys."""
        position, inside = self._positions(keys)
        chosen = np.flatnonzero(inside)
        if not len(chosen):
            return []
        ranges = position[chosen]
        starts = np.flatnonzero(np.r_[True, ranges[1:] != ranges[:-1]])
        ends = np.r_[starts[1:], len(ranges)]
        return [(int(ranges[a]), keys.take(chosen[a:b])) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]


def _searchable(key_type: pa.DataType) -> bool:
    return pa.types.is_integer(key_type) or pa.types.is_date(key_type) or pa.types.is_timestamp(key_type)


def _integer_of(key_type: pa.DataType) -> pa.DataType:
    if pa.types.is_integer(key_type):
        return key_type
    return pa.int32() if pa.types.is_date32(key_type) else pa.int64()


_DECODED: LRU[_Entries] = named(
    "index entries", megabytes("LAKESEEK_INDEX_CACHE_MB", 256), weigh=lambda entries: entries.nbytes
)


def _locations(entries: pa.Table) -> np.ndarray:
    ids = entries.column(FILE_ID).to_numpy().astype(np.int64) << LOCATION_SHIFT
    if ROW_GROUP in entries.column_names:
        ids = ids | entries.column(ROW_GROUP).to_numpy().astype(np.int64)
    return np.unique(ids)


Span = tuple[KeyValue, KeyValue, object]  # a key range [min, max] and what holds it


def _file_spans(segment: Segment) -> list[Span]:
    return [(info.min, info.max, info) for info in segment.files]


def _chunk_spans(footer: IndexFileFooter) -> list[Span]:
    return [(low, high, n) for n, (low, high) in enumerate(zip(footer.chunk_min, footer.chunk_max, strict=True))]


def _keys_by_span(spans: list[Span], keys: pa.Array) -> list[tuple[object, pa.Array]]:
    """Sorted non-NULL ``keys`` grouped by the span (of sorted, disjoint spans) holding them."""
    if not spans or not len(keys):
        return []
    # Only the first span can start with NULL; the others' minimums are the search boundaries.
    boundaries = pa.array([low for low, _, _ in spans[1:]], keys.type).to_numpy(zero_copy_only=False)
    wanted = keys.to_numpy(zero_copy_only=False)
    positions = np.searchsorted(boundaries, wanted, side="right") if len(boundaries) else np.zeros(len(keys), int)
    starts = np.flatnonzero(np.r_[True, positions[1:] != positions[:-1]])
    ends = np.r_[starts[1:], len(positions)]
    groups = []
    for start, end in zip(starts, ends, strict=True):
        low, high, item = spans[positions[start]]
        group = keys.slice(start, end - start)
        inside = KeyRange(low, high).mask(group) if low is not None else _at_most(group, high)
        group = group.filter(inside)
        if len(group):
            groups.append((item, group))
    return groups


def _at_most(keys: pa.Array, high: KeyValue) -> pa.Array:
    if high is None:
        return pa.array([False] * len(keys), pa.bool_())
    return pc.fill_null(pc.less_equal(keys, pa.scalar(high, keys.type)), False)
