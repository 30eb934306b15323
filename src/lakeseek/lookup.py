"""Index entries for values and key ranges (the paper's Algorithm 3, batched): no Spark.

A cold lookup of one value reads the index file's footer (one exact ranged read; the root
gives its offset) and one chunk; footers stay cached in the reader, so a warm lookup is
one read. A value outside every index file's range, or outside every chunk's range, reads
nothing. Each segment of a column is searched; a delta segment whose bloom filter (from the
version's delta filter file, read once) rules a value out costs no read.

Many keys at once (a batch lookup, Hudi's getRecordLocations) are sorted and located with
vectorised searches; each needed chunk is read once, and an index file is read whole in
one read instead when most of its chunks are needed (RFC-08's seek-or-scan rule).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.cost import SCAN_SHARE
from lakeseek.format.bloom import BloomFilter
from lakeseek.format.filters import read_filters
from lakeseek.format.index_file import (
    KEY,
    IndexFileFooter,
    IndexFileInfo,
    entry_schema,
    read_chunk,
    read_entries,
    read_footer,
)
from lakeseek.format.lineage import Lineage, read_lineage
from lakeseek.format.root import ColumnIndex, LineagePart, Root, Segment
from lakeseek.format.values import KeyValue, is_temporal_key, keys_of, sort_key
from lakeseek.io import Storage, carrying_counters


@dataclass(frozen=True)
class KeyRange:
    """Non-NULL keys between two bounds (None: unbounded). NULL is in no range, as in SQL."""

    low: KeyValue = None
    high: KeyValue = None
    low_inclusive: bool = True
    high_inclusive: bool = True

    def overlaps(self, low: KeyValue, high: KeyValue) -> bool:
        """Whether keys in ``[low, high]`` (index order: NULL first) can fall in the range."""
        if high is None:
            return False  # only NULL keys
        below = self.low is not None and (
            sort_key(high) < sort_key(self.low) or (high == self.low and not self.low_inclusive)
        )
        above = self.high is not None and (
            sort_key(low) > sort_key(self.high) or (low == self.high and not self.high_inclusive)
        )
        return not (below or above)

    def covers(self, low: KeyValue, high: KeyValue) -> bool:
        """Whether every key in ``[low, high]`` is in the range."""
        if low is None:
            return False
        above = self.low is None or sort_key(low) > sort_key(self.low) or (low == self.low and self.low_inclusive)
        below = self.high is None or sort_key(high) < sort_key(self.high) or (high == self.high and self.high_inclusive)
        return above and below

    def mask(self, keys: pa.ChunkedArray | pa.Array) -> pa.Array:
        """Which keys are in the range (NULL keys are not)."""
        inside = pc.is_valid(keys)
        if self.low is not None:
            low = pa.scalar(self.low, keys.type)
            above = pc.greater_equal(keys, low) if self.low_inclusive else pc.greater(keys, low)
            inside = pc.and_(inside, pc.fill_null(above, False))
        if self.high is not None:
            high = pa.scalar(self.high, keys.type)
            below = pc.less_equal(keys, high) if self.high_inclusive else pc.less(keys, high)
            inside = pc.and_(inside, pc.fill_null(below, False))
        return inside


class IndexReader:
    """Reads one index version; caches its footers and lineage for the reader's lifetime."""

    def __init__(self, storage: Storage, index_dir: str, root: Root) -> None:
        self.storage = storage
        self.index_dir = index_dir
        self.root = root
        self._footers: dict[str, IndexFileFooter] = {}
        self._lineage: Lineage | None = None
        self._filters: dict[str, BloomFilter] | None = None

    @property
    def row_groups(self) -> bool:
        """Whether entries point at row groups."""
        return self.root.config.row_groups

    def lineage(self) -> Lineage:
        """The indexed files (tombstoned ones left out)."""
        if self._lineage is None:
            lineage = self.root.lineage
            self._lineage = Lineage.concat([self._part(p) for p in lineage.parts]).without(lineage.removed)
        return self._lineage

    def pending(self) -> Lineage:
        """Files a quick refresh recorded without indexing them."""
        part = self.root.lineage.pending
        return Lineage.concat([]) if part is None else self._part(part)

    def _part(self, part: LineagePart) -> Lineage:
        if part.inline is not None:  # an empty one too (every file tombstoned, then optimized)
            return part.inline
        return read_lineage(self.storage, f"{self.index_dir}/{part.path}")

    # -- points -------------------------------------------------------------------------------
    def point_entries(self, column: str, keys: Iterable[KeyValue] | pa.Array) -> pa.Table:
        """The entries of ``keys`` (None stands for NULL), every segment searched."""
        index = self.root.columns[column]
        wanted = pc.unique(keys if isinstance(keys, pa.Array) else pa.array(list(keys), index.key_type))
        wanted = wanted.cast(index.key_type)
        present = wanted.drop_null()
        present = present.take(pc.sort_indices(present))
        found = []
        reads = []
        for position, segment in enumerate(index.segments):
            for info, file_keys in _keys_by_span(_file_spans(segment), present):
                if position:  # a delta's bloom filter rules keys out without reading its footer
                    file_keys = self._after_delta_filter(index, info, file_keys)
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
        if info is None or (position and not self._may_hold(info.path, None)):
            return []
        footer = self._footer(index, info)
        chunk = footer.chunk_for(None)
        if chunk is None:
            return []
        entries = read_chunk(self.storage, self._path(info), footer, chunk)
        return [entries.filter(pc.is_null(entries.column(KEY)))]

    def _entries_of_keys(self, index: ColumnIndex, info: IndexFileInfo, keys: pa.Array) -> pa.Table:
        footer = self._footer(index, info)
        if footer.bloom is not None and self._blooms_usable(index):
            keys = keys.filter(pa.array([footer.may_contain(k) for k in keys_of(keys)], pa.bool_()))
        chunks = sorted({chunk for chunk, _ in _keys_by_span(_chunk_spans(footer), keys)})
        entries = self._read_chunks(index, info, footer, chunks)
        return entries.filter(pc.is_in(entries.column(KEY), value_set=keys))

    def _after_delta_filter(self, index: ColumnIndex, info: IndexFileInfo, keys: pa.Array) -> pa.Array:
        if self.root.delta_filters is None or not self._blooms_usable(index):
            return keys
        return keys.filter(pa.array([self._may_hold(info.path, k) for k in keys_of(keys)], pa.bool_()))

    def _blooms_usable(self, index: ColumnIndex) -> bool:
        return not (self.root.legacy_temporal_blooms and is_temporal_key(index.key_type))

    def _may_hold(self, delta_path: str, value: KeyValue) -> bool:
        if self.root.delta_filters is None:
            return True
        if self._filters is None:
            self._filters = read_filters(self.storage, f"{self.index_dir}/{self.root.delta_filters.path}")
        bloom = self._filters.get(delta_path)
        return bloom is None or bloom.may_contain(value)

    # -- ranges -------------------------------------------------------------------------------
    def range_entries(
        self, column: str, key_range: KeyRange, key_filter: Callable[[pa.ChunkedArray], pa.Array] | None = None
    ) -> pa.Table:
        """The entries whose keys are in ``key_range`` (and pass ``key_filter``, if given)."""
        index = self.root.columns[column]
        found = []
        for info in index.files:
            if not key_range.overlaps(info.min, info.max):
                continue
            if key_range.covers(info.min, info.max) and info.chunks > 1:
                entries = read_entries(self.storage, self._path(info), info, index.key_type)
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
    def _read_chunks(self, index: ColumnIndex, info: IndexFileInfo, footer: IndexFileFooter, chunks: list[int]):
        if len(chunks) > SCAN_SHARE * info.chunks and info.chunks > 1:
            return read_entries(self.storage, self._path(info), info, index.key_type)
        tables = [read_chunk(self.storage, self._path(info), footer, chunk) for chunk in chunks]
        return pa.concat_tables(tables) if tables else entry_schema(index.key_type, self.row_groups).empty_table()

    def _concat(self, index: ColumnIndex, tables: list[pa.Table]) -> pa.Table:
        schema = entry_schema(index.key_type, self.row_groups)
        if not tables:
            return schema.empty_table()
        return pa.concat_tables([t.select(schema.names).cast(schema) for t in tables])

    def _footer(self, index: ColumnIndex, info: IndexFileInfo) -> IndexFileFooter:
        footer = self._footers.get(info.path)
        if footer is None:
            footer = read_footer(self.storage, self._path(info), info, index.key_type)
            self._footers[info.path] = footer
        return footer

    def _path(self, info: IndexFileInfo) -> str:
        return f"{self.index_dir}/{info.path}"


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
