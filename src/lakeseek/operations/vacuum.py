"""``vacuum`` and ``cancel``: delete what no retained version needs, and stop operations."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from lakeseek.commits.leases import Lease, Leases
from lakeseek.commits.log import IndexLog
from lakeseek.commits.transaction import commit
from lakeseek.exceptions import IndexCorruptError, IndexNotFoundError, InvalidArgumentError
from lakeseek.format.actions import CancelOperations, Transaction
from lakeseek.location import LakeLike
from lakeseek.operations.names import (
    discard,
    is_lease,
    is_log_entry,
    is_temporary,
    owner,
    prune_empty_dirs,
    relative_to,
)
from lakeseek.operations.protocol import existing, now_ms

# A temporary file lives for the milliseconds of one atomic write; vacuum leaves younger
# ones alone, so it never deletes a lease or log entry being written.
TEMPORARY_GRACE_MS = 3600 * 1000
DEFAULT_RETENTION_HOURS = 168.0


@dataclass(frozen=True)
class VacuumResult:
    files_deleted: int
    bytes_deleted: int
    versions_deleted: int
    operations_recovered: int


def vacuum_index(
    source: LakeLike,
    *,
    index: str | None = None,
    name: str | None = None,
    retention_hours: float = DEFAULT_RETENTION_HOURS,
    storage_options: Mapping[str, object] | None = None,
) -> VacuumResult:
    """Delete every index file no retained version references.

    Versions older than ``retention_hours`` (except the latest) are dropped first, so
    readers that opened a version within the retention keep working. Files written by a
    live operation (its lease) are kept; those of crashed or cancelled ones are removed.
    """
    number = isinstance(retention_hours, int | float) and not isinstance(retention_hours, bool)
    if not number or not 0 <= retention_hours < float("inf"):
        raise InvalidArgumentError(f"retention_hours must be a number of hours, 0 or more, not {retention_hours!r}")
    location = existing(source, index, name, storage_options)
    storage, index_dir = location.storage, location.index_dir
    log = IndexLog(storage, index_dir)
    # Order matters: files are listed before leases, leases before the log, so a file an
    # operation wrote after our listing is not seen, and one it committed is referenced.
    listed = [s for s in storage.list_files(index_dir) if not is_lease(relative_to(s.path, index_dir))]
    leases = Leases(storage, index_dir).all()
    live = {lease.operation_id for lease in leases if lease.is_alive()}
    versions = log.versions()
    if not versions:
        raise IndexNotFoundError(f"no lakeseek index at {storage.shown(index_dir)}")
    roots = log.roots()  # damaged entries reference nothing anyone can read
    if not roots:
        log.latest()  # says that every entry is damaged, and what to do
    readable = sorted(roots)
    cutoff_ms = now_ms() - retention_hours * 3600 * 1000
    retained = [readable[-1]]
    # A version is opened while it is the latest: its readers are safe until the retention
    # has passed since the version after it was committed.
    for version, successor in zip(reversed(readable[:-1]), reversed(readable[1:]), strict=True):
        if roots[successor].timestamp_ms < cutoff_ms:
            break
        retained.append(version)
    referenced = set().union(*(roots[v].referenced_paths() for v in retained))
    kept_entries = {relative_to(log.entry_path(v), index_dir) for v in versions if v >= min(retained)}
    deleted = deleted_bytes = 0
    for status in listed:
        relative = relative_to(status.path, index_dir)
        if relative in referenced or relative in kept_entries or owner(relative) in live:
            continue
        if is_temporary(relative) and status.mtime_ns > (now_ms() - TEMPORARY_GRACE_MS) * 1_000_000:
            continue  # an atomic write under way: the lease it will become is not there yet
        if owner(relative) is None and not is_log_entry(relative):
            continue  # not a name lakeseek writes: left alone (status reports strays)
        storage.delete_file(status.path)
        deleted += 1
        deleted_bytes += status.size
    recovered = 0
    for lease in leases:
        if lease.operation_id not in live:
            Leases(storage, index_dir).release(lease.operation_id)
            recovered += 1
    listed_owners = {owner(relative_to(s.path, index_dir)) for s in listed}
    prune_empty_dirs(storage, index_dir, lambda name: name in listed_owners and name not in live)
    return VacuumResult(deleted, deleted_bytes, len([v for v in versions if v < min(retained)]), recovered)


def cancel_operations(
    source: LakeLike,
    *,
    index: str | None = None,
    name: str | None = None,
    storage_options: Mapping[str, object] | None = None,
) -> list[Lease]:
    """Cancel every running or crashed operation on the index and delete what it wrote.

    The leases go first, then a ``cancel`` version is committed, then the files. An operation
    checks its lease after reading the version it commits on, just before committing: one that
    commits after the cancel version read it, so it finds its lease gone and does not commit;
    one that committed before is in the log, and the files its versions reference stay.
    """
    location = existing(source, index, name, storage_options)
    leases = Leases(location.storage, location.index_dir)
    cancelled = leases.all()
    if not cancelled:
        return []
    for lease in cancelled:
        leases.release(lease.operation_id)
    ids = tuple(lease.operation_id for lease in cancelled)
    try:
        commit(
            IndexLog(location.storage, location.index_dir),
            lambda latest: Transaction("cancel", (CancelOperations(ids),)),
            what=f"cancel on index '{location.name}'",
            owner=uuid.uuid4().hex,
        )
    except IndexNotFoundError:
        # No version yet, so nothing to order the cancel with: a create that checked its lease
        # before it went may still commit its files. A cancelled one removes them itself,
        # and vacuum those of one that died.
        return cancelled
    except IndexCorruptError:
        pass  # no version reads whole: no operation can commit on this log either
    for operation_id in ids:
        discard(location, operation_id)
    return cancelled
