"""What is damaged in an index: the checks ``status`` runs, each with its way out.

Every file a version names protects itself: a lineage manifest by the crc32 and size in its
name, a log entry by the crc32 of its body and the version it must hold, and an index file as
its kind binds it (the sorted kind: the exact offset, length and crc32 of its footer kept in
the root, and Parquet page checksums inside). A damaged file never costs a wrong answer (readers fall back to
reading more data files); these checks say which files are damaged and what repairs them.
"""

from __future__ import annotations

from lakeseek.commits.leases import LEASE_DIR, Leases
from lakeseek.commits.log import IndexLog
from lakeseek.exceptions import IndexCorruptError, IndexNotFoundError
from lakeseek.format.root import Root
from lakeseek.io import Storage
from lakeseek.kinds import kind_named
from lakeseek.kinds.base import REPAIR


def problems(storage: Storage, index_dir: str, root: Root) -> list[str]:
    """One line per damaged or foreign file of the index directory that matters to ``root``."""
    found = []
    log = IndexLog(storage, index_dir)
    for version in log.versions():
        if version <= root.version:
            continue
        try:
            log.read(version)
        except (IndexCorruptError, IndexNotFoundError) as error:
            found.append(f"{error}: version {root.version} is used instead; {REPAIR} past it")
    found.extend(kind_named(root.kind).reader(storage, index_dir, root).problems())
    try:
        root.lineage.indexed(storage, index_dir)
        root.lineage.recorded(storage, index_dir)
    except IndexCorruptError as error:
        found.append(f"{error}: queries read every file; {REPAIR}")
    leases = Leases(storage, index_dir)
    for lease in leases.all():
        if not lease.readable:
            found.append(f"lease {LEASE_DIR}/{lease.operation_id}.json is damaged: `lakeseek cancel` removes it")
    for name in leases.strays():
        found.append(f"{LEASE_DIR}/{name} is not a lakeseek lease: left alone")
    return found
