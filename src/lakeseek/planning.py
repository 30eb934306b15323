"""Which files a predicate must read, from the index and the lake's current state."""

from __future__ import annotations

from dataclasses import dataclass, field

from lakeseek.expressions import And, Comparison, Constant, In, IsNull, Or, Predicate
from lakeseek.lake import LakeState
from lakeseek.lookup import IndexReader


@dataclass(frozen=True)
class Plan:
    """The files to read for one predicate, and why."""

    files: list[str]  # relative paths, sorted
    total_files: int
    index_used: bool  # False: the index could not narrow the predicate, every file is read
    indexed_columns_used: tuple[str, ...]
    unindexed_files: int  # new or changed since indexing: always read
    removed_files: int  # indexed files no longer in the lake: skipped
    reason: str | None = None  # why the index was not used, when it was not
    # Row-group precision: the row groups of a candidate file that may match (files absent
    # from the mapping are read whole).
    row_groups: dict[str, tuple[int, ...]] = field(default_factory=dict)


def full_scan(files: dict, reason: str) -> Plan:
    """A plan that reads every file, because the index cannot be used at all."""
    return Plan(sorted(files), len(files), False, (), len(files), 0, reason)


def plan(predicate: Predicate, reader: IndexReader, state: LakeState) -> Plan:
    used: list[str] = []
    ids = _candidate_ids(predicate, reader, used)
    if ids is None:
        files = sorted(state.files)
    else:
        narrowed = {state.indexed[i] for i in ids if i in state.indexed}
        files = sorted(narrowed.union(state.unindexed))
    return Plan(
        files=files,
        total_files=len(state.files),
        index_used=ids is not None,
        indexed_columns_used=tuple(dict.fromkeys(used)),
        unindexed_files=len(state.unindexed),
        removed_files=len(state.removed),
        reason=None if ids is not None else "no indexed column narrows the predicate",
    )


def _candidate_ids(predicate: Predicate, reader: IndexReader, used: list[str]) -> set[int] | None:
    """File ids that may hold matching rows; None when every file may."""
    if isinstance(predicate, Constant):
        return None if predicate.value is True else set()
    if isinstance(predicate, And):
        left = _candidate_ids(predicate.left, reader, used)
        if left is not None and not left:
            return left
        right = _candidate_ids(predicate.right, reader, used)
        if left is None or right is None:
            return right if left is None else left
        return left & right
    if isinstance(predicate, Or):
        left = _candidate_ids(predicate.left, reader, used)
        if left is None:
            return None
        right = _candidate_ids(predicate.right, reader, used)
        return None if right is None else left | right
    column = getattr(predicate, "column", None)
    if column not in reader.root.columns:
        return None
    if isinstance(predicate, Comparison) and predicate.op == "=":
        values = [predicate.literal.value]
    elif isinstance(predicate, In):
        values = [literal.value for literal in predicate.literals]
    elif isinstance(predicate, IsNull):
        values = [None]
    else:
        return None
    used.append(column)
    return reader.lookup(column, values)
