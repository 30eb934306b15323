"""Layouts: how lakeseek lays a lake's rows out in files. The OTree of seed 002 (Qbeast) puts
each row, by its layout columns' coordinates, in a cube of a recursive space partition
(:mod:`.cubes`) at a depth its weight chooses (:mod:`.tree`), so that inner cubes hold a
uniform sample of their subspace. :func:`write` lays data out, :func:`optimize` compacts
appends, :func:`read` and :func:`sample` read through the blocks; the lake is also a lake
source (``otree``), so indexes and ``Index.read`` work on it and prune by its blocks.
"""

from lakeseek.layout.read import files, read, sample, sample_sql, with_sample
from lakeseek.layout.source import NAME, LayoutSource, is_layout
from lakeseek.layout.table import LayoutLog, LayoutState
from lakeseek.layout.tree import WEIGHT
from lakeseek.layout.write import convert, describe, optimize, write
from lakeseek.sources import register_source

register_source(NAME, is_layout, LayoutSource)

__all__ = [
    "WEIGHT",
    "LayoutLog",
    "LayoutSource",
    "LayoutState",
    "convert",
    "describe",
    "files",
    "optimize",
    "read",
    "sample",
    "sample_sql",
    "with_sample",
    "write",
]
