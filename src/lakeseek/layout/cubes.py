"""Cubes of the OTree (seed 002): the recursive 2^d-ary partition of the unit space of a
layout's d normalized columns, with cube ids in qbeast's own string form so that a reader can
compare them with qbeast-spark's.

A cube at depth L is the box reached by L halvings of every dimension: at each level, a
dimension takes the lower or the upper half, one bit per dimension. The string form spends
``ceil(d / 6)`` characters of the alphabet ``A-Z a-z 0-9 + /`` per level; dimension ``i`` is
bit ``1 << (5 - i % 6)`` of the level's character ``i // 6``. The root is ``""``; a child's
string starts with its parent's. A value of 1.0 falls in the upper half at every level, so
the closed unit space is covered.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_VALUE = {character: value for value, character in enumerate(ALPHABET)}
BITS_PER_CHARACTER = 6


def characters_per_level(dimensions: int) -> int:
    return math.ceil(dimensions / BITS_PER_CHARACTER)


@dataclass(frozen=True, order=False)
class Cube:
    """A cube: its dimension count and, per level from the root, the halves it takes as a
    tuple of bitmasks (bit ``dimensions - 1 - i`` of a level is dimension ``i``'s upper half,
    so a level's mask is also the index of the child it descends to)."""

    dimensions: int
    levels: tuple[int, ...] = ()

    @classmethod
    def root(cls, dimensions: int) -> Cube:
        if dimensions < 1:
            raise ValueError(f"a layout has at least one dimension, not {dimensions}")
        return cls(dimensions)

    @property
    def depth(self) -> int:
        return len(self.levels)

    @property
    def parent(self) -> Cube | None:
        return Cube(self.dimensions, self.levels[:-1]) if self.levels else None

    def child(self, index: int) -> Cube:
        """Child ``index`` in ``[0, 2^dimensions)``: dimension ``i`` takes the upper half when
        bit ``dimensions - 1 - i`` of ``index`` is set (dimension 0 most significant)."""
        if not 0 <= index < 1 << self.dimensions:
            raise ValueError(f"a cube of {self.dimensions} dimensions has no child {index}")
        return Cube(self.dimensions, (*self.levels, index))

    def children(self) -> list[Cube]:
        return [self.child(index) for index in range(1 << self.dimensions)]

    def is_ancestor_of(self, other: Cube) -> bool:
        """Whether ``other`` is this cube or lies inside it."""
        return other.dimensions == self.dimensions and other.levels[: self.depth] == self.levels

    @property
    def sort_key(self) -> tuple[int, ...]:
        """Pre-order depth first: a cube sorts before its children, children in index order."""
        return self.levels

    # -- the box ------------------------------------------------------------------------------------
    @cached_property
    def low(self) -> np.ndarray:
        """The box's lower corner: ``sum over levels of upper(level, i) * 2^-(level + 1)``."""
        corner = np.zeros(self.dimensions)
        for level, mask in enumerate(self.levels):
            corner += _upper_halves(mask, self.dimensions) * 2.0 ** -(level + 1)
        return corner

    @property
    def high(self) -> np.ndarray:
        return self.low + 2.0**-self.depth

    def contains(self, points: np.ndarray) -> np.ndarray:
        """Which of ``points`` (n x dimensions, in [0, 1]) lie in the box: ``low <= p < high``
        in every dimension, or ``p == high == 1.0``."""
        points = np.atleast_2d(points)
        high = self.high
        inside = (points >= self.low) & ((points < high) | ((points == 1.0) & (high == 1.0)))
        return np.all(inside, axis=1)

    def intersects(self, low: np.ndarray, high: np.ndarray) -> bool:
        """Whether the box meets the closed query box ``[low, high]`` (normalized)."""
        own_low, own_high = self.low, self.high
        top = own_high >= 1.0  # the closed upper face of the unit space belongs to the top cubes
        return bool(np.all((low < own_high) | (top & (low <= own_high))) and np.all(high >= own_low))

    # -- qbeast's string form ----------------------------------------------------------------------
    def to_string(self) -> str:
        width = characters_per_level(self.dimensions)
        characters = []
        for mask in self.levels:
            values = [0] * width
            for dimension in range(self.dimensions):
                if mask >> (self.dimensions - 1 - dimension) & 1:
                    values[dimension // BITS_PER_CHARACTER] |= 1 << (5 - dimension % BITS_PER_CHARACTER)
            characters.extend(ALPHABET[value] for value in values)
        return "".join(characters)

    @classmethod
    def from_string(cls, dimensions: int, text: str) -> Cube:
        """The cube qbeast names ``text``; ValueError when it names none of ``dimensions``."""
        width = characters_per_level(dimensions)
        if len(text) % width or any(character not in _VALUE for character in text):
            raise ValueError(f"{text!r} is no cube id of {dimensions} dimensions")
        levels = []
        for start in range(0, len(text), width):
            chunk = text[start : start + width]
            mask = 0
            for dimension in range(dimensions):
                value = _VALUE[chunk[dimension // BITS_PER_CHARACTER]]
                mask |= (value >> (5 - dimension % BITS_PER_CHARACTER) & 1) << (dimensions - 1 - dimension)
            if Cube(dimensions, (mask,)).to_string() != chunk:  # a bit past the last dimension
                raise ValueError(f"{text!r} is no cube id of {dimensions} dimensions")
            levels.append(mask)
        return cls(dimensions, tuple(levels))

    def __repr__(self) -> str:
        return f"Cube({self.dimensions}, {self.to_string()!r})"


_CODES = np.full(256, -1, dtype=np.int64)
_CODES[np.frombuffer(ALPHABET.encode(), np.uint8)] = np.arange(len(ALPHABET))


def boxes(dimensions: int, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The boxes (low and high corners, n x dimensions) of cubes named in qbeast's form, read
    for all names of one length at once (a layout's log names thousands); ValueError when a
    name is no cube id of ``dimensions`` dimensions."""
    width = characters_per_level(dimensions)
    low = np.zeros((len(names), dimensions))
    depths = np.zeros(len(names), dtype=np.int64)
    lengths = np.array([len(name) for name in names], dtype=np.int64)
    dimension = np.arange(dimensions)
    # The bits of a level's last character past the last dimension are 0 in a cube id.
    unused = (1 << (BITS_PER_CHARACTER * width - dimensions)) - 1
    for length in np.unique(lengths).tolist():
        members = np.flatnonzero(lengths == length)
        if length % width:
            raise ValueError(f"{names[members[0]]!r} is no cube id of {dimensions} dimensions")
        levels = length // width
        depths[members] = levels
        if not levels:
            continue
        text = "".join(names[i] for i in members).encode("utf-8")
        if len(text) != length * len(members):
            raise ValueError(f"a cube id of {dimensions} dimensions is ASCII, not {names[members[0]]!r}")
        codes = _CODES[np.frombuffer(text, np.uint8)].reshape(len(members), levels, width)
        if (codes < 0).any() or (codes[:, :, -1] & unused).any():
            raise ValueError(f"a name among {names[members[0]]!r}, ... is no cube id of {dimensions} dimensions")
        bits = (codes[:, :, dimension // BITS_PER_CHARACTER] >> (5 - dimension % BITS_PER_CHARACTER)) & 1
        low[members] = (bits * (2.0 ** -np.arange(1, levels + 1))[None, :, None]).sum(axis=1)
    return low, low + (2.0**-depths)[:, None]


def _upper_halves(mask: int, dimensions: int) -> np.ndarray:
    return np.array([mask >> (dimensions - 1 - i) & 1 for i in range(dimensions)], dtype=np.float64)


def descend(points: np.ndarray) -> Iterator[np.ndarray]:
    """For ``points`` (n x d, each coordinate in [0, 1]), the child index each takes at level
    0, 1, 2, ... (int64 arrays of n), endlessly: qbeast's descent of one point (double the
    coordinate; at 1 or more, take the upper half and subtract 1), for all points at once."""
    current = np.array(points, dtype=np.float64, ndmin=2)
    if current.size and (np.isnan(current).any() or current.min() < 0.0 or current.max() > 1.0):
        raise ValueError("normalized coordinates must lie in [0, 1]")
    dimensions = current.shape[1]
    weights = 1 << np.arange(dimensions - 1, -1, -1, dtype=np.int64)  # dimension 0 most significant
    while True:
        current *= 2.0
        upper = current >= 1.0
        current -= upper
        yield upper.astype(np.int64) @ weights


def level_masks(points: np.ndarray, depth: int) -> np.ndarray:
    """The child index each point takes at each of the first ``depth`` levels (n x depth):
    the path from the root to the depth-``depth`` cube holding it."""
    points = np.array(points, dtype=np.float64, ndmin=2)
    masks = np.zeros((points.shape[0], depth), dtype=np.int64)
    levels = descend(points)
    for level in range(depth):
        masks[:, level] = next(levels)
    return masks


def cubes_of(points: np.ndarray, depth: int) -> list[Cube]:
    """The depth-``depth`` cube holding each point."""
    dimensions = np.atleast_2d(points).shape[1]
    return [Cube(dimensions, tuple(row)) for row in level_masks(points, depth).tolist()]
