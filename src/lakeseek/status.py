"""What ``lakeseek status`` and :meth:`lakeseek.Index.status` report: an index compared
with the lake now."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakeseek.commits.checks import problems
from lakeseek.commits.leases import Leases
from lakeseek.exceptions import IndexCorruptError
from lakeseek.format.root import ColumnStatus

if TYPE_CHECKING:
    from lakeseek.index import Index


@dataclass(frozen=True)
class IndexStatus:
    source: str
    index: str
    name: str
    kind: str
    state: str
    version: int
    last_operation: str
    updated_ms: int
    columns: list[ColumnStatus]
    indexed_files: int
    lake_files: int
    new_files: list[str]
    changed_files: list[str]
    removed_files: list[str]
    recorded_files: list[str]  # recorded by a quick refresh: scanned, not indexed
    tombstoned_files: int  # removed or rewritten files whose entries lookups ignore until an optimize
    index_bytes: int
    running_operations: list[str]
    problems: list[str]  # damaged or foreign files of the index, each with its repair

    @property
    def is_fresh(self) -> bool:
        return not (self.new_files or self.changed_files or self.removed_files or self.recorded_files)

    @property
    def segments(self) -> int:
        return max((c.segments for c in self.columns), default=0)


def index_status(index: Index, verify: bool = False) -> IndexStatus:
    state = index.lake_state()
    leases = Leases(index.storage, index.index_dir).all()
    try:
        indexed_files = len(index.lineage())
    except IndexCorruptError:
        indexed_files = 0  # the problems name the damage

    return IndexStatus(
        source=index.source,
        index=index.storage.shown(index.index_dir),
        name=index.name,
        kind=index.root.kind,
        state=index.root.state,
        version=index.version,
        last_operation=index.root.operation,
        updated_ms=index.root.timestamp_ms,
        columns=index.root.content.column_statuses(),
        indexed_files=indexed_files,
        lake_files=len(state.files),
        new_files=state.new,
        changed_files=state.changed,
        removed_files=state.removed,
        recorded_files=state.recorded,
        tombstoned_files=len(index.root.lineage.removed),
        index_bytes=index.root.index_bytes,
        problems=problems(index.storage, index.index_dir, index.root, verify=verify),
        running_operations=[f"{lease.operation} ({lease.operation_id[:8]})" for lease in leases if lease.is_alive()],
    )
