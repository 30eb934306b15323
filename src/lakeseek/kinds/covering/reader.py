"""Lookups in a covering index: the row groups a condition on a key can be in, read with the
columns asked for.

The root gives each row file's row groups' first keys, so the row groups of a value, a range
or a LIKE prefix are found without a read. A lookup for planning reads the key and file id
of those row groups (the files that hold a match, exactly); a covered read reads them with
the columns a query needs, and the query is answered without opening a data file.
"""

from __future__ import annotations

import bisect
import io
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeseek.cost import Cost, Estimate, LakeSize
from lakeseek.exceptions import IndexCorruptError, one_line
from lakeseek.expressions.binding import value_type
from lakeseek.expressions.like import like, like_prefix, prefix_successor
from lakeseek.format.footers import check_stamp, is_stamped, read_checked_footer
from lakeseek.format.root import Root
from lakeseek.format.values import sort_key
from lakeseek.io import Storage
from lakeseek.kinds.base import LOCATION_SHIFT, REPAIR, ROW_FILE, Condition, KindReader, Lookup, Pattern, Range, Values
from lakeseek.kinds.covering.build import ROW_KEY
from lakeseek.kinds.covering.content import CoveringIndex, RowFile, RowSegment
from lakeseek.kinds.keys import KeyRange, bound_key, is_nanoseconds

READS_PER_GROUP = 1  # a row group's column chunks, in one read


class CoveringReader(KindReader):
    carries_rows = True

    def __init__(self, storage: Storage, index_dir: str, root: Root) -> None:
        self.storage = storage
        self.index_dir = index_dir
        self.content: CoveringIndex = root.content
        self.schema = root.schema
        self._lock = threading.Lock()
        self._footers: dict[str, pq.FileMetaData] = {}

    def lookup(self, condition: Condition, indexed: LakeSize) -> Lookup | str:
        column = condition.column
        if column not in self.content.key_types:
            return f"column '{column}' is not indexed"
        key_type = self.content.key_types[column]
        column_type = value_type(self.schema.field(column).type)
        if isinstance(condition, Values):
            keys = [None if v is None else bound_key(v, column_type, key_type) for v in condition.values]
            ranges = [KeyRange(k, k) for k in dict.fromkeys(k for k in keys if k is not None)]
            test = _Test(ranges, None in keys, None, key_type)
        elif isinstance(condition, Range):
            widen = is_nanoseconds(column_type)  # keys of a nanosecond column are truncated to microseconds
            low = None if condition.low is None else bound_key(condition.low, column_type, key_type)
            high = None if condition.high is None else bound_key(condition.high, column_type, key_type)
            key_range = KeyRange(low, high, condition.low_inclusive or widen, condition.high_inclusive or widen)
            test = _Test([key_range], False, None, key_type)
        elif isinstance(condition, Pattern):
            prefix = like_prefix(condition.pattern)
            key_range = KeyRange(prefix or None, prefix_successor(prefix) if prefix else None, True, False)
            test = _Test([key_range], False, condition.pattern, key_type)
        else:
            return f"{type(condition).__name__} on '{column}' is not served by the index"
        segments = self.content.segments_of(column)
        groups = [
            (segment, row_file, _groups(row_file, test, self.content.config.chunk_rows))
            for segment in segments
            for row_file in segment.row_files
        ]
        estimate = _estimate(groups, test)
        return Lookup(
            column,
            estimate,
            lambda: self._locations(groups, test),
            rows=lambda columns: self._rows(groups, test, columns),
        )

    def key_type(self, column: str, column_type: pa.DataType) -> pa.DataType:
        return self.content.key_types[column]

    def row_files(self, column: str) -> tuple[list[str], tuple[str, ...]] | None:
        segments = self.content.segments_of(column)
        # Segments built before a column was added to the index lack it.
        carried = [c for c in self.content.stored_columns if all(c in s.carried for s in segments)]
        for segment in segments:
            for row_file in segment.row_files:  # read again: this process may have read another file
                self._checked_footer(row_file, self.content.key_types[column])
        return [row_file.path for s in segments for row_file in s.row_files], tuple(carried)

    def problems(self) -> list[str]:
        found = []
        for segment in self.content.segments:
            for row_file in segment.row_files:
                try:
                    self._footer(row_file, self.content.key_types[segment.column])
                except IndexCorruptError as error:
                    found.append(f"{error}: queries on '{segment.column}' read every file; {REPAIR}")
        return found

    # -- reads ------------------------------------------------------------------------------------
    def _locations(self, groups, test: _Test) -> np.ndarray:
        found = [np.zeros(0, np.int64)]
        for _, row_file, chosen in groups:
            if chosen:
                table = self._read(row_file, chosen, [], test)
                found.append(table.column(ROW_FILE).to_numpy().astype(np.int64))
        return np.unique(np.concatenate(found)) << LOCATION_SHIFT

    def _rows(self, groups, test: _Test, columns: list[str]) -> pa.Table | None:
        """The rows of the chosen row groups that may match, with ``columns`` and ``ROW_FILE``;
        None when a segment does not carry them all."""
        if any(set(columns) - set(segment.carried) for segment, _, _ in groups):
            return None
        tables = [self._read(row_file, chosen, columns, test) for _, row_file, chosen in groups if chosen]
        if tables:
            try:  # segments written before a carried column widened hold the narrower type
                return pa.concat_tables(tables, promote_options="permissive").select([*columns, ROW_FILE])
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                return None  # types no common one holds: the lake is read
        fields = [self.schema.field(column) for column in columns]
        return pa.schema([*fields, pa.field(ROW_FILE, pa.int32())]).empty_table()

    def _read(self, row_file: RowFile, groups: list[int], columns: list[str], test: _Test) -> pa.Table:
        """Rows of ``groups`` whose key passes the test, with ``columns`` and the file id: one
        ranged read per row group (its chunks of those columns), in this thread, so it counts."""
        path = f"{self.index_dir}/{row_file.path}"
        footer = self._footer(row_file, test.key_type)
        wanted = [*columns, ROW_KEY, ROW_FILE]
        # A nested column is several leaf chunks, named "column.field...".
        leaves = [footer.schema.column(i).path.split(".")[0] for i in range(footer.num_columns)]
        # The last column is the file's id (lakeseek.format.footers.FileStamp): read, not decoded.
        positions = [i for i, leaf in enumerate(leaves) if leaf in wanted] + [footer.num_columns - 1]
        ranges = {}
        for group in groups:
            chunks = [footer.row_group(group).column(position) for position in positions]
            start = min(c.dictionary_page_offset or c.data_page_offset for c in chunks)
            end = max((c.dictionary_page_offset or c.data_page_offset) + c.total_compressed_size for c in chunks)
            ranges[start] = self._bytes(path, start, end - start)
            check_stamp(footer, group, start, ranges[start], path)
        try:
            reader = pq.ParquetFile(
                _Prefetched(ranges, row_file.size), metadata=footer, pre_buffer=False, page_checksum_verification=True
            )
            table = reader.read_row_groups(groups, columns=wanted, use_threads=False)
        except (OSError, pa.ArrowException) as error:
            raise IndexCorruptError(f"the covering index file {path} is damaged ({one_line(error)})") from error
        return table.filter(test.mask(table.column(ROW_KEY)))

    def _bytes(self, path: str, offset: int, length: int) -> bytes:
        try:
            return self.storage.read_range(path, offset, length)
        except FileNotFoundError as error:
            raise IndexCorruptError(f"the covering index file {path} is missing") from error

    def _footer(self, row_file: RowFile, key_type: pa.DataType) -> pq.FileMetaData:
        path = f"{self.index_dir}/{row_file.path}"
        with self._lock:
            known = self._footers.get(path)
        if known is None:
            known = self._checked_footer(row_file, key_type)
            with self._lock:
                self._footers[path] = known
        return known

    def _checked_footer(self, row_file: RowFile, key_type: pa.DataType) -> pq.FileMetaData:
        path = f"{self.index_dir}/{row_file.path}"
        try:
            footer = read_checked_footer(
                lambda offset, length: self._bytes(path, offset, length), row_file.size, row_file.footer_crc32
            )
            keys = footer.schema.to_arrow_schema().field(ROW_KEY).type
        except (OSError, KeyError, pa.ArrowException) as error:
            raise IndexCorruptError(f"the covering index file {path} is damaged ({one_line(error)})") from error
        # A whole row file of another column (or index) in its place reads, but is not this one.
        if footer.num_rows != row_file.rows or not keys.equals(key_type) or not is_stamped(footer):
            raise IndexCorruptError(f"the covering index file {path} does not match the root")
        return footer


class _Test:
    """A condition on keys: ranges (values are one-key ranges), NULL, and a LIKE pattern."""

    def __init__(self, ranges: list[KeyRange], null: bool, pattern: str | None, key_type: pa.DataType) -> None:
        self.ranges = ranges
        self.null = null
        self.pattern = pattern
        self.key_type = key_type

    def mask(self, keys: pa.ChunkedArray) -> pa.ChunkedArray:
        keep = pc.is_null(keys) if self.null else pa.chunked_array([pa.array(np.zeros(len(keys), bool))])
        for key_range in self.ranges:
            keep = pc.or_(keep, pc.fill_null(key_range.mask(keys), False))
        if self.pattern is not None:
            keep = pc.and_(keep, pc.fill_null(like(keys, self.pattern), False))
        return keep


def _groups(row_file: RowFile, test: _Test, chunk_rows: int) -> list[int]:
    """Row groups of ``row_file`` whose keys may pass ``test`` (keys sorted, NULL first): row
    group ``j`` spans ``[firsts[j], firsts[j + 1]]``, found by bisection."""
    firsts = row_file.sort_keys
    count = len(firsts)
    chosen: set[int] = set()
    if test.null:
        chosen.update(range(min(count, -(-row_file.null_rows // chunk_rows))))
    for key_range in test.ranges:
        # Groups starting at or below the high bound, and ending at or above the low bound.
        end = count if key_range.high is None else bisect.bisect_right(firsts, sort_key(key_range.high))
        start = 0 if key_range.low is None else max(bisect.bisect_left(firsts, sort_key(key_range.low)) - 1, 0)
        bounds = [*row_file.firsts, row_file.last]
        chosen.update(group for group in range(start, end) if key_range.overlaps(bounds[group], bounds[group + 1]))
    return sorted(chosen)


def _estimate(groups: list[tuple[RowSegment, RowFile, list[int]]], test: _Test) -> Estimate:
    index = Cost()
    candidates = 0.0
    for segment, row_file, chosen in groups:
        if not chosen:
            continue
        group_bytes = row_file.size / max(len(row_file.firsts), 1)
        index = index + Cost(READS_PER_GROUP * len(chosen), group_bytes * len(chosen))
        per_group = segment.files * min(1.0, len(chosen) / max(len(row_file.firsts), 1))
        per_value = segment.pairs / max(segment.distinct, 1)
        points = all(r.low is not None and r.low == r.high for r in test.ranges) and test.pattern is None
        candidates += min(segment.files, len(test.ranges) * per_value if points and test.ranges else per_group)
    return Estimate(candidates, index)


class _Prefetched(io.RawIOBase):
    """A file of the index as pyarrow reads it: served from byte ranges read beforehand (a
    read outside them is an error: the ranges were computed from the footer)."""

    def __init__(self, ranges: dict[int, bytes], size: int) -> None:
        self.ranges = ranges
        self.size = size
        self.position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = base + offset
        return self.position

    def read(self, size: int = -1) -> bytes:
        for start, data in self.ranges.items():
            if start <= self.position < start + len(data):
                offset = self.position - start
                end = len(data) if size is None or size < 0 else min(len(data), offset + size)
                self.position = start + end
                return data[offset:end]
        raise OSError(f"a read at byte {self.position} outside the row groups read")

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
