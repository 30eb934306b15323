"""Lookups in a skipping index: conditions evaluated on every file's sketch at once.

A condition becomes a test on each sketch row, as Hyperspace translates predicates: values
are in a file when each lies in its ``[min, max]`` and its value list or bloom filter may
hold it; a range when it overlaps ``[min, max]``; a LIKE with a literal prefix as the range
of strings with that prefix (and, on value lists, the pattern itself); IS NULL when the
file holds NULL. A file whose sketch is unknown is always a candidate. A lookup reads only
the sketch columns its test needs, once per version (then kept in the reader).
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.cost import Cost, Estimate, LakeSize
from lakeseek.exceptions import IndexCorruptError
from lakeseek.expressions.binding import value_type
from lakeseek.expressions.like import like, like_prefix, prefix_successor
from lakeseek.format.bloom import FALSE_POSITIVE_RATE, filters_may_contain
from lakeseek.format.root import Root
from lakeseek.format.values import KeyValue, sort_key
from lakeseek.io import Storage
from lakeseek.kinds.base import REPAIR, Condition, KindReader, Lookup, Pattern, Range, Values
from lakeseek.kinds.keys import KeyRange, bound_key, is_nanoseconds, key_number
from lakeseek.kinds.skipping.content import ColumnSummary, SketchSegment, SkippingIndex
from lakeseek.kinds.skipping.sketches import BOUNDS, MEMBERS, locations, read_segment

# A segment's footer and its column chunks: about two reads.
READS_PER_SEGMENT = 2


class SkippingReader(KindReader):
    def __init__(self, storage: Storage, index_dir: str, root: Root) -> None:
        self.storage = storage
        self.index_dir = index_dir
        self.content: SkippingIndex = root.content
        self.schema = root.schema
        self.row_groups = self.content.config.row_groups
        self._lock = threading.Lock()
        self._columns: dict[tuple[str, str], pa.Table] = {}  # (segment path, part) -> file_id + that part

    # -- what the planner asks ------------------------------------------------------------------
    def lookup(self, condition: Condition, indexed: LakeSize) -> Lookup | str:
        column = condition.column
        if column not in self.content.key_types:
            return f"column '{column}' is not indexed"
        key_type = self.content.key_types[column]
        column_type = value_type(self.schema.field(column).type)
        segments = self.content.segments_of(column)
        if isinstance(condition, Values):
            keys = [None if v is None else bound_key(v, column_type, key_type) for v in condition.values]
            estimate = self._estimate(segments, column, lambda s, n: _value_files(s, n, keys), members=True)
            return Lookup(column, estimate, lambda: self._locations(segments, column, _ValuesTest(keys, key_type)))
        if isinstance(condition, Range):
            widen = is_nanoseconds(column_type)  # keys of a nanosecond column are truncated to microseconds
            low = None if condition.low is None else bound_key(condition.low, column_type, key_type)
            high = None if condition.high is None else bound_key(condition.high, column_type, key_type)
            key_range = KeyRange(low, high, condition.low_inclusive or widen, condition.high_inclusive or widen)
            estimate = self._estimate(segments, column, lambda s, n: _range_files(s, n, key_range), members=False)
            return Lookup(column, estimate, lambda: self._locations(segments, column, _RangeTest(key_range)))
        if isinstance(condition, Pattern):
            prefix = like_prefix(condition.pattern)
            if not prefix:
                return f"LIKE '{condition.pattern}' on '{column}' has no literal prefix for the sketches"
            key_range = KeyRange(prefix, prefix_successor(prefix), True, False)
            test = _PatternTest(key_range, condition.pattern)
            estimate = self._estimate(segments, column, lambda s, n: _pattern_files(s, n, key_range), members=True)
            return Lookup(column, estimate, lambda: self._locations(segments, column, test))
        return f"{type(condition).__name__} on '{column}' is not served by the index"

    def _estimate(self, segments: list[SketchSegment], column: str, files_of, *, members: bool) -> Estimate:
        index = Cost()
        candidates = 0.0
        for segment in segments:
            summary = segment.summary(column)
            wanted = summary.bounds_bytes + (summary.members_bytes if members else 0)
            index = index + Cost(READS_PER_SEGMENT, wanted)
            candidates += min(segment.rows, files_of(summary, segment.rows))
        return Estimate(candidates, index)

    def problems(self) -> list[str]:
        found = []
        for segment in self.content.segments:
            try:
                read_segment(self.storage, self._path(segment), segment, [])
            except IndexCorruptError as error:
                found.append(f"{error}: queries on {', '.join(segment.columns)} read every file; {REPAIR}")
        return found

    # -- lookups --------------------------------------------------------------------------------
    def _locations(self, segments: list[SketchSegment], column: str, test) -> np.ndarray:
        found = []
        for segment in segments:
            number = segment.columns.index(column)
            sketches = self._sketches(segment, number, test.parts)
            keep = np.asarray(test.keep(sketches, number), dtype=bool)
            unknown = np.asarray(pc.is_null(sketches.column(f"nulls_{number}")), dtype=bool)
            found.append(locations(sketches)[keep | unknown])
        return np.unique(np.concatenate(found)) if found else np.empty(0, np.int64)

    def _sketches(self, segment: SketchSegment, number: int, parts: tuple[str, ...]) -> pa.Table:
        """The segment's ``file_id`` and sketch ``parts`` of column ``number``, read once."""
        tables = []
        for part in parts:
            key = (segment.path, f"{part}_{number}")
            with self._lock:
                known = self._columns.get(key)
            if known is None:
                known = read_segment(self.storage, self._path(segment), segment, [key[1]])
                with self._lock:
                    self._columns[key] = known
            tables.append(known)
        table = tables[0]
        for other in tables[1:]:
            table = table.append_column(other.schema.field(-1), other.column(-1))
        return table

    def _path(self, segment: SketchSegment) -> str:
        return f"{self.index_dir}/{segment.path}"


# -- tests on sketch rows --------------------------------------------------------------------
class _RangeTest:
    parts = BOUNDS

    def __init__(self, key_range: KeyRange) -> None:
        self.key_range = key_range

    def keep(self, sketches: pa.Table, number: int) -> np.ndarray:
        return _overlaps(sketches, number, self.key_range)


class _PatternTest(_RangeTest):
    parts = (*BOUNDS, "values")

    def __init__(self, key_range: KeyRange, pattern: str) -> None:
        super().__init__(key_range)
        self.pattern = pattern

    def keep(self, sketches: pa.Table, number: int) -> np.ndarray:
        listed = sketches.column(f"values_{number}")
        flat = pc.list_flatten(listed)
        # A file whose values are listed may match only if one of them does.
        matching = np.zeros(sketches.num_rows, dtype=bool)
        if len(flat):
            hits = np.asarray(pc.fill_null(like(flat, self.pattern), False), dtype=bool)
            matching[np.asarray(pc.list_parent_indices(listed))[hits]] = True
        unlisted = np.asarray(pc.is_null(listed), dtype=bool)
        return super().keep(sketches, number) & (matching | unlisted)


class _ValuesTest:
    def __init__(self, keys: list[KeyValue], key_type: pa.DataType) -> None:
        self.null = None in keys
        self.values = list(dict.fromkeys(k for k in keys if k is not None))
        self.keys = pa.array(self.values, key_type)
        self.parts = (*BOUNDS, *MEMBERS) if len(self.keys) else ("nulls",)

    def keep(self, sketches: pa.Table, number: int) -> np.ndarray:
        keep = np.zeros(sketches.num_rows, dtype=bool)
        if self.null:
            keep |= np.asarray(pc.fill_null(sketches.column(f"nulls_{number}"), False), dtype=bool)
        if not len(self.keys):
            return keep
        inside = np.zeros(sketches.num_rows, dtype=bool)
        for key in self.values:
            inside |= _overlaps(sketches, number, KeyRange(key, key))
        listed = sketches.column(f"values_{number}")
        member = np.zeros(sketches.num_rows, dtype=bool)
        flat = pc.list_flatten(listed)
        if len(flat):
            hits = np.asarray(pc.is_in(flat, value_set=self.keys), dtype=bool)
            member[np.asarray(pc.list_parent_indices(listed))[hits]] = True
        blooms = sketches.column(f"bloom_{number}").combine_chunks()
        member |= filters_may_contain(blooms, self.keys)
        # Neither a value list nor a bloom filter (bloom=False): the bounds decide.
        member |= np.asarray(pc.and_(pc.is_null(listed), pc.is_null(blooms)), dtype=bool)
        return keep | (inside & member)


def _overlaps(sketches: pa.Table, number: int, key_range: KeyRange) -> np.ndarray:
    """Which files hold a non-NULL key in ``key_range`` by their ``[min, max]``."""
    spans = key_range.overlaps_mask(sketches.column(f"min_{number}"), sketches.column(f"max_{number}"))
    return np.asarray(spans, dtype=bool)


# -- estimates from the root's summaries ---------------------------------------------------------
def _value_files(summary: ColumnSummary, files: int, keys: list[KeyValue]) -> float:
    """Files a lookup of ``keys`` should leave: for each key inside the segment's range, the
    files holding it and the bloom filters' false positives among files with a member test,
    and the files whose own range holds it among those min/max alone tests."""
    sketched = max(files - summary.bounds_only_files, 0)
    found = 0.0
    for key in set(keys):
        if key is None:
            found += summary.null_files
        elif summary.min is not None and sort_key(summary.min) <= sort_key(key) <= sort_key(summary.max):
            found += (summary.files_per_value + FALSE_POSITIVE_RATE * files) * sketched / max(files, 1)
            found += summary.bounds_only_files * summary.span_share
    return found


def _range_files(summary: ColumnSummary, files: int, key_range: KeyRange) -> float:
    """Files whose key range overlaps ``key_range``: its share of the segment's range, widened
    by the files' own average span (files of a clustered column span little of it)."""
    share = _share(summary, key_range)
    return 0.0 if share is None else files * min(1.0, share + summary.span_share)


def _pattern_files(summary: ColumnSummary, files: int, key_range: KeyRange) -> float:
    """A LIKE prefix's files: as a range's, or fewer where value lists hold the values in it."""
    share = _share(summary, key_range)
    if share is None:
        return 0.0
    by_values = max(share * summary.distinct, 1.0) * summary.files_per_value
    return min(files * min(1.0, share + summary.span_share), by_values)


def _share(summary: ColumnSummary, key_range: KeyRange) -> float | None:
    """The share of the segment's key range in ``key_range`` (None: they do not overlap)."""
    if summary.min is None or not key_range.overlaps(summary.min, summary.max):
        return None
    low, high = key_number(summary.min), key_number(summary.max)
    if high <= low:
        return 1.0
    start = low if key_range.low is None else max(low, key_number(key_range.low))
    end = high if key_range.high is None else min(high, key_number(key_range.high))
    return max(end - start, 0.0) / (high - low)
