"""Which files of an OTree lake may hold rows matching a predicate.

A file is kept when one of its blocks may: each leaf of the predicate is tested against
the block's cube box (the leaf's values transformed like the rows were), its weight range
(``_lakeseek_weight``: a sample is a weight predicate) and its file's column bounds, all of
which hold every row of the block, so a leaf a block fails has no row there. AND, OR and
constants combine per block; NOT and whatever else a leaf cannot be tested on keep the block.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lakeseek.expressions import And, Comparison, Constant, In, IsNull, Literal, Or, Predicate
from lakeseek.expressions.binding import value_type
from lakeseek.layout.cubes import boxes
from lakeseek.layout.table import LayoutState, decode_bound, storage_array
from lakeseek.layout.transforms import Transformation
from lakeseek.layout.tree import WEIGHT
from lakeseek.planning.planner import compares_exactly

_Interval = tuple[float, float]
_PRUNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PRUNERS_LOCK = threading.Lock()


def pruner_of(state: LayoutState) -> LayoutPruner:
    """The pruner of ``state``, made once per state object (states are cached per log entry)."""
    with _PRUNERS_LOCK:
        found = _PRUNERS.get(state)
    if found is None:
        found = LayoutPruner(state)
        with _PRUNERS_LOCK:
            _PRUNERS[state] = found
    return found


class LayoutPruner:
    def __init__(self, state: LayoutState) -> None:
        self.schema = state.schema
        self.paths = sorted(state.files)
        files = [state.files[path] for path in self.paths]
        owner, low, high, revision, cubes = [], [], [], [], []
        for number, file in enumerate(files):
            for block in file.blocks:
                owner.append(number)
                low.append(block.min_weight)
                high.append(block.max_weight)
                revision.append(file.revision)
                cubes.append(block.cube)
        self.owner = np.array(owner, dtype=np.int64)
        self.weights = (np.array(low, dtype=np.int64), np.array(high, dtype=np.int64))
        revision = np.array(revision, dtype=np.int64)
        # Per revision: its transformations, its blocks and their boxes.
        self.spaces = []
        for rev in state.revisions:
            members = np.flatnonzero(revision == rev.id)
            found = boxes(len(rev.transformations), [cubes[i] for i in members])
            self.spaces.append((rev.transformations, members, found))
        self._statistics = [file.statistics for file in files]
        self._bounds: dict[str, _FileBounds] = {}
        self._lock = threading.Lock()

    def files(self, predicate: Predicate, candidates: Iterable[str] | None = None) -> list[str]:
        """The paths (of ``candidates``, default all) holding a block that may match."""
        keep = self._blocks(predicate)
        kept = {self.paths[i] for i in np.unique(self.owner[keep]).tolist()}
        return [path for path in (self.paths if candidates is None else candidates) if path in kept]

    # -- per block --------------------------------------------------------------------------------
    def _blocks(self, predicate: Predicate) -> np.ndarray:
        count = len(self.owner)
        if isinstance(predicate, Constant):
            return np.full(count, predicate.value is True)
        if isinstance(predicate, And):
            return self._blocks(predicate.left) & self._blocks(predicate.right)
        if isinstance(predicate, Or):
            return self._blocks(predicate.left) | self._blocks(predicate.right)
        if not isinstance(predicate, Comparison | In | IsNull) or predicate.column not in self.schema.names:
            return np.ones(count, dtype=bool)
        column_type = value_type(self.schema.field(predicate.column).type)
        values = _values(predicate, column_type)
        if values is None:
            return np.ones(count, dtype=bool)
        keep = self._by_bounds(predicate, values)
        for transformations, members, (low, high) in self.spaces:
            for dimension, transformation in enumerate(transformations):
                if transformation.column == predicate.column:
                    intervals = _intervals(predicate, values, transformation, column_type)
                    if intervals is not None:
                        keep[members] &= _meets(low[:, dimension], high[:, dimension], intervals)
        if predicate.column == WEIGHT:
            keep &= _in_range(predicate, values, *self.weights)
        return keep

    def _by_bounds(self, predicate, values: list) -> np.ndarray:
        """Per block: whether its file's bounds of the leaf's column may hold a row it keeps."""
        bounds = self._file_bounds(predicate.column)
        files = ~bounds.recorded
        if isinstance(predicate, IsNull):
            files |= bounds.nulls
        else:
            present = np.flatnonzero(bounds.present)
            files[present] = _in_range(predicate, values, bounds.low[present], bounds.high[present])
        return files[self.owner] if len(self.owner) else np.zeros(0, dtype=bool)

    def _file_bounds(self, column: str) -> _FileBounds:
        with self._lock:
            found = self._bounds.get(column)
        if found is None:
            found = _FileBounds.of(column, self._statistics)
            with self._lock:
                self._bounds[column] = found
        return found


@dataclass(frozen=True)
class _FileBounds:
    """One column's bounds in every file: whether the file records them, holds a non-NULL
    value, holds a NULL; the lowest and highest values (Python objects, compared exactly)."""

    recorded: np.ndarray
    present: np.ndarray
    nulls: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def of(cls, column: str, statistics: list[dict]) -> _FileBounds:
        count = len(statistics)
        recorded, present, nulls = (np.zeros(count, dtype=bool) for _ in range(3))
        low, high = np.full(count, None, dtype=object), np.full(count, None, dtype=object)
        for number, entry in enumerate(statistics):
            bound = entry.get(column)
            if bound is None:
                continue
            recorded[number], nulls[number] = True, bool(bound[2])
            if bound[0] is not None and bound[1] is not None:
                present[number] = True
                low[number], high[number] = decode_bound(bound[0]), decode_bound(bound[1])
        return cls(recorded, present, nulls, low, high)


def _values(predicate: Comparison | In | IsNull, column_type: pa.DataType) -> list | None:
    """The leaf's literals as the column's storage values (None for IS NULL's); None when a
    literal is not exactly a value of the column (then nothing prunes on it)."""
    if isinstance(predicate, IsNull):
        return [None]
    literals = [predicate.literal] if isinstance(predicate, Comparison) else list(predicate.literals)
    found = []
    for literal in literals:
        converted = _storage_value(predicate.column, literal, column_type)
        if converted is _INEXACT:
            return None
        found.append(converted)
    return found


_INEXACT = object()


def _storage_value(column: str, literal: Literal, column_type: pa.DataType):
    if literal.value is None:
        return None
    if literal.type is None or not compares_exactly(Comparison("=", column, literal), column_type):
        return _INEXACT
    try:
        array = pa.array([literal.value], literal.type).cast(column_type)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        return _INEXACT
    return array


def _as_storage(array: pa.Array | None):
    return None if array is None else storage_array(array).to_pylist()[0]


def _in_range(predicate, values: list, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Whether blocks (or files) of values in ``[low, high]`` may hold a row the leaf keeps."""
    if isinstance(predicate, IsNull):
        return np.ones(len(low), dtype=bool)
    points = [_as_storage(v) for v in values if v is not None]
    op = predicate.op if isinstance(predicate, Comparison) else "in"
    if not points:
        return np.zeros(len(low), dtype=bool)  # a comparison with NULL keeps nothing
    if op == "<>":
        return np.ones(len(low), dtype=bool)
    if low.dtype == object:
        # Compared as the Python values: NumPy makes a bare str or bytes operand one of its own
        # string scalars, which drop trailing NUL characters ('a\x00' would compare as 'a').
        points = [_as_object(point) for point in points]
    if op in ("=", "in"):
        found = np.zeros(len(low), dtype=bool)
        for point in points:
            found |= np.asarray((low <= point) & (point <= high), dtype=bool)
        return found
    point = points[0]
    return np.asarray({"<": low < point, "<=": low <= point, ">": high > point, ">=": high >= point}[op], dtype=bool)


def _as_object(value: object) -> np.ndarray:
    """``value`` as a NumPy object scalar array, compared element-wise as the Python value."""
    held = np.empty((), dtype=object)
    held[()] = value
    return held


def _intervals(predicate, values: list, transformation: Transformation, column_type) -> list[_Interval] | None:
    """The coordinates (closed intervals) the leaf's rows take on this dimension; None: any."""
    if isinstance(predicate, IsNull):
        return [(0.0, 0.0)]
    present = [v for v in values if v is not None]
    if not present:
        return []
    positions = transformation.positions(pa.concat_arrays(present)).tolist()
    op = predicate.op if isinstance(predicate, Comparison) else "in"
    if op in ("=", "in"):
        if transformation.orders:
            return [(min(positions), max(positions))]
        return [(p, p) for p in positions]
    if not transformation.orders or op == "<>":
        return None
    return [(0.0, positions[0])] if op in ("<", "<=") else [(positions[0], 1.0)]


def _meets(low: np.ndarray, high: np.ndarray, intervals: list[_Interval]) -> np.ndarray:
    """Whether boxes ``[low, high)`` (closed at 1.0) meet any closed interval."""
    found = np.zeros(len(low), dtype=bool)
    top = high >= 1.0
    for start, end in intervals:
        found |= ((start < high) | (top & (start <= high))) & (end >= low)
    return found
