"""A plan: the files (and row groups) one query reads, and why."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from lakeseek.cost import Cost


class Fallback(enum.Enum):
    """Why a plan reads every file instead of using the index."""

    NOT_SERVED = "not served"  # no part of the predicate is one the index narrows
    TOO_COSTLY = "too costly"  # reading the index would cost more than the files it saves
    DELETED = "deleted"  # the index is soft-deleted
    DAMAGED = "damaged"  # a file of the index is damaged: a full refresh repairs it
    VACUUMED = "vacuumed"  # the handle's version was vacuumed: opening the index again cures it
    PLANNING_FAILED = "planning failed"  # a front end could not plan with the index

    @property
    def is_about_the_index(self) -> bool:
        """Whether the index itself is the cause (its state, not the query): worth telling people."""
        return self in (Fallback.DELETED, Fallback.DAMAGED, Fallback.VACUUMED)


@dataclass(frozen=True)
class PlanCost:
    """The cost model's view of a plan (see :mod:`lakeseek.cost`)."""

    index: Cost  # estimated index read
    candidates: float  # estimated indexed files left
    with_index: Cost  # index read + candidate files + files the index does not cover
    scan: Cost  # every file


@dataclass(frozen=True)
class Plan:
    """The files to read for one predicate, and why."""

    files: list[str]  # paths in the lake source, sorted
    total_files: int
    index_used: bool  # False: the index could not narrow the predicate, every file is read
    indexed_columns_used: tuple[str, ...]
    unindexed_files: int  # new or changed since indexing: always read
    removed_files: int  # indexed files no longer in the lake: skipped
    reason: str | None = None  # why the index was not used, when it was not
    # Row-group precision: the row groups of a candidate file that may match (files absent
    # from the mapping are read whole).
    row_groups: dict[str, tuple[int, ...]] = field(default_factory=dict)
    cost: PlanCost | None = None
    notes: tuple[str, ...] = ()  # why parts of the predicate were not served by the index
    fallback: Fallback | None = None  # the kind of ``reason``
    index: str | None = None  # which of the lake's indexes planned it, when several were weighed
    # Rows of the indexed files came from the index itself (a covering kind): ``files`` are
    # only those it does not cover, the data files the read opened.
    from_index: bool = False

    @property
    def is_stale(self) -> bool:
        """Whether the index missed files the plan reads (new, changed) or skips (removed)."""
        return bool(self.unindexed_files or self.removed_files)


@dataclass(frozen=True)
class Prepared:
    """A plan estimated and not yet run: what the cost model expects of it, whether it reads
    through the index, and the run (the index lookups, then the plan)."""

    cost: PlanCost | None  # None: a plan that cannot use its index at all
    uses_index: bool
    run: Callable[[], Plan]

    @property
    def expected(self) -> float:
        """The estimated cost of the plan, in the cost model's units (see :mod:`lakeseek.cost`)."""
        if self.cost is None:
            return float("inf")
        return (self.cost.with_index if self.uses_index else self.cost.scan).total

    @staticmethod
    def of(plan: Plan) -> Prepared:
        """A plan already made (reading every file)."""
        return Prepared(plan.cost, False, lambda: plan)


def full_scan(files: dict | list, reason: str, fallback: Fallback) -> Plan:
    """A plan that reads every file, because the index cannot be used at all."""
    return Plan(sorted(files), len(files), False, (), len(files), 0, reason, fallback=fallback)
