"""How a layout column's values become a coordinate in [0, 1] of the OTree's space.

Three transformations, as in qbeast: ``linear`` over the revision's ``[low, high]`` (numbers,
dates, timestamps, decimals), ``hash`` (any indexable type; only equality can prune on it)
and ``quantiles`` (boundaries computed from a sample of the data; numbers and text).

Pruning depends on one property: a transformation is monotone non-decreasing in the order
SQL compares the column's values (NaN above every number, as Spark orders it), so the rows
between two values lie between their coordinates. Values outside a linear range are clamped
to the nearest end, which keeps that property (the writer opens a new revision instead,
unless told to clamp). Quantiles are a step function, not an interpolation: interpolating in
floating point can break monotonicity by one unit in the last place at a boundary, and a
wrong answer is worse than a coarser coordinate. NULL is coordinate 0 in every column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.exceptions import InvalidArgumentError
from lakeseek.format import values as keys
from lakeseek.format.hashing import hash64

LINEAR, HASH, QUANTILES = "linear", "hash", "quantiles"
KINDS = (LINEAR, HASH, QUANTILES)
QUANTILE_COUNT = 4096  # boundaries per quantile column: 12 levels of resolution


def default_kind(arrow_type: pa.DataType) -> str:
    """qbeast's defaults: ordered types are linear, text and bytes hashed."""
    return LINEAR if is_numeric(arrow_type) else HASH


def is_numeric(arrow_type: pa.DataType) -> bool:
    checks = (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal, pa.types.is_date, pa.types.is_timestamp)
    return any(check(arrow_type) for check in checks)


def is_text(arrow_type: pa.DataType) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def check_kind(column: str, kind: str, arrow_type: pa.DataType) -> None:
    """InvalidArgumentError when ``kind`` cannot transform a column of ``arrow_type``."""
    if kind not in KINDS:
        raise InvalidArgumentError(
            f"unknown transformation {kind!r} for column '{column}' (use one of {', '.join(KINDS)})"
        )
    if kind == LINEAR and not is_numeric(arrow_type):
        raise InvalidArgumentError(f"column '{column}' is {arrow_type}: a linear transformation needs numbers or times")
    if kind == QUANTILES and not (is_numeric(arrow_type) or is_text(arrow_type)):
        raise InvalidArgumentError(f"column '{column}' is {arrow_type}: quantiles need numbers, times or text")
    if kind == HASH:
        keys.key_type_for(arrow_type, column)  # UnsupportedColumnError for what cannot be hashed


def numbers(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numeric column's values as float64 in SQL's order: NaN as +inf (above every number,
    Spark's order), NULL as NaN (the caller places it). Monotone non-decreasing."""
    kind = array.type
    if pa.types.is_date(kind):
        array = array.cast(pa.int32()) if pa.types.is_date32(kind) else array.cast(pa.int64())
    elif pa.types.is_timestamp(kind):
        array = array.cast(pa.int64())
    elif pa.types.is_decimal(kind):  # by its text: Arrow's decimal to double is not correctly rounded
        array = array.cast(pa.string()).cast(pa.float64())
    # Unsafe: integers beyond 2^53 (timestamps after 2255 in microseconds) round to the nearest
    # float64, which keeps their order (not strictly: neighbours may meet), all a position needs.
    found = array.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False).astype(np.float64, copy=True)
    nulls = np.asarray(array.is_null(), dtype=bool) if array.null_count else None
    found[np.isnan(found)] = np.inf  # NaN rows (the NULLs are set back below)
    if nulls is not None:
        found[nulls] = np.nan
    return found


@dataclass(frozen=True)
class Transformation:
    """One column's transformation in one revision."""

    column: str
    kind: str
    low: float | None = None  # linear: the range mapped to [0, 1]
    high: float | None = None
    boundaries: tuple = ()  # quantiles: sorted distinct values (floats, or text)

    def positions(self, array: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Each value's coordinate in [0, 1] (NULL: 0)."""
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if pa.types.is_dictionary(array.type):
            array = array.cast(array.type.value_type)
        if self.kind == HASH:
            key_type = keys.key_type_for(array.type, self.column)
            hashed = hash64(array if array.type.equals(key_type) else array.cast(key_type, safe=False))
            found = (hashed >> np.uint64(11)).astype(np.float64) * 2.0**-53
        elif self.kind == LINEAR:
            found = self._linear(numbers(array))
        elif is_text(array.type):
            text = np.asarray(array.fill_null("").to_numpy(zero_copy_only=False), dtype=object)
            bounds = np.asarray(self.boundaries, dtype=object)
            found = np.searchsorted(bounds, text, side="right") / max(len(bounds), 1)
        else:
            values = numbers(array)
            found = np.searchsorted(np.asarray(self.boundaries, np.float64), np.nan_to_num(values, nan=0.0), "right")
            found = found / max(len(self.boundaries), 1)
        found = np.asarray(found, dtype=np.float64)
        if array.null_count:
            found[np.asarray(array.is_null(), dtype=bool)] = 0.0
        return found

    def _linear(self, values: np.ndarray) -> np.ndarray:
        low, high = float(self.low), float(self.high)
        if high > low:
            with np.errstate(invalid="ignore", over="ignore"):
                found = np.clip((values - low) / (high - low), 0.0, 1.0)
        else:
            found = np.where(values > high, 1.0, 0.0)
        return np.nan_to_num(found, nan=0.0)

    @property
    def orders(self) -> bool:
        """Whether ranges prune on this column (not on hashes)."""
        return self.kind != HASH

    def covers(self, low: float | None, high: float | None) -> bool:
        """Whether values in ``[low, high]`` fit this linear range without clamping."""
        if self.kind != LINEAR or low is None or high is None:
            return True
        return self.low <= low and high <= self.high

    def to_json(self) -> dict:
        found: dict = {"column": self.column, "kind": self.kind}
        if self.kind == LINEAR:
            found.update(low=self.low, high=self.high)
        if self.kind == QUANTILES:
            found["boundaries"] = list(self.boundaries)
        return found

    @classmethod
    def from_json(cls, data: dict) -> Transformation:
        return cls(data["column"], data["kind"], data.get("low"), data.get("high"), tuple(data.get("boundaries", ())))


def linear(column: str, low: float, high: float) -> Transformation:
    return Transformation(column, LINEAR, float(low), float(high))


def quantiles(column: str, sample: pa.Array | pa.ChunkedArray, count: int = QUANTILE_COUNT) -> Transformation:
    """Quantile boundaries of a column computed from a uniform ``sample`` of its values."""
    sample = sample.drop_null()
    if isinstance(sample, pa.ChunkedArray):
        sample = sample.combine_chunks()
    if is_text(sample.type):
        ordered = pc.unique(sample).sort().to_pylist()
        picked = _picked(ordered, count)
        return Transformation(column, QUANTILES, boundaries=tuple(picked))
    values = np.unique(numbers(sample))
    values = values[np.isfinite(values)]
    picked = _picked(values.tolist(), count)
    return Transformation(column, QUANTILES, boundaries=tuple(float(v) for v in picked))


def _picked(ordered: Sequence, count: int) -> list:
    if len(ordered) <= count:
        return list(ordered)
    positions = np.linspace(0, len(ordered) - 1, count).round().astype(np.int64)
    return [ordered[i] for i in np.unique(positions)]
