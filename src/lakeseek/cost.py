"""What a query costs, through an index or by reading every file: the planner's common units.

The paper's model (section 4) compares ``C_R * (|F(Q)| + 3)`` with ``C_R * |F|``: reads
through the index against reads of every file. lakeseek adds bytes, because a range can
make an index read large: a cost is ``reads * READ_COST_BYTES + bytes``. Each kind of index
estimates its own lookups in these units (from its part of the root alone, without a read);
the planner weighs them against reading the files.
"""

from __future__ import annotations

from dataclasses import dataclass

READ_COST_BYTES = 1 << 20  # one storage request costs about as much as reading 1 MiB
DATA_READS_PER_FILE = 2  # a Parquet file costs its footer and its column chunks


@dataclass(frozen=True, order=True)
class Cost:
    reads: float = 0.0
    bytes: float = 0.0

    @property
    def total(self) -> float:
        return self.reads * READ_COST_BYTES + self.bytes

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.reads + other.reads, self.bytes + other.bytes)


@dataclass(frozen=True)
class LakeSize:
    """What a scan of some data files costs: their number and bytes."""

    files: int
    bytes: int

    def read_cost(self, files: float) -> Cost:
        """Reading ``files`` of these (average) files."""
        average = self.bytes / self.files if self.files else 0
        return Cost(files * DATA_READS_PER_FILE, files * average)


@dataclass(frozen=True, order=True)
class Estimate:
    """Reading the index for one condition, and the indexed data files it should leave."""

    candidates: float
    index: Cost


def human_size(nbytes: float) -> str:
    """``nbytes`` for people: 1,234 B, 12.1 KiB, 3.4 MiB..."""
    unit = "B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if nbytes < 1024 or unit == "GiB":
            break
        nbytes /= 1024
    return f"{nbytes:,.0f} {unit}" if unit == "B" else f"{nbytes:,.1f} {unit}"
