"""Which files (and row groups) a predicate must read, from the index and the lake's state.

Planning has two steps. *Analysis* turns the bound predicate into index lookups (points,
key ranges, LIKE patterns) with their estimated costs, from the root alone (see
:mod:`lakeseek.cost`). *Evaluation* reads the index, cheapest lookups of an ``AND`` first,
skipping a lookup whose index read would cost more than the files it could still remove,
and falls back to reading every file when the whole index read would cost more than the
scan it saves. Whatever the index says, files it does not cover are always read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lakeseek.cost import Cost, Estimate, LakeSize, chunks_for_share, estimate_files, human_size, key_share
from lakeseek.expressions import And, ColumnComparison, Comparison, Constant, In, IsNull, Like, Not, Or, Predicate
from lakeseek.expressions.arrow import like, like_tokens
from lakeseek.expressions.binding import value_type
from lakeseek.expressions.rounding import domain, float_bounds
from lakeseek.expressions.types import arrow_scalar
from lakeseek.format.index_file import FILE_ID, ROW_GROUP
from lakeseek.format.root import ColumnIndex
from lakeseek.format.values import KeyValue, key_of
from lakeseek.lake import LakeState
from lakeseek.lookup import IndexReader, KeyRange

_FILE_SHIFT = 32  # a location is file_id << 32 | row_group


@dataclass(frozen=True)
class PlanCost:
    """The cost model's view of a plan (see :mod:`lakeseek.cost`)."""

    index: Cost  # estimated index read
    candidates: float  # estimated indexed files left
    with_index: Cost  # index read + candidate files + files the index does not cover
    scan: Cost  # every file


@dataclass(frozen=True)
class Plan:
    """The files to read for one predicate, and why."""

    files: list[str]  # relative paths, sorted
    total_files: int
    index_used: bool  # False: the index could not narrow the predicate, every file is read
    indexed_columns_used: tuple[str, ...]
    unindexed_files: int  # new or changed since indexing: always read
    removed_files: int  # indexed files no longer in the lake: skipped
    reason: str | None = None  # why the index was not used, when it was not
    # Row-group precision: the row groups of a candidate file that may match (files absent
    # from the mapping are read whole).
    row_groups: dict[str, tuple[int, ...]] = field(default_factory=dict)
    cost: PlanCost | None = None
    notes: tuple[str, ...] = ()  # why parts of the predicate were not served by the index


def full_scan(files: dict, reason: str) -> Plan:
    """A plan that reads every file, because the index cannot be used at all."""
    return Plan(sorted(files), len(files), False, (), len(files), 0, reason)


# -- analysis -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Lookup:
    """One index lookup: points, or a key range with an optional key filter."""

    column: str
    estimate: Estimate
    keys: list[KeyValue] | None = None
    key_range: KeyRange | None = None
    key_filter: Callable[[pa.ChunkedArray], pa.Array] | None = None


@dataclass(frozen=True)
class _All:
    """No lookup narrows this part: every file may match."""

    note: str | None = None


@dataclass(frozen=True)
class _None:
    """Nothing matches (FALSE, or NULL)."""


@dataclass(frozen=True)
class _Both:
    parts: tuple  # each a node; every part must match


@dataclass(frozen=True)
class _Either:
    parts: tuple  # each a node; any part may match


class Planner:
    """Plans predicates against one index version and one state of the lake."""

    def __init__(self, reader: IndexReader, state: LakeState, served: set[str] | None = None) -> None:
        self.reader = reader
        self.state = state
        self.served = served  # indexed columns the index answers for (None: all; see Index.serves)
        indexed = reader.lineage()
        live = set(state.indexed)
        sizes = [size for file_id, size in zip(indexed.ids, indexed.sizes, strict=True) if file_id in live]
        self.lake = LakeSize(len(sizes), sum(sizes))
        unindexed = state.unindexed
        self.unindexed = LakeSize(len(unindexed), sum(state.files[p][0] for p in unindexed))
        self.notes: list[str] = []

    def plan(self, predicate: Predicate) -> Plan:
        node = self._analyse(predicate)
        estimate = self._estimate(node)
        scan = self.lake.read_cost(self.lake.files) + self.unindexed.read_cost(self.unindexed.files)
        candidates = self.lake.read_cost(estimate.candidates)
        if self.reader.row_groups:
            # Candidates are then row groups, whose share of their files the root does not
            # know: only the index read is weighed against the scan.
            candidates = Cost()
        with_index = estimate.index + candidates
        with_index = with_index + self.unindexed.read_cost(self.unindexed.files)
        cost = PlanCost(estimate.index, estimate.candidates, with_index, scan)
        used: list[str] = []
        if isinstance(node, _All):
            return self._scan(cost, used, self._unserved())
        if with_index.total >= scan.total and not isinstance(node, _None):
            return self._scan(
                cost,
                used,
                f"reading the index (~{human_size(estimate.index.bytes)}) would cost more than it saves: "
                f"~{estimate.candidates:,.0f} of {self.lake.files:,} files would remain",
            )
        locations = self._evaluate(node, used)
        if locations is None:
            return self._scan(cost, used, self._unserved())
        ids = locations >> _FILE_SHIFT
        files = {self.state.indexed[i] for i in np.unique(ids).tolist() if i in self.state.indexed}
        row_groups = self._row_groups(locations) if self.reader.row_groups else {}
        return self._result(files.union(self.state.unindexed), cost, used, row_groups=row_groups)

    def _row_groups(self, locations: np.ndarray) -> dict[str, tuple[int, ...]]:
        """Per candidate file, its row groups that may match (locations are sorted)."""
        if not len(locations):
            # np.split of an empty array still yields one (empty) piece, for no file.
            return {}
        ids = locations >> _FILE_SHIFT
        groups = locations & ((1 << _FILE_SHIFT) - 1)
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        found = {}
        for file_id, chunk in zip(ids[starts].tolist(), np.split(groups, starts[1:]), strict=True):
            path = self.state.indexed.get(file_id)
            if path is not None:
                found[path] = tuple(chunk.tolist())
        return found

    def _scan(self, cost: PlanCost, used: list[str], reason: str) -> Plan:
        return self._result(self.state.files, cost, used, reason=reason)

    def _result(
        self,
        files,
        cost: PlanCost,
        used: list[str],
        *,
        reason: str | None = None,
        row_groups: dict[str, tuple[int, ...]] | None = None,
    ) -> Plan:
        """A plan reading ``files``: through the index unless a ``reason`` says why not."""
        return Plan(
            files=sorted(files),
            total_files=len(self.state.files),
            index_used=reason is None,
            indexed_columns_used=tuple(dict.fromkeys(used)),
            unindexed_files=len(self.state.unindexed),
            removed_files=len(self.state.removed),
            reason=reason,
            row_groups=row_groups or {},
            cost=cost,
            notes=tuple(dict.fromkeys(self.notes)),
        )

    # -- analysis ---------------------------------------------------------------------------
    def _analyse(self, predicate: Predicate):
        if isinstance(predicate, Constant):
            return _All() if predicate.value is True else _None()
        if isinstance(predicate, And):
            parts = _merged_ranges(_conjuncts(predicate), self._column_type)
            return _Both(tuple(self._analyse(p) for p in parts))
        if isinstance(predicate, Or):
            return _Either((self._analyse(predicate.left), self._analyse(predicate.right)))
        if isinstance(predicate, Not):
            return self._not_served("NOT is not served by the index")
        if isinstance(predicate, ColumnComparison):
            return self._not_served(f"'{predicate.left}' {predicate.op} '{predicate.right}' compares two columns")
        column = next(iter(predicate.columns()))
        index = self.reader.root.columns.get(column)
        if index is None:
            return self._not_served(f"column '{column}' is not indexed")
        if self.served is not None and column not in self.served:
            return self._not_served(
                f"column '{column}' has another type in files added since indexing: refresh the index to use it"
            )
        if isinstance(predicate, Comparison) and not _exact(predicate, self._column_type(column)):
            return self._float_range(index, predicate)
        if isinstance(predicate, Comparison) and predicate.op == "=":
            return self._points(index, [predicate.literal.value])
        if isinstance(predicate, In):
            return self._points(index, [literal.value for literal in predicate.literals])
        if isinstance(predicate, IsNull):
            return self._points(index, [None])
        if isinstance(predicate, Comparison) and predicate.op in _RANGE_OPERATORS:
            predicate = _Range.of(predicate)
        if isinstance(predicate, _Range):
            return self._range(index, predicate.key_range(self._column_type(column), index.key_type))
        if isinstance(predicate, Like):
            return self._like(index, predicate.pattern)
        return self._not_served(f"'{predicate.op}' on '{column}' is not served by the index")

    def _column_type(self, column: str) -> pa.DataType:
        return value_type(self.reader.root.schema.field(column).type)

    def _unserved(self) -> str:
        """Why the index narrows no part of the predicate: the notes say what it could not serve."""
        return "; ".join(dict.fromkeys(self.notes)) or "no indexed column narrows the predicate"

    def _not_served(self, note: str) -> _All:
        self.notes.append(note)
        return _All(note)

    def _points(self, index: ColumnIndex, values: list[KeyValue]) -> _Lookup:
        column_type = self._column_type(index.name)
        keys = [None if v is None else _key(v, column_type, index.key_type) for v in values]
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
        return _Lookup(index.name, estimate_files(infos, self.lake.files), keys=keys)

    def _range(self, index: ColumnIndex, key_range: KeyRange, key_filter=None) -> _Lookup:
        infos = []
        for info in index.files:
            if key_range.overlaps(info.min, info.max):
                share = 1.0 if key_range.covers(info.min, info.max) else key_share(info, key_range.low, key_range.high)
                infos.append((info, share, chunks_for_share(info, share)))
        return _Lookup(index.name, estimate_files(infos, self.lake.files), key_range=key_range, key_filter=key_filter)

    def _like(self, index: ColumnIndex, pattern: str) -> _Lookup:
        prefix = like_prefix(pattern)
        key_range = KeyRange(prefix or None, _successor(prefix) if prefix else None, True, False)
        return self._range(index, key_range, lambda keys: like(keys, pattern))

    def _float_range(self, index: ColumnIndex, predicate: Comparison):
        """A comparison made in another type than the column's: in floating point, the range
        of column values it may keep; otherwise (see binding.compare) no lookup."""
        column_type = self._column_type(index.name)
        exact = domain(column_type)
        if exact is None or not pa.types.is_floating(predicate.literal.type):
            return self._not_served(f"'{index.name}' compared as {predicate.literal.type} is not served by the index")
        bounds = float_bounds(predicate.op, predicate.literal.value, predicate.literal.type, exact)
        if bounds.empty:
            return _None()
        if bounds.low is None and bounds.high is None:
            return self._not_served(f"'{index.name}' {predicate.op} {predicate.literal.value} keeps every value")
        widened = _Range(index.name, bounds.low, bounds.high)
        return self._range(index, widened.key_range(column_type, index.key_type))

    def _estimate(self, node) -> Estimate:
        total = self.lake.files
        if isinstance(node, _Lookup):
            return node.estimate
        if isinstance(node, _All):
            return Estimate(total, Cost())
        if isinstance(node, _None):
            return Estimate(0, Cost())
        estimates = [self._estimate(part) for part in node.parts]
        index = Cost()
        for estimate in estimates:
            index = index + estimate.index
        if isinstance(node, _Both):
            return self._greedy(
                sorted(e for e, part in zip(estimates, node.parts, strict=True) if not isinstance(part, _All))
            )
        if any(isinstance(part, _All) for part in node.parts):
            return Estimate(total, Cost())
        return Estimate(min(total, sum(e.candidates for e in estimates)), index)

    def _greedy(self, estimates: list[Estimate]) -> Estimate:
        """AND of lookups taken cheapest first, each while it pays for itself (as _intersect does)."""
        if not estimates:
            return Estimate(self.lake.files, Cost())
        index, candidates = estimates[0].index, estimates[0].candidates
        for estimate in estimates[1:]:
            share = estimate.candidates / max(self.lake.files, 1)
            if estimate.index.total < self.lake.read_cost(candidates * (1 - share)).total:
                index, candidates = index + estimate.index, candidates * share
        return Estimate(candidates, index)

    # -- evaluation -------------------------------------------------------------------------
    def _evaluate(self, node, used: list[str]) -> np.ndarray | None:
        """Sorted locations of indexed files (and row groups) that may match; None: every file."""
        if isinstance(node, _All):
            return None
        if isinstance(node, _None):
            return np.empty(0, np.int64)
        if isinstance(node, _Lookup):
            used.append(node.column)
            if node.keys is not None:
                entries = self.reader.point_entries(node.column, node.keys)
            else:
                entries = self.reader.range_entries(node.column, node.key_range, node.key_filter)
            return _locations(entries)
        if isinstance(node, _Either):
            parts = []
            for part in node.parts:
                locations = self._evaluate(part, used)
                if locations is None:
                    return None
                parts.append(locations)
            return np.unique(np.concatenate(parts))
        return self._intersect(node, used)

    def _intersect(self, node: _Both, used: list[str]) -> np.ndarray | None:
        """AND: the cheapest lookup first, then each next one only while it pays for itself."""
        served = [part for part in node.parts if not isinstance(part, _All)]
        served.sort(key=lambda part: (self._estimate(part).candidates, self._estimate(part).index.total))
        current: np.ndarray | None = None
        for part in served:
            estimate = self._estimate(part)
            if current is not None:
                if not len(current):
                    break
                remaining = len(np.unique(current >> _FILE_SHIFT))
                share = estimate.candidates / max(self.lake.files, 1)
                saving = self.lake.read_cost(remaining * (1 - share)).total
                if estimate.index.total >= saving:
                    self.notes.append(
                        f"{_describe(part)} was not looked up: its index read costs more than "
                        f"the ~{remaining * (1 - share):,.0f} files it could remove"
                    )
                    continue
            locations = self._evaluate(part, used)
            if locations is None:
                continue
            current = locations if current is None else _intersect_locations(current, locations)
        return current


def plan(predicate: Predicate, reader: IndexReader, state: LakeState, served: set[str] | None = None) -> Plan:
    return Planner(reader, state, served).plan(predicate)


# -- helpers ----------------------------------------------------------------------------------
_RANGE_OPERATORS = ("<", "<=", ">", ">=")


@dataclass(frozen=True)
class _Range(Predicate):
    """Range comparisons on one column, merged (``a >= 1 AND a < 5``): an analysis-only node."""

    column: str
    low: object = None
    high: object = None
    low_inclusive: bool = True
    high_inclusive: bool = True

    def columns(self) -> set[str]:
        return {self.column}

    @classmethod
    def of(cls, comparison: Comparison) -> _Range:
        value, op = comparison.literal.value, comparison.op
        if op in (">", ">="):
            return cls(comparison.column, low=value, low_inclusive=op == ">=")
        return cls(comparison.column, high=value, high_inclusive=op == "<=")

    def merged(self, other: _Range) -> _Range:
        low, low_inclusive = self.low, self.low_inclusive
        if other.low is not None and (low is None or other.low > low or (other.low == low and not other.low_inclusive)):
            low, low_inclusive = other.low, other.low_inclusive
        high, high_inclusive = self.high, self.high_inclusive
        if other.high is not None and (
            high is None or other.high < high or (other.high == high and not other.high_inclusive)
        ):
            high, high_inclusive = other.high, other.high_inclusive
        return _Range(self.column, low, high, low_inclusive, high_inclusive)

    def key_range(self, column_type: pa.DataType, key_type: pa.DataType) -> KeyRange:
        low = None if self.low is None else _key(self.low, column_type, key_type)
        high = None if self.high is None else _key(self.high, column_type, key_type)
        # Keys of a nanosecond column are truncated to microseconds: bounds widen to keep every row.
        widen = pa.types.is_timestamp(column_type) and column_type.unit == "ns"
        return KeyRange(low, high, self.low_inclusive or widen, self.high_inclusive or widen)


def _conjuncts(predicate: Predicate) -> list[Predicate]:
    if isinstance(predicate, And):
        return _conjuncts(predicate.left) + _conjuncts(predicate.right)
    return [predicate]


def _exact(comparison: Comparison, column_type: pa.DataType) -> bool:
    """Whether the comparison is made in the column's own type (see lakeseek.expressions.binding)."""
    return comparison.literal.type is None or comparison.literal.type == column_type


def _merged_ranges(parts: list[Predicate], column_type: Callable[[str], pa.DataType]) -> list[Predicate]:
    """Range comparisons on one column folded into one range (one index read, not two)."""
    ranges: dict[str, _Range] = {}
    others = []
    for part in parts:
        if isinstance(part, Comparison) and part.op in _RANGE_OPERATORS and _exact(part, column_type(part.column)):
            single = _Range.of(part)
            ranges[part.column] = ranges[part.column].merged(single) if part.column in ranges else single
        else:
            others.append(part)
    return [*ranges.values(), *others]


def like_prefix(pattern: str) -> str:
    """Literal text every string matching a LIKE ``pattern`` starts with (escapes resolved)."""
    prefix = []
    for char, wildcard in like_tokens(pattern):
        if wildcard:
            break
        prefix.append(char)
    return "".join(prefix)


def _successor(prefix: str) -> str | None:
    """The smallest string above every string starting with ``prefix`` (None: there is none)."""
    chars = list(prefix)
    while chars:
        code = ord(chars.pop()) + 1
        if 0xD800 <= code <= 0xDFFF:
            code = 0xE000  # surrogates are not valid text
        if code <= 0x10FFFF:
            return "".join(chars) + chr(code)
    return None


def _key(value: object, column_type: pa.DataType, key_type: pa.DataType) -> KeyValue:
    """A bound literal as an index key, through the column's type first: the scan's filter
    makes the same conversion (a millisecond column drops a literal's extra digits)."""
    return key_of(arrow_scalar(value, column_type), key_type)


def _locations(entries: pa.Table) -> np.ndarray:
    ids = entries.column(FILE_ID).to_numpy().astype(np.int64) << _FILE_SHIFT
    if ROW_GROUP in entries.column_names:
        ids = ids | entries.column(ROW_GROUP).to_numpy().astype(np.int64)
    return np.unique(ids)


def _intersect_locations(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return np.intersect1d(left, right, assume_unique=True)


def _describe(node) -> str:
    return f"'{node.column}'" if isinstance(node, _Lookup) else "part of the predicate"
