"""The OTree of one write: each cube's maximum weight, estimated from a sample; the cube and
file of every row (assignment and roll-up).

Weights are the stored column ``_lakeseek_weight`` (int32, qbeast's domain); here they are
taken unsigned, ``u = w + 2^31`` in ``[0, 2^32)``, and a row of weight ``u`` belongs to the
first cube from the root whose maximum weight ``W`` has ``u <= W`` (a leaf's is ``2^32 - 1``).

The sample is the rows of weight below a threshold ``U``: weights are uniform and
independent of the values, so it is a uniform sample, and it holds *every* row of weight
below ``U``. So where a cube's maximum weight lies below ``U`` it is computed exactly (the
``cube_size``-th smallest weight among the rows that reach the cube, qbeast's intent), and
only below that, where the sample runs out, is it estimated as qbeast estimates it
(``W = W(parent) + cube_size * (1 - W(parent)) / domain``, the domain apportioned to children
by the sample's points). The estimate decides only how full cubes are, never which rows a
query reads: the blocks record what was written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lakeseek.layout.cubes import Cube, descend

WEIGHT = "_lakeseek_weight"
SPAN = 1 << 32
OFFSET = 1 << 31
MAX_WEIGHT = SPAN - 1  # a leaf's: every weight
MAX_DEPTH = 24  # points that agree to 24 levels share a leaf (duplicates, or a degenerate column)


def unsigned(weights: np.ndarray) -> np.ndarray:
    """Stored (int32) weights as ``u`` in ``[0, 2^32)``."""
    return np.asarray(weights, dtype=np.int64) + OFFSET


def sample_threshold(fraction: float) -> int:
    """The stored weight a sample of ``fraction`` keeps rows below: ``w < threshold``."""
    return math.ceil(fraction * SPAN) - OFFSET


@dataclass
class Level:
    """The cubes of one depth: ``keys`` (sorted; ``parent << d | child index``), their
    maximum weights (unsigned), parents (index at the depth above) and names."""

    keys: np.ndarray
    weights: np.ndarray
    parents: np.ndarray
    names: list[str]
    sizes: np.ndarray  # estimated rows each cube holds


@dataclass
class Tree:
    dimensions: int
    cube_size: int
    levels: list[Level]

    @property
    def cubes(self) -> int:
        return sum(len(level.keys) for level in self.levels)


def estimate(points: np.ndarray, weights: np.ndarray, rows: int, below: int, cube_size: int) -> Tree:
    """The tree of ``rows`` rows from a sample of them: ``points`` (k x d coordinates) and
    unsigned ``weights`` of every row of weight below ``below`` (``SPAN``: all rows)."""
    points = np.array(points, dtype=np.float64, ndmin=2)
    dimensions = points.shape[1]
    weights = np.asarray(weights, dtype=np.int64)
    exact = below >= SPAN
    group = np.zeros(len(weights), dtype=np.int64)
    # Per cube of the current level: rows reaching it (estimated), its parent's maximum weight.
    reaching = np.array([float(rows)])
    above = np.array([-1], dtype=np.int64)
    levels: list[Level] = []
    keys, parents, names = np.zeros(1, np.int64), np.zeros(1, np.int64), [""]
    masks = descend(points)
    for depth in range(MAX_DEPTH + 1):
        count = len(reaching)
        live = weights > above[group]
        order = np.argsort((group << 32) | weights)  # by group, then weight (one key: 10x lexsort's speed)
        sorted_weights, sorted_group = weights[order], group[order]
        starts = np.searchsorted(sorted_group, np.arange(count))
        dead = np.bincount(group[~live], minlength=count)
        alive = np.bincount(group[live], minlength=count)
        cut = np.full(count, MAX_WEIGHT, dtype=np.int64)
        full = alive >= cube_size
        cut[full] = sorted_weights[starts[full] + dead[full] + cube_size - 1]
        estimated = ~full & (reaching > cube_size) & (depth < MAX_DEPTH)
        guess = above + np.ceil(cube_size * (MAX_WEIGHT - above) / np.maximum(reaching, 1)).astype(np.int64)
        cut[estimated] = np.minimum(np.maximum(guess[estimated], below), MAX_WEIGHT)
        taken = live & (weights <= cut[group])
        held = np.bincount(group[taken], minlength=count).astype(np.float64)
        if not exact:
            held[estimated] = np.minimum(cube_size, reaching[estimated])
        held[cut == MAX_WEIGHT] = reaching[cut == MAX_WEIGHT]
        levels.append(Level(keys, cut, parents, names, held))
        inner = cut < MAX_WEIGHT
        mask = next(masks)
        moving = inner[group]
        if not moving.any():
            break
        child_keys = group[moving] * (1 << dimensions) + mask[moving]
        keys, inverse = np.unique(child_keys, return_inverse=True)
        parents = keys >> dimensions
        boxed = np.bincount(inverse, minlength=len(keys)).astype(np.float64)
        if exact:
            beyond = weights[moving] > cut[group[moving]]
            reaching = np.bincount(inverse[beyond], minlength=len(keys)).astype(np.float64)
        else:
            in_parent = np.bincount(parents, weights=boxed, minlength=count)
            reaching = (reaching - held)[parents] * boxed / in_parent[parents]
        above = cut[parents]
        names = [names[p] + _character(dimensions, k) for p, k in zip(parents.tolist(), keys.tolist(), strict=True)]
        group, weights, masks = inverse, weights[moving], _rest(masks, moving)
    return Tree(dimensions, cube_size, levels)


def _character(dimensions: int, key: int) -> str:
    """The characters a child adds to its parent's name (the key's low ``dimensions`` bits)."""
    return Cube(dimensions, (int(key) & ((1 << dimensions) - 1),)).to_string()


def _rest(masks, moving: np.ndarray):
    """The descent of the rows still moving down (their later levels' child indexes)."""
    for mask in masks:
        yield mask[moving]


@dataclass
class Rollup:
    """Which file of the write each cube's rows go to: cubes too small for a file of their own
    join their parent's, deepest first; a group larger than ``max_file_rows`` is spread over
    several files by weight."""

    group: list[np.ndarray]  # per level, per cube: its group
    first_file: np.ndarray  # per group: its first file
    spread: np.ndarray  # per group: how many files
    files: int


def roll_up(tree: Tree, max_file_rows: int) -> Rollup:
    sizes = [level.sizes.astype(np.float64).copy() for level in tree.levels]
    merged = [np.zeros(len(level.keys), dtype=bool) for level in tree.levels]
    for depth in range(len(tree.levels) - 1, 0, -1):
        small = sizes[depth] < tree.cube_size
        parents = tree.levels[depth].parents
        merged[depth] = small
        np.add.at(sizes[depth - 1], parents[small], sizes[depth][small])
    groups: list[np.ndarray] = []
    next_group = 0
    group_sizes: list[float] = []
    for depth, level in enumerate(tree.levels):
        found = np.empty(len(level.keys), dtype=np.int64)
        own = ~merged[depth]
        found[own] = np.arange(next_group, next_group + int(own.sum()))
        group_sizes.extend(sizes[depth][own].tolist())
        next_group += int(own.sum())
        if depth:
            found[~own] = groups[depth - 1][level.parents[~own]]
        groups.append(found)
    spread = np.maximum(1, np.ceil(np.array(group_sizes) / max(max_file_rows, 1))).astype(np.int64)
    first = np.concatenate([[0], np.cumsum(spread)[:-1]]).astype(np.int64)
    return Rollup(groups, first, spread, int(spread.sum()))


@dataclass
class Assignment:
    """Rows' cubes and files in the write: ``cube`` is a code :func:`cube_of` names (the same
    in every task of the write), ``file`` the file of the write."""

    cube: np.ndarray
    file: np.ndarray


def assign(tree: Tree, rollup: Rollup, points: np.ndarray, weights: np.ndarray) -> Assignment:
    """Each row to the first cube from the root whose maximum weight is at least its weight;
    past the tree, to a new leaf: the child of the last cube it passed (qbeast's rule)."""
    points = np.array(points, dtype=np.float64, ndmin=2)
    count = len(weights)
    d = tree.dimensions
    weights = np.asarray(weights, dtype=np.int64)
    depth_of = np.full(count, -1, dtype=np.int64)
    node_of = np.zeros(count, dtype=np.int64)
    new_leaf = np.full(count, -1, dtype=np.int64)  # the child index of a cube the tree lacks
    rows = np.arange(count)
    node = np.zeros(count, dtype=np.int64)
    masks = descend(points) if count else iter(())
    for depth, level in enumerate(tree.levels):
        done = weights[rows] <= level.weights[node]
        depth_of[rows[done]] = depth
        node_of[rows[done]] = node[done]
        rows, node = rows[~done], node[~done]
        if not len(rows):
            break
        mask = next(masks)[rows]
        key = node * (1 << d) + mask
        below = tree.levels[depth + 1].keys if depth + 1 < len(tree.levels) else np.empty(0, np.int64)
        at = np.minimum(np.searchsorted(below, key), max(len(below) - 1, 0))
        found = (below[at] == key) if len(below) else np.zeros(len(key), dtype=bool)
        lost = rows[~found]
        depth_of[lost], node_of[lost], new_leaf[lost] = depth, node[~found], mask[~found]
        rows, node = rows[found], at[found]
    return _assigned(tree, rollup, depth_of, node_of, new_leaf, weights)


def _assigned(tree: Tree, rollup: Rollup, depth_of, node_of, new_leaf, weights) -> Assignment:
    offsets = _offsets(tree)
    node_ids = offsets[depth_of] + node_of
    codes = np.where(new_leaf < 0, node_ids, offsets[-1] + node_ids * (1 << tree.dimensions) + new_leaf)
    groups = np.concatenate(rollup.group) if rollup.group else np.zeros(1, np.int64)
    group = groups[node_ids]
    spread = rollup.spread[group]
    return Assignment(codes, rollup.first_file[group] + weights % spread)


def _offsets(tree: Tree) -> np.ndarray:
    return np.cumsum([0] + [len(level.keys) for level in tree.levels])


def cube_of(tree: Tree, code: int) -> tuple[str, int]:
    """The name and maximum weight (unsigned) of the cube of an assignment's ``code``: a cube
    of the tree, or a new leaf below one (codes past the tree's cubes)."""
    offsets = _offsets(tree)
    if code < offsets[-1]:
        depth = int(np.searchsorted(offsets, code, side="right") - 1)
        return tree.levels[depth].names[code - offsets[depth]], int(tree.levels[depth].weights[code - offsets[depth]])
    parent, child = divmod(code - int(offsets[-1]), 1 << tree.dimensions)
    depth = int(np.searchsorted(offsets, parent, side="right") - 1)
    return tree.levels[depth].names[parent - offsets[depth]] + _character(tree.dimensions, child), MAX_WEIGHT
