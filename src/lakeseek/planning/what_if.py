"""Hyperspace's whatIf: how a query would run with indexes that do not exist yet, estimated
from the lake's own statistics (each data file's rows, and per column its bounds and NULLs:
:mod:`lakeseek.lake.statistics`), without building them.

A hypothetical index is planned by the same planner as a real one. Its reader answers each
condition from the statistics: the *min/max floor* (the files whose bounds admit a match,
which a bounds-only sketch would leave; a file without statistics always counts), and the
files expected to *hold* a match: for a value, each file in the floor holds it with the
chance its non-NULL values have to include it (its values over the steps of its range, for
integers, dates, timestamps and decimals; otherwise as if the values were distinct keys,
shared out over the files in the floor); for a range, the share of each file's range it
overlaps. The kind turns that into its lookup's estimate (``IndexKind.what_if``): index reads
and bytes, and the files it would leave (its false positives included).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.cost import LakeSize, human_size
from lakeseek.exceptions import LakeseekError
from lakeseek.expressions import Predicate
from lakeseek.expressions.binding import resolve_column, value_type
from lakeseek.expressions.like import like_prefix, prefix_successor
from lakeseek.expressions.types import arrow_scalar
from lakeseek.kinds import kind_named
from lakeseek.kinds.base import LOCATION_SHIFT, Condition, Hypothesis, KindReader, Lookup, Range, Values
from lakeseek.lake.state import LakeState
from lakeseek.lake.statistics import ColumnBounds, FileStatistics
from lakeseek.planning.planner import Planner

# A file holding each of its distinct values this many times or more is taken to hold every
# common value of the column (status codes, countries), not a share of distinct keys.
REPEATS = 8


@dataclass(frozen=True)
class IndexSpec:
    """An index to imagine: its kind, columns and kind options (``create_index``'s)."""

    kind: str
    columns: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> IndexSpec:
        """``KIND:COLUMN[,COLUMN...][;OPTION=VALUE...]``, e.g. ``covering:id;include=a,b``
        (a value is JSON, or else text)."""
        head, _, rest = text.partition(";")
        kind, colon, names = head.partition(":")
        columns = tuple(name.strip() for name in names.split(",") if name.strip())
        if not colon or not kind.strip() or not columns:
            raise LakeseekError(f"what-if index {text!r} is not KIND:COLUMNS (e.g. cuckoo:record_id)")
        options = dict(_option(part) for part in rest.split(";") if part.strip())
        return cls(kind.strip(), columns, options)

    def __str__(self) -> str:
        options = "".join(
            f";{key}={','.join(value) if isinstance(value, list | tuple) else value}"
            for key, value in self.options.items()
        )
        return f"{self.kind}:{','.join(self.columns)}{options}"


def _option(text: str) -> tuple[str, object]:
    key, equals, raw = text.partition("=")
    if not equals or not key.strip():
        raise LakeseekError(f"what-if option {text!r} is not KEY=VALUE")
    try:
        return key.strip(), json.loads(raw)
    except ValueError:
        return key.strip(), raw


@dataclass(frozen=True)
class WhatIf:
    """How the query would run with one hypothetical index."""

    spec: IndexSpec
    used: bool  # whether its plan would read through it rather than every file
    estimated: float  # the cost model's estimate of that plan
    estimated_files: float  # the data files it would leave
    floor_files: int  # the files whose statistics admit a match (the min/max floor)
    total_files: int
    index_reads: float
    index_bytes: float
    why_not: str | None = None
    covered: bool = False  # a covering index carrying every column asked for: no data file opened

    def line(self) -> str:
        if not self.used:
            return f"- {self.spec}: every file read ({human_size(self.estimated)}); why not: {self.why_not}"
        files = "no data file (rows from the index)" if self.covered else f"~{self.estimated_files:,.0f} files"
        return (
            f"+ {self.spec}: estimated {human_size(self.estimated)}: ~{self.index_reads:,.0f} index reads "
            f"({human_size(self.index_bytes)}), {files}; "
            f"min/max floor {self.floor_files:,} of {self.total_files:,} files"
        )


def specs_of(what_if: Sequence[str | IndexSpec]) -> list[IndexSpec]:
    return [spec if isinstance(spec, IndexSpec) else IndexSpec.parse(spec) for spec in what_if]


def stored_columns(specs: Sequence[IndexSpec], schema: pa.Schema) -> list[str]:
    """The columns the hypothetical indexes would store (indexed and included), as named in ``schema``."""
    names = [name for spec in specs for name in _stored(spec, schema)]
    return list(dict.fromkeys(names))


def _stored(spec: IndexSpec, schema: pa.Schema) -> list[str]:
    kind = kind_named(spec.kind)
    columns = [resolve_column(name, schema).name for name in spec.columns]
    return [resolve_column(name, schema).name for name in kind.stored_columns(kind.configure(spec.options), columns)]


def what_if(
    specs: Sequence[IndexSpec],
    predicate: Predicate,
    schema: pa.Schema,
    statistics: FileStatistics,
    partition_columns: Sequence[str] = (),
    output: Sequence[str] | None = None,
) -> list[WhatIf]:
    """Each hypothetical index's plan for a ``predicate`` bound to ``schema``, over the files
    ``statistics`` describes (``output``: the columns read, None for all of them)."""
    paths = statistics.paths
    state = LakeState(
        files=dict.fromkeys(paths),
        indexed=dict(enumerate(paths)),
        new=[],
        changed=[],
        removed=[],
        recorded=[],
        indexed_bytes=int(statistics.sizes.sum()),
    )
    results = []
    for spec in specs:
        kind = kind_named(spec.kind)
        config = kind.configure(spec.options)
        columns = [resolve_column(name, schema).name for name in spec.columns]
        kind.check_columns(columns, schema, tuple(partition_columns))
        stored = [resolve_column(name, schema).name for name in kind.stored_columns(config, columns)]
        reader = _StatisticsReader(kind, config, schema, statistics, stored)
        planner = Planner(reader, schema, columns, state)
        prepared = planner.prepare(predicate)
        plan = prepared.run()
        cost = prepared.cost
        wanted = set(predicate.columns()) | set(schema.names if output is None else output)
        covered = reader.carries_rows and plan.index_used and wanted <= set(stored)
        results.append(
            WhatIf(
                spec=spec,
                used=plan.index_used,
                estimated=cost.index.total if covered else prepared.expected,
                estimated_files=0.0 if covered else cost.candidates,
                floor_files=len(plan.files),
                total_files=len(paths),
                index_reads=cost.index.reads,
                index_bytes=cost.index.bytes,
                why_not=plan.reason,
                covered=covered,
            )
        )
    return results


class _StatisticsReader(KindReader):
    """A hypothetical index's reader: lookups answered from the files' statistics. Its
    lookups' locations are the min/max floor."""

    def __init__(self, kind, config: Any, schema: pa.Schema, statistics: FileStatistics, stored: list[str]) -> None:
        self.kind = kind
        self.config = config
        self.schema = schema
        self.statistics = statistics
        self.carries_rows = kind.carries_rows
        rows = max(int(statistics.rows.sum()), 1)
        self.row_bytes = sum(
            statistics.columns[c].value_bytes * statistics.columns[c].values.sum() / rows
            for c in stored
            if c in statistics.columns
        )

    def lookup(self, condition: Condition, indexed: LakeSize) -> Lookup | str:
        bounds = self.statistics.columns[condition.column]
        column_type = value_type(self.schema.field(condition.column).type)
        floor, holding, keys = _admitted(condition, bounds, column_type)
        hypothesis = Hypothesis(
            condition=condition,
            files=len(self.statistics.paths),
            keys=keys,
            bounded=float(floor.sum()),
            holding=holding,
            entries=float(bounds.values.sum()),
            key_bytes=bounds.value_bytes,
            row_bytes=self.row_bytes or bounds.value_bytes,
        )
        estimate = self.kind.what_if(self.config, hypothesis)
        if isinstance(estimate, str):
            return estimate
        locations = np.flatnonzero(floor).astype(np.int64) << LOCATION_SHIFT
        return Lookup(condition.column, estimate, lambda: locations)


def _admitted(condition: Condition, bounds: ColumnBounds, column_type: pa.DataType) -> tuple[np.ndarray, float, int]:
    """The files whose statistics admit a match (a mask), the files expected to hold one,
    and the values looked up."""
    has_values = bounds.values > 0
    unknown = np.asarray(pc.is_null(bounds.mins).to_numpy(zero_copy_only=False)) & has_values
    if isinstance(condition, Values):
        present = [value for value in condition.values if value is not None]
        floor = np.zeros(len(has_values), bool)
        holding = 0.0
        if len(present) < len(condition.values):  # IS NULL
            nulls = np.isnan(bounds.nulls) | (bounds.nulls > 0)
            floor |= nulls
            holding += float(nulls.sum())
        for value in present:
            admits = _within(bounds, arrow_scalar(value, column_type), arrow_scalar(value, column_type), True, True)
            admits = (admits & has_values) | unknown
            floor |= admits
            holding += max(min(1.0, float(admits.sum())), float(_chances(bounds, admits, column_type).sum()))
        return floor, min(holding, float(floor.sum())), len(present)
    if isinstance(condition, Range):
        low = None if condition.low is None else arrow_scalar(condition.low, column_type)
        high = None if condition.high is None else arrow_scalar(condition.high, column_type)
        floor = (_within(bounds, low, high, condition.low_inclusive, condition.high_inclusive) & has_values) | unknown
        if pa.types.is_floating(column_type) and high is None:
            floor |= has_values  # NaN sorts above every number, and bounds leave it out
        return floor, float(_overlaps(bounds, floor, low, high, column_type).sum()), 0
    prefix = like_prefix(condition.pattern)
    if not prefix:
        return has_values, float(has_values.sum()), 0
    successor = prefix_successor(prefix)
    high = None if successor is None else pa.scalar(successor, column_type)
    floor = (_within(bounds, pa.scalar(prefix, column_type), high, True, False) & has_values) | unknown
    return floor, float(floor.sum()), 0


def _within(bounds: ColumnBounds, low, high, low_inclusive: bool, high_inclusive: bool) -> np.ndarray:
    """Files whose [min, max] meets the range (unknown bounds: False here, added by callers)."""
    keep = pc.is_valid(bounds.mins)
    if low is not None:
        keep = pc.and_(keep, (pc.greater_equal if low_inclusive else pc.greater)(bounds.maxs, low))
    if high is not None:
        keep = pc.and_(keep, (pc.less_equal if high_inclusive else pc.less)(bounds.mins, high))
    return np.asarray(keep.fill_null(False).to_numpy(zero_copy_only=False), bool)


def _positions(array: pa.Array, column_type: pa.DataType) -> np.ndarray | None:
    """Values as numbers in steps of the type (integers, dates and timestamps in their unit,
    decimals in their last digit), or None for a type without steps."""
    if pa.types.is_integer(column_type) or pa.types.is_temporal(column_type):
        storage = pa.int32() if pa.types.is_date32(column_type) else pa.int64()
        if pa.types.is_uint64(column_type):
            return array.to_numpy(zero_copy_only=False).astype(np.float64)
        return pc.cast(array, storage).to_numpy(zero_copy_only=False).astype(np.float64)
    if pa.types.is_decimal(column_type):
        return pc.cast(array, pa.float64()).to_numpy(zero_copy_only=False) * 10.0**column_type.scale
    return None


def _chances(bounds: ColumnBounds, admits: np.ndarray, column_type: pa.DataType) -> np.ndarray:
    """Per admitting file, the chance it holds one given value: its distinct values over the
    steps of its range; without steps, 1 for a file whose values repeat (a low-cardinality
    column), else as for distinct keys: the value is in one of the files admitting it."""
    distinct = bounds.distinct
    low, high = _positions(bounds.mins, column_type), _positions(bounds.maxs, column_type)
    if low is not None:
        steps = np.nan_to_num(high - low, nan=0.0) + 1.0
        chances = np.minimum(1.0, distinct / np.maximum(steps, 1.0))
    else:
        repeating = distinct * REPEATS <= bounds.values
        chances = np.where(repeating, 1.0, distinct / max(float(distinct[admits].sum()), 1.0))
    return np.where(admits, chances, 0.0)


def _overlaps(bounds: ColumnBounds, floor: np.ndarray, low, high, column_type: pa.DataType) -> np.ndarray:
    """Per file in the floor, the chance it holds a value of the range: ``1 - (1 - s)^n`` for
    the share ``s`` of its range the query's covers and its ``n`` values (1 without steps)."""
    lows, highs = _positions(bounds.mins, column_type), _positions(bounds.maxs, column_type)
    if lows is None or (low is None and high is None):
        return floor.astype(np.float64)
    numbers = _positions(pa.array([low, high], column_type), column_type)
    start = lows if low is None else np.maximum(lows, numbers[0])
    end = highs if high is None else np.minimum(highs, numbers[1])
    width = np.maximum(highs - lows, 0.0) + 1.0
    share = np.clip((end - start + 1.0) / width, 0.0, 1.0)
    share = np.nan_to_num(share, nan=1.0)
    chances = 1.0 - np.power(1.0 - share, bounds.values.astype(np.float64))
    return np.where(floor, chances, 0.0)
