"""The lake as lakeseek sees it: its data files, their partition values, and what changed
since an index was built.

Data files are what Spark reads from a directory: every file below the root whose path
has no component starting with ``.`` or ``_`` (``_`` components with ``=`` in them are
partition directories and count).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.dataset as ds

from lakeseek.exceptions import LakeNotFoundError
from lakeseek.format.lineage import Lineage
from lakeseek.io import FileStatus, Storage


def is_hidden(name: str) -> bool:
    """Spark's rule for names its file listing skips."""
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")


def list_data_files(storage: Storage, lake_root: str, index_dir: str | None = None) -> dict[str, FileStatus]:
    """Data files below ``lake_root`` by path relative to it, sorted by that path."""
    if not storage.is_dir(lake_root):
        raise LakeNotFoundError(f"lake not found: {lake_root} is not a directory")
    skip = f"{index_dir}/" if index_dir else None
    found = {}
    prefix = len(lake_root) + 1
    for status in storage.list_files(lake_root):
        if skip and status.path.startswith(skip):
            continue
        relative = status.path[prefix:]
        if not any(is_hidden(part) for part in relative.split("/")):
            found[relative] = status
    return dict(sorted(found.items()))


@dataclass(frozen=True)
class LakeState:
    """The lake now, compared with an index's lineage."""

    files: dict[str, FileStatus]
    indexed: dict[int, str]  # file id -> relative path, for files unchanged since indexing
    new: list[str]
    changed: list[str]
    removed: list[str]

    @property
    def unindexed(self) -> list[str]:
        """Files the index knows nothing valid about: every query must read them."""
        return self.new + self.changed

    @property
    def is_fresh(self) -> bool:
        return not (self.new or self.changed or self.removed)


def compare(lineage: Lineage, files: dict[str, FileStatus]) -> LakeState:
    indexed: dict[int, str] = {}
    changed: list[str] = []
    removed: list[str] = []
    known = set()
    for file_id, path, size, mtime in zip(lineage.ids, lineage.paths, lineage.sizes, lineage.mtimes, strict=True):
        known.add(path)
        current = files.get(path)
        if current is None:
            removed.append(path)
        elif current.size == size and current.mtime_ns == mtime:
            indexed[file_id] = path
        else:
            changed.append(path)
    new = [path for path in files if path not in known]
    return LakeState(files, indexed, new, changed, removed)


def partition_fields(schema: pa.Schema, partition_columns: tuple[str, ...]) -> pa.Schema:
    return pa.schema([schema.field(name) for name in partition_columns])


def open_dataset(
    storage: Storage, lake_root: str, relative_paths: list[str], schema: pa.Schema, partition_columns: tuple[str, ...]
) -> ds.FileSystemDataset:
    """A pyarrow dataset over exactly these data files, with their hive partition values."""
    partitioning = ds.HivePartitioning(partition_fields(schema, partition_columns), segment_encoding="uri")
    partitions = [partitioning.parse(path) if partition_columns else ds.scalar(True) for path in relative_paths]
    return ds.FileSystemDataset.from_paths(
        [f"{lake_root}/{path}" for path in relative_paths],
        schema=schema,
        format=ds.ParquetFileFormat(),
        filesystem=storage.fs,
        partitions=partitions,
    )
