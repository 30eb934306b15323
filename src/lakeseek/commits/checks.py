"""What is damaged in an index: the checks ``status`` runs, each with its way out.

Every file a version names protects itself: a lineage manifest by the crc32 and size in its
name, a log entry by the crc32 of its body and the version it must hold, and an index file as
its kind binds it (the sorted kind: the exact offset, length and crc32 of its footer kept in
the root, and Parquet page checksums inside). A damaged file never costs a wrong answer (readers fall back to
reading more data files); these checks say which files are damaged and what repairs them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from lakeseek.commits.leases import LEASE_DIR, Leases
from lakeseek.commits.log import IndexLog
from lakeseek.exceptions import IndexCorruptError, IndexNotFoundError, one_line
from lakeseek.format.root import Root
from lakeseek.io import Storage
from lakeseek.kinds import kind_named
from lakeseek.kinds.base import REPAIR


def problems(storage: Storage, index_dir: str, root: Root, *, verify: bool = False) -> list[str]:
    """One line per damaged or foreign file of the index directory that matters to ``root``;
    with ``verify``, every Parquet file the root names is also read whole (see :func:`unsound_files`)."""
    found = []
    log = IndexLog(storage, index_dir)
    for version in log.versions():
        if version <= root.version:
            continue
        try:
            log.read(version)
        except (IndexCorruptError, IndexNotFoundError) as error:
            way_out = log.removal(version) or f"{REPAIR} past it"
            found.append(f"{error}: version {root.version} is used instead; {way_out}")
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
    if verify:
        named = " ".join(found)  # a file a check above found damaged is not named twice
        found += [problem for path, problem in unsound_files(storage, index_dir, root) if path not in named]
    return found


VERIFY_READERS = 8


def unsound_files(storage: Storage, index_dir: str, root: Root) -> list[tuple[str, str]]:
    """Each Parquet file ``root`` names that does not read whole with its pages' checksums
    verified, with a line saying so. The checks above read footers only: a changed byte in a page (a flipped
    bit of a bloom filter, a key turned into another) shows only when a query reads that page,
    and then costs a full scan. This reads every byte of the index."""
    paths = sorted(path for path in root.referenced_paths() if path.endswith(".parquet"))

    def check(path: str) -> tuple[str, str] | None:
        try:
            data = storage.read(f"{index_dir}/{path}")
            pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
        except FileNotFoundError:
            return path, f"index file {path} is missing: {REPAIR}"
        except (OSError, pa.ArrowException) as error:
            reason = one_line(error)
            return path, f"index file {path} is damaged ({reason}): {REPAIR}"
        return None

    with ThreadPoolExecutor(VERIFY_READERS) as pool:
        return [found for found in pool.map(check, paths) if found is not None]
