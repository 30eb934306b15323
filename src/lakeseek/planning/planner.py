"""Which files (and row groups) a predicate must read, from an index and the lake's state.

Planning has two steps. *Analysis* turns the bound predicate into conditions on single
columns (values, ranges, LIKE patterns) and asks the index's kind for a lookup of each, with
its estimated cost (see :mod:`lakeseek.cost`); ranges on one column under an AND are merged
into one condition first. *Evaluation* runs the lookups, cheapest of an ``AND`` first,
skipping a lookup whose index read would cost more than the files it could still remove,
and falls back to reading every file when the whole index read would cost more than the
scan it saves. Whatever the index says, files it does not cover are always read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection

import numpy as np
import pyarrow as pa

from lakeseek.cost import Cost, Estimate, LakeSize, human_size
from lakeseek.expressions import And, ColumnComparison, Comparison, Constant, In, IsNull, Like, Not, Or, Predicate
from lakeseek.expressions.binding import value_type
from lakeseek.expressions.rounding import domain, float_bounds
from lakeseek.expressions.types import is_text, ordered
from lakeseek.kinds.base import LOCATION_SHIFT, Condition, KindReader, Lookup, Pattern, Range, Values
from lakeseek.lake.state import LakeState
from lakeseek.planning.plan import Fallback, Plan, PlanCost, Prepared

_RANGE_OPERATORS = ("<", "<=", ">", ">=")


# -- analysis nodes: a Lookup (kinds.base), or one of these ------------------------------------------
@dataclasses.dataclass(frozen=True)
class _All:
    """No lookup narrows this part: every file may match."""

    note: str | None = None


@dataclasses.dataclass(frozen=True)
class _None:
    """Nothing matches (FALSE, or NULL)."""


@dataclasses.dataclass(frozen=True)
class _Both:
    parts: tuple  # each a node; every part must match


@dataclasses.dataclass(frozen=True)
class _Either:
    parts: tuple  # each a node; any part may match


class Planner:
    """Plans predicates against one index version and one state of the lake."""

    def __init__(
        self,
        reader: KindReader,
        schema: pa.Schema,
        columns: Collection[str],
        state: LakeState,
        served: set[str] | None = None,
    ) -> None:
        self.reader = reader
        self.schema = schema  # the lake's, which predicates are bound to
        self.columns = columns  # the indexed columns
        self.state = state
        self.served = served  # indexed columns the index answers for (None: all; see Index.serves)
        self.lake = LakeSize(len(state.indexed), state.indexed_bytes)
        self.unindexed = LakeSize(len(state.unindexed), state.unindexed_bytes)
        self.notes: list[str] = []

    def plan(self, predicate: Predicate) -> Plan:
        return self.prepare(predicate).run()

    def prepare(self, predicate: Predicate) -> Prepared:
        """The plan's estimate, from the index's root alone; its lookups run when it is run."""
        scan = self.lake.read_cost(self.lake.files) + self.unindexed.read_cost(self.unindexed.files)
        if self.state.unindexed and not self.state.indexed:  # no lookup could leave a file out
            cost = PlanCost(Cost(), 0, scan, scan)
            reason = (
                f"the index covers none of the lake's {len(self.state.unindexed):,} files "
                "(all new or rewritten since indexing): refresh it"
            )
            return Prepared(cost, False, lambda: self._scan(cost, [], reason, Fallback.NOT_SERVED))
        node = self._analyse(predicate)
        if isinstance(node, _All):  # a scan, as much as any index's
            cost = PlanCost(Cost(), self.lake.files, scan, scan)
            return Prepared(cost, False, lambda: self._scan(cost, [], self._unserved(), Fallback.NOT_SERVED))
        estimate = self._estimate(node)
        candidates = self.lake.read_cost(estimate.candidates)
        if self.reader.row_groups:
            # Candidates are then row groups, whose share of their files the root does not
            # know: only the index read is weighed against the scan.
            candidates = Cost()
        with_index = estimate.index + candidates
        with_index = with_index + self.unindexed.read_cost(self.unindexed.files)
        cost = PlanCost(estimate.index, estimate.candidates, with_index, scan)
        if with_index.total >= scan.total and not isinstance(node, _None):
            reason = (
                f"reading the index (~{human_size(estimate.index.bytes)}) would cost more than it saves: "
                f"~{estimate.candidates:,.0f} of {self.lake.files:,} files would remain"
            )
            return Prepared(cost, False, lambda: self._scan(cost, [], reason, Fallback.TOO_COSTLY))
        return Prepared(cost, True, lambda: self._run(node, cost))

    def covering(self, predicate: Predicate) -> Lookup | None:
        """A lookup of the predicate whose rows the index carries (a covering kind): the
        predicate's own when it is one condition, else the cheapest of its AND's; None when
        no part the whole predicate needs has one."""
        node = self._analyse(predicate)
        parts = node.parts if isinstance(node, _Both) else (node,)
        carrying = [part for part in parts if isinstance(part, Lookup) and part.rows is not None]
        return min(carrying, key=lambda part: part.estimate, default=None)

    def _run(self, node, cost: PlanCost) -> Plan:
        used: list[str] = []
        locations = self._evaluate(node, used)
        if locations is None:
            return self._scan(cost, used, self._unserved(), Fallback.NOT_SERVED)
        ids = locations >> LOCATION_SHIFT
        files = {self.state.indexed[i] for i in np.unique(ids).tolist() if i in self.state.indexed}
        row_groups = self._row_groups(locations) if self.reader.row_groups else {}
        return self._result(files.union(self.state.unindexed), cost, used, row_groups=row_groups)

    def _row_groups(self, locations: np.ndarray) -> dict[str, tuple[int, ...]]:
        """Per candidate file, its row groups that may match (locations are sorted)."""
        if not len(locations):
            # np.split of an empty array still yields one (empty) piece, for no file.
            return {}
        ids = locations >> LOCATION_SHIFT
        groups = locations & ((1 << LOCATION_SHIFT) - 1)
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        found = {}
        for file_id, chunk in zip(ids[starts].tolist(), np.split(groups, starts[1:]), strict=True):
            path = self.state.indexed.get(file_id)
            if path is not None:
                found[path] = tuple(chunk.tolist())
        return found

    def _scan(self, cost: PlanCost, used: list[str], reason: str, fallback: Fallback) -> Plan:
        return self._result(self.state.files, cost, used, reason=reason, fallback=fallback)

    def _result(
        self,
        files,
        cost: PlanCost,
        used: list[str],
        *,
        reason: str | None = None,
        fallback: Fallback | None = None,
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
            fallback=fallback,
        )

    # -- analysis ---------------------------------------------------------------------------
    def _analyse(self, predicate: Predicate | Range):
        if isinstance(predicate, Constant):
            return _All() if predicate.value is True else _None()
        if isinstance(predicate, And):
            parts = tuple(self._analyse(p) for p in _merged_ranges(_conjuncts(predicate), self._column_type))
            return _All() if all(isinstance(part, _All) for part in parts) else _Both(parts)
        if isinstance(predicate, Or):
            parts = (self._analyse(predicate.left), self._analyse(predicate.right))
            return _All() if any(isinstance(part, _All) for part in parts) else _Either(parts)
        if isinstance(predicate, Not):
            return self._not_served("NOT is not served by the index")
        if isinstance(predicate, ColumnComparison):
            return self._not_served(f"'{predicate.left}' {predicate.op} '{predicate.right}' compares two columns")
        column = predicate.column
        if column not in self.columns:
            return self._not_served(f"column '{column}' is not indexed")
        if self.served is not None and column not in self.served:
            return self._not_served(
                f"column '{column}' has another type in files added since indexing: refresh the index to use it"
            )
        condition = self._condition(predicate)
        if not isinstance(condition, Values | Range | Pattern):
            return condition
        lookup = self.reader.lookup(condition, self.lake)
        return self._not_served(lookup) if isinstance(lookup, str) else lookup

    def _condition(self, predicate: Predicate | Range) -> Condition | _All | _None:
        """A leaf of the predicate as the condition on its column an index is asked about."""
        column = predicate.column
        if isinstance(predicate, Comparison) and not compares_exactly(predicate, self._column_type(column)):
            return self._float_range(predicate)
        if isinstance(predicate, Comparison) and predicate.op == "=":
            return Values(column, (predicate.literal.value,))
        if isinstance(predicate, In):
            return Values(column, tuple(literal.value for literal in predicate.literals))
        if isinstance(predicate, IsNull):
            return Values(column, (None,))
        if isinstance(predicate, Comparison) and predicate.op in _RANGE_OPERATORS:
            return _range_of(predicate)
        if isinstance(predicate, Range):
            return predicate
        if isinstance(predicate, Like):
            return Pattern(column, predicate.pattern)
        return self._not_served(f"'{predicate.op}' on '{column}' is not served by the index")

    def _float_range(self, predicate: Comparison) -> Range | _All | _None:
        """A comparison made in another type than the column's: in floating point, the range
        of column values it may keep; otherwise (see binding.compare) no lookup."""
        column = predicate.column
        exact = domain(self._column_type(column))
        if exact is None or not pa.types.is_floating(predicate.literal.type):
            return self._not_served(f"'{column}' compared as {predicate.literal.type} is not served by the index")
        bounds = float_bounds(predicate.op, predicate.literal.value, predicate.literal.type, exact)
        if bounds.empty:
            return _None()
        if bounds.low is None and bounds.high is None:
            return self._not_served(f"'{column}' {predicate.op} {predicate.literal.value} keeps every value")
        return Range(column, bounds.low, bounds.high)

    def _column_type(self, column: str) -> pa.DataType:
        return value_type(self.schema.field(column).type)

    def _unserved(self) -> str:
        """Why the index narrows no part of the predicate: the notes say what it could not serve."""
        return "; ".join(dict.fromkeys(self.notes)) or "no indexed column narrows the predicate"

    def _not_served(self, note: str) -> _All:
        self.notes.append(note)
        return _All(note)

    def _estimate(self, node) -> Estimate:
        total = self.lake.files
        if isinstance(node, Lookup):
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
        if isinstance(node, Lookup):
            used.append(node.column)
            return node.run()
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
                remaining = len(np.unique(current >> LOCATION_SHIFT))
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
            current = locations if current is None else np.intersect1d(current, locations, assume_unique=True)
        return current


def _range_of(comparison: Comparison) -> Range:
    value, op = comparison.literal.value, comparison.op
    if op in (">", ">="):
        return Range(comparison.column, low=value, low_inclusive=op == ">=")
    return Range(comparison.column, high=value, high_inclusive=op == "<=")


def _narrower(a: Range, b: Range) -> Range:
    """Both ranges at once: the higher low bound and the lower high bound."""
    low, low_inclusive = a.low, a.low_inclusive
    if b.low is not None and (
        low is None or ordered(b.low) > ordered(low) or (ordered(b.low) == ordered(low) and not b.low_inclusive)
    ):
        low, low_inclusive = b.low, b.low_inclusive
    high, high_inclusive = a.high, a.high_inclusive
    if b.high is not None and (
        high is None or ordered(b.high) < ordered(high) or (ordered(b.high) == ordered(high) and not b.high_inclusive)
    ):
        high, high_inclusive = b.high, b.high_inclusive
    return Range(a.column, low, high, low_inclusive, high_inclusive)


def _conjuncts(predicate: Predicate) -> list[Predicate]:
    if isinstance(predicate, And):
        return _conjuncts(predicate.left) + _conjuncts(predicate.right)
    return [predicate]


def compares_exactly(comparison: Comparison, column_type: pa.DataType) -> bool:
    """Whether the comparison is made in the column's own values (see lakeseek.expressions.binding):
    in its type, or another width of text or bytes (``binary`` for a ``large_binary`` column)."""
    literal_type = comparison.literal.type
    if literal_type is None or literal_type == column_type:
        return True
    variable_bytes = (pa.binary(), pa.large_binary())  # a fixed-size column takes no literal of another size
    return (is_text(literal_type) and is_text(column_type)) or (
        literal_type in variable_bytes and column_type in variable_bytes
    )


def _merged_ranges(parts: list[Predicate], column_type: Callable[[str], pa.DataType]) -> list[Predicate | Range]:
    """Range comparisons on one column folded into one range (one index read, not two)."""
    ranges: dict[str, Range] = {}
    others: list[Predicate | Range] = []
    for part in parts:
        ranged = isinstance(part, Comparison) and part.op in _RANGE_OPERATORS
        if ranged and compares_exactly(part, column_type(part.column)):
            single = _range_of(part)
            ranges[part.column] = _narrower(ranges[part.column], single) if part.column in ranges else single
        else:
            others.append(part)
    return [*ranges.values(), *others]


def _describe(node) -> str:
    return f"'{node.column}'" if isinstance(node, Lookup) else "part of the predicate"
