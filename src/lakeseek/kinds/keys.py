"""Index keys for lookups, shared by the kinds: a bound literal as a key, a key range, and a
key as a number for interpolating shares of a range."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.expressions.types import arrow_scalar
from lakeseek.format.values import KeyValue, key_of, sort_key


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
        return self.overlaps_mask(keys, keys)

    def overlaps_mask(self, lows: pa.ChunkedArray | pa.Array, highs: pa.ChunkedArray | pa.Array) -> pa.Array:
        """Which spans ``[lows[i], highs[i]]`` of keys overlap the range (a NULL low: no key)."""
        inside = pc.is_valid(lows)
        if self.low is not None:
            low = pa.scalar(self.low, highs.type)
            above = pc.greater_equal(highs, low) if self.low_inclusive else pc.greater(highs, low)
            inside = pc.and_(inside, pc.fill_null(above, False))
        if self.high is not None:
            high = pa.scalar(self.high, lows.type)
            below = pc.less_equal(lows, high) if self.high_inclusive else pc.less(lows, high)
            inside = pc.and_(inside, pc.fill_null(below, False))
        return inside


def bound_key(value: object, column_type: pa.DataType, key_type: pa.DataType) -> KeyValue:
    """A bound literal as an index key, through the column's type first: the scan's filter
    makes the same conversion (a millisecond column drops a literal's extra digits)."""
    return key_of(arrow_scalar(value, column_type), key_type)


def is_nanoseconds(column_type: pa.DataType) -> bool:
    return pa.types.is_timestamp(column_type) and column_type.unit == "ns"


def key_number(value: KeyValue) -> float | None:
    """A key as a number preserving order (strings and bytes by their first 8 bytes)."""
    if value is None:
        return None
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, Decimal):
        return float(value)
    raw = value.encode() if isinstance(value, str) else bytes(value)
    return float(int.from_bytes(raw[:8].ljust(8, b"\0"), "big"))
