"""Which files of an index directory an operation wrote, from their names alone, and the
clearing of what operations that never committed left behind.

Every name an operation writes carries its id: ``data/<id>/…`` (index files of any kind),
``_tmp/<id>/…`` (spills), ``lineage/<id>-…`` (manifests), ``log/.tmp-<id>-…`` and
``_leases/.tmp-<id>-…`` (atomic writes under way), ``_leases/<id>.json``. A name of no
such form is not lakeseek's, and nothing deletes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from lakeseek.commits.leases import LEASE_DIR, OPERATION_ID, Leases
from lakeseek.commits.log import LOG_DIR, IndexLog, is_entry_name
from lakeseek.format.lineage import LINEAGE_DIR
from lakeseek.io import Storage
from lakeseek.location import Location

# Directories holding one directory per operation.
_PER_OPERATION = ("data", "_tmp")


def owner(relative: str) -> str | None:
    """The operation that wrote a file of the index directory, from its name; None for a
    name lakeseek's operations do not write."""
    found = _named_owner(relative)
    return found if found is not None and OPERATION_ID.fullmatch(found) else None


def _named_owner(relative: str) -> str | None:
    parts = relative.split("/")
    if len(parts) >= 3 and parts[0] in _PER_OPERATION:
        return parts[1]
    if len(parts) == 2 and parts[0] == LINEAGE_DIR:
        return parts[1].split("-", 1)[0]
    if len(parts) == 2 and parts[0] in (LOG_DIR, LEASE_DIR) and parts[1].startswith(".tmp-"):
        return parts[1].split("-")[1]
    if len(parts) == 2 and parts[0] == LEASE_DIR and parts[1].endswith(".json"):
        return parts[1].removesuffix(".json")
    return None


def is_temporary(relative: str) -> bool:
    return relative.rsplit("/", 1)[-1].startswith(".tmp-")


def is_log_entry(relative: str) -> bool:
    directory, _, name = relative.rpartition("/")
    return directory == LOG_DIR and is_entry_name(name)


def is_lease(relative: str) -> bool:
    return relative.startswith(f"{LEASE_DIR}/") and relative.endswith(".json")


def relative_to(path: str, directory: str) -> str:
    return path[len(directory) + 1 :]


def recover(location: Location) -> None:
    """Clear the leftovers of operations that died (their lease expired or their process is gone)."""
    leases = Leases(location.storage, location.index_dir)
    for lease in leases.all():
        if not lease.is_alive():
            discard(location, lease.operation_id)
            leases.release(lease.operation_id)


def discard(location: Location, operation_id: str, referenced: set[str] | None = None) -> None:
    """Delete the files an operation wrote that no committed version references
    (``referenced``, or else every version in the log)."""
    storage, index_dir = location.storage, location.index_dir
    mine = [s for s in storage.list_files(index_dir) if owner(relative_to(s.path, index_dir)) == operation_id]
    mine = [s for s in mine if not is_lease(relative_to(s.path, index_dir))]
    if not mine:
        return
    if referenced is None:
        referenced = set().union(*(root.referenced_paths() for root in IndexLog(storage, index_dir).roots().values()))
    for status in mine:
        if relative_to(status.path, index_dir) not in referenced:
            storage.delete_file(status.path)
    prune_empty_dirs(storage, index_dir, lambda name: name == operation_id)


def prune_empty_dirs(storage: Storage, index_dir: str, owners: Callable[[str], bool]) -> None:
    """Remove the empty per-operation directories of the operations ``owners`` accepts."""
    for top in _PER_OPERATION:
        for name in storage.list_dirs(f"{index_dir}/{top}"):
            directory = f"{index_dir}/{top}/{name}"
            with contextlib.suppress(FileNotFoundError):  # another cleaner removed it first
                if owners(name) and not storage.list_files(directory):
                    storage.delete_dir(directory)
