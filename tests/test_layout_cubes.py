"""OTree cube ids: qbeast's string form (its own test vector), the boxes of a cube and its
children, and the vectorized descent of points, checked against one another on random points."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeseek.layout.cubes import Cube, cubes_of, level_masks


def test_qbeasts_test_vector_and_child_names():
    path = cubes_of(np.array([[0.66, 0.83]]), 3)[0]
    assert [Cube(2, path.levels[:depth]).to_string() for depth in range(4)] == ["", "w", "wQ", "wQg"]
    assert [child.to_string() for child in Cube.root(2).children()] == ["A", "Q", "g", "w"]
    assert Cube.from_string(2, "wQg") == path and path.parent.to_string() == "wQ"


def test_more_than_six_dimensions_take_two_characters_a_level():
    cube = Cube.root(7).child(0b1000001)  # dimensions 0 and 6 upper
    assert cube.to_string() == "gg"  # bit 1 << 5 of the first character, and of the second
    assert Cube.from_string(7, "gg") == cube
    for bad in ("g", "gh", "g!"):  # half a level, a bit past dimension 6, not in the alphabet
        with pytest.raises(ValueError, match="no cube id"):
            Cube.from_string(7, bad)


def test_children_split_their_parent_and_sort_after_it():
    parent = Cube.from_string(3, "gQ")
    children = parent.children()
    assert sorted([*reversed(children), parent], key=lambda c: c.sort_key) == [parent, *children]
    volume = sum(np.prod(child.high - child.low) for child in children)
    assert volume == pytest.approx(np.prod(parent.high - parent.low))
    for child in children:
        assert parent.is_ancestor_of(child) and not child.is_ancestor_of(parent)
        assert np.all(child.low >= parent.low) and np.all(child.high <= parent.high)


@given(
    st.integers(1, 8).flatmap(
        lambda d: st.lists(
            st.lists(st.sampled_from([0.0, 1.0, 0.5, 0.25]) | st.floats(0, 1), min_size=d, max_size=d),
            min_size=1,
            max_size=20,
        )
    ),
    st.integers(0, 12),
)
def test_every_point_lies_in_exactly_its_cube_at_every_depth(points, depth):
    points = np.array(points)
    for point, cube in zip(points, cubes_of(points, depth), strict=True):
        assert cube.contains(point)[0]
        assert Cube.from_string(cube.dimensions, cube.to_string()) == cube
        siblings = cube.parent.children() if cube.parent else []
        assert sum(bool(s.contains(point)[0]) for s in siblings) == (1 if siblings else 0)
        assert cube.intersects(point, point)


def test_coordinates_outside_the_unit_space_are_refused():
    for bad in ([[1.5]], [[-0.1]], [[float("nan")]]):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            level_masks(np.array(bad), 2)
