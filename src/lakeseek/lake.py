"""The lake as lakeseek sees it: its data files, their partition values, and what changed
since an index was built.

Data files are what Spark reads from a directory: every file below the root whose path
has no component starting with ``.`` or ``_`` (``_`` components with ``=`` in them are
partition directories and count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.dataset as ds

from lakeseek.exceptions import LakeNotFoundError
from lakeseek.format.lineage import Lineage
from lakeseek.io import Storage


def is_hidden(name: str) -> bool:
    """Spark's rule for names its file listing skips."""
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")


# A data file's identity for freshness checks: (size, modification time in ns).
Stamp = tuple[int, int]


def list_data_files(storage: Storage, lake_root: str, index_dir: str | None = None) -> dict[str, Stamp]:
    """Data files below ``lake_root`` by path relative to it, with their stamps.

    Runs on every query, so it avoids per-file work beyond reading each entry once.
    """
    if not storage.is_dir(lake_root):
        raise LakeNotFoundError(f"lake not found: {lake_root} is not a directory")
    skip = f"{index_dir}/" if index_dir else None
    prefix = len(lake_root) + 1
    hidden_dirs: dict[str, bool] = {}
    found = {}
    for info in storage.list_tree(lake_root):
        size = info.size  # None for directories (cheaper than asking for the type)
        if size is None:
            continue
        path = info.path
        if skip and path.startswith(skip):
            continue
        directory, _, name = path[prefix:].rpartition("/")
        hidden = hidden_dirs.get(directory)
        if hidden is None:
            hidden = hidden_dirs[directory] = (
                any(is_hidden(part) for part in directory.split("/")) if directory else False
            )
        if not hidden and not is_hidden(name):
            found[path[prefix:]] = (size, info.mtime_ns or 0)
    return found


@dataclass(frozen=True)
class LakeState:
    """The lake now, compared with an index's lineage."""

    files: dict[str, Stamp]
    indexed: dict[int, str]  # file id -> relative path, for files unchanged since indexing
    new: list[str]  # in the lake, unknown to the index
    changed: list[str]  # indexed or recorded, then rewritten
    removed: list[str]  # indexed or recorded, no longer in the lake
    recorded: list[str]  # recorded by a quick refresh, unchanged since, not indexed

    @property
    def unindexed(self) -> list[str]:
        """Files the index knows nothing valid about: every query must read them."""
        return self.new + self.changed + self.recorded

    @property
    def is_fresh(self) -> bool:
        return not (self.new or self.changed or self.removed or self.recorded)


def compare(lineage: Lineage, files: dict[str, Stamp], pending: Lineage | None = None) -> LakeState:
    """The lake's files against the indexed ``lineage`` and the quick-refresh ``pending`` files."""
    indexed: dict[int, str] = {}
    recorded: list[str] = []
    changed: list[str] = []
    removed: list[str] = []
    known: set[str] = set()
    for listing, target in ((lineage, None), (pending, recorded)):
        if listing is None:
            continue
        for file_id, path, size, mtime in zip(listing.ids, listing.paths, listing.sizes, listing.mtimes, strict=True):
            known.add(path)
            current = files.get(path)
            if current is None:
                removed.append(path)
            elif current != (size, mtime):
                changed.append(path)
            elif target is None:
                indexed[file_id] = path
            else:
                target.append(path)
    new = [path for path in files if path not in known]
    return LakeState(files, indexed, new, changed, removed, recorded)


def partition_fields(schema: pa.Schema, partition_columns: tuple[str, ...]) -> pa.Schema:
    return pa.schema([schema.field(name) for name in partition_columns])


def open_dataset(
    storage: Storage,
    lake_root: str,
    relative_paths: list[str],
    schema: pa.Schema,
    partition_columns: tuple[str, ...],
    row_groups: Mapping[str, Sequence[int]] | None = None,
) -> ds.FileSystemDataset:
    """A pyarrow dataset over exactly these data files, with their hive partition values.

    ``row_groups`` limits a file to some of its row groups (files absent from it are read whole).
    """
    partitioning = ds.HivePartitioning(partition_fields(schema, partition_columns), segment_encoding="uri")
    parquet = ds.ParquetFileFormat()
    selected = row_groups or {}
    fragments = [
        parquet.make_fragment(
            f"{lake_root}/{path}",
            storage.fs,
            partitioning.parse(path) if partition_columns else ds.scalar(True),
            row_groups=selected.get(path),
        )
        for path in relative_paths
    ]
    return ds.FileSystemDataset(fragments, schema, parquet, storage.fs)
