"""What a query does through the index, and why (Hyperspace's explain and whyNot)."""

from __future__ import annotations

from dataclasses import dataclass

from lakeseek.cost import DATA_READS_PER_FILE, Cost, human_size
from lakeseek.planning.plan import Plan


@dataclass(frozen=True)
class Alternative:
    """One of a lake's indexes weighed for a query: its estimate, and what its plan did."""

    index: str
    kind: str
    version: int
    chosen: bool
    estimated: float  # the cost model's estimate of its plan (inf: it cannot use its index)
    estimated_files: float | None  # indexed candidate files it expected to leave
    candidate_files: int
    index_reads: int  # measured while its lookups ran
    index_bytes: int
    false_positives: int | None = None  # with analyze: its candidate files that hold no matching row
    why_not: str | None = None  # why it would read every file

    def line(self) -> str:
        mark = "*" if self.chosen else "-"
        estimated = (
            "cannot use its index" if self.estimated == float("inf") else f"estimated {human_size(self.estimated)}"
        )
        if self.estimated_files is not None and self.why_not is None:
            estimated += f" (~{self.estimated_files:,.0f} files)"
        line = (
            f"{mark} {self.index} ({self.kind}, version {self.version}): {estimated}; "
            f"actual {self.index_reads:,} index reads ({human_size(self.index_bytes)}), {self.candidate_files:,} files"
        )
        if self.false_positives is not None:
            line += f", {self.false_positives:,} without a match"
        return line + (f"; why not: {self.why_not}" if self.why_not else "")


@dataclass(frozen=True)
class Explanation:
    """One query's plan: what the index was asked, what it answered, what it cost."""

    where: str
    index: str
    version: int
    index_used: bool
    columns_used: tuple[str, ...]
    why_not: str | None  # why the index was not used, when it was not
    notes: tuple[str, ...]  # parts of the predicate the index did not serve, and why
    candidate_files: int
    total_files: int
    candidate_row_groups: int | None  # with row-group precision
    unindexed_files: int
    removed_files: int
    index_reads: int  # measured while planning
    index_bytes: int
    data_bytes: int  # the candidate files' sizes
    estimated: Cost | None  # the cost model's estimate of the chosen plan
    actual: Cost  # index reads measured, plus the candidate files
    scan: Cost | None  # the cost model's estimate of reading every file
    rows: int | None = None  # with analyze: rows returned
    seconds: float | None = None  # with analyze: planning plus reading
    # With several indexes on the lake: each one weighed, the chosen one first marked "*".
    alternatives: tuple[Alternative, ...] = ()
    # With what_if: how the query would run with each hypothetical index (planning.what_if.WhatIf).
    what_if: tuple = ()

    def lines(self) -> list[str]:
        used = ", ".join(self.columns_used) or "none"
        lines = [
            f"index: {self.index} (version {self.version}), {'used' if self.index_used else 'not used'}",
            f"columns used: {used}",
            f"files: {self.candidate_files:,} of {self.total_files:,} "
            f"({self.unindexed_files:,} not covered by the index, {self.removed_files:,} removed since indexing)",
        ]
        if self.candidate_row_groups is not None:
            lines.append(f"row groups: {self.candidate_row_groups:,} in the indexed candidate files")
        lines.append(
            f"index reads: {self.index_reads:,} ({human_size(self.index_bytes)}); data: {human_size(self.data_bytes)}"
        )
        if self.estimated is not None and self.scan is not None:
            lines.append(
                f"cost (1 read = 1 MiB): estimated {human_size(self.estimated.total)}, "
                f"actual {human_size(self.actual.total)}, full scan {human_size(self.scan.total)}"
            )
        if self.why_not:
            lines.append(f"why not: {self.why_not}")
        lines.extend(f"note: {note}" for note in self.notes)
        if self.alternatives:
            lines.append(f"indexes weighed ({len(self.alternatives)}, the cheapest estimate is chosen):")
            lines.extend(f"  {alternative.line()}" for alternative in self.alternatives)
        if self.what_if:
            lines.extend(what_if_lines(self.what_if))
        if self.rows is not None:
            lines.append(f"analyze: {self.rows:,} rows in {self.seconds:.3f} s")
        return lines


def what_if_lines(results) -> list[str]:
    """The lines of hypothetical indexes' plans ("+": its plan would read through it)."""
    return [
        "what if (estimated from the data files' own statistics; nothing is built):",
        *(f"  {result.line()}" for result in results),
    ]


def explanation(
    where: str,
    index: str,
    version: int,
    plan: Plan,
    file_sizes: dict[str, int],
    index_reads: int,
    index_bytes: int,
) -> Explanation:
    data_bytes = sum(file_sizes.get(path, 0) for path in plan.files)
    actual = Cost(index_reads + DATA_READS_PER_FILE * len(plan.files), index_bytes + data_bytes)
    return Explanation(
        where=where,
        index=index,
        version=version,
        index_used=plan.index_used,
        columns_used=plan.indexed_columns_used,
        why_not=plan.reason,
        notes=plan.notes,
        candidate_files=len(plan.files),
        total_files=plan.total_files,
        candidate_row_groups=sum(len(g) for g in plan.row_groups.values()) if plan.row_groups else None,
        unindexed_files=plan.unindexed_files,
        removed_files=plan.removed_files,
        index_reads=index_reads,
        index_bytes=index_bytes,
        data_bytes=data_bytes,
        estimated=plan.cost.with_index if plan.cost and plan.index_used else plan.cost.scan if plan.cost else None,
        actual=actual,
        scan=plan.cost.scan if plan.cost else None,
    )
