"""The lake as lakeseek sees it: its data files, their partition values, and what changed
since an index was built.

Data files are what Spark reads from a directory: every file below the root whose path
has no component starting with ``.`` or ``_`` (``_`` components with ``=`` in them are
partition directories and count).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import pyarrow as pa
import pyarrow.dataset as ds

from lakeseek.datetimes import RebasedDataset, parquet_format, spark_view
from lakeseek.exceptions import DataFileError, LakeNotFoundError
from lakeseek.format.lineage import Lineage
from lakeseek.io import Stamp, Storage
from lakeseek.partitions import partition_expression


def is_hidden(name: str, *, directory: bool = False) -> bool:
    """Whether Spark's Parquet reader skips a file, or with ``directory`` a directory, of this name.

    Spark 4's listing (HadoopFSUtils.shouldFilterOutPathName) keeps names that start with
    ``_common_metadata`` or ``_metadata`` (Parquet summary files) and ``_`` names with ``=``
    (partition directories), and skips other names that start with ``_`` or ``.`` or end
    with ``._COPYING_``. Of the files it lists it then reads none whose name starts with
    ``_`` without ``=`` (PartitioningAwareFileIndex.isDataPath). So a directory
    ``_metadata/`` is entered and its files are data, but a file ``_metadata`` is not.
    """
    if name[:1] not in ("_", "."):  # nearly every name: decided by one comparison
        return name.endswith("._COPYING_")
    if directory and name.startswith(("_common_metadata", "_metadata")):
        return False
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")


def list_data_files(storage: Storage, lake_root: str, index_dir: str | None = None) -> dict[str, Stamp]:
    """Data files below ``lake_root`` by path relative to it, with their stamps.

    Runs on every query, so it reads each entry once and never enters hidden directories.
    Files under ``index_dir`` (an index home) are left out too; one inside the lake is
    under a hidden directory anyway (``lakeseek.index.locate`` refuses any other).
    """
    if not storage.is_dir(lake_root):
        raise LakeNotFoundError(f"lake not found: {lake_root} is not a directory")
    # Directories answer to the directory rule, which hides less; files to their own.
    found = storage.walk_files(lake_root, skip_dir=partial(is_hidden, directory=True), skip_file=is_hidden)
    # Spark reads no 0-byte file (no footer, no rows; spark.read.parquet skips them): neither do queries and builds.
    found = {path: stamp for path, stamp in found.items() if stamp.size}
    if index_dir is not None and index_dir.startswith(f"{lake_root}/"):
        home = f"{index_dir[len(lake_root) + 1 :]}/"
        found = {path: stamp for path, stamp in found.items() if not path.startswith(home)}
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
        stamps = zip(listing.sizes, listing.mtimes, listing.versions, strict=True)
        for file_id, path, stamp in zip(listing.ids, listing.paths, stamps, strict=True):
            known.add(path)
            current = files.get(path)
            if current is None:
                removed.append(path)
            elif current != stamp:  # a version not recorded (None, before format 3) never matches
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
    time_zone: str = "UTC",
) -> ds.FileSystemDataset | RebasedDataset:
    """A pyarrow dataset over exactly these data files, with their hive partition values.

    ``row_groups`` limits a file to some of its row groups (files absent from it are read whole).
    Dates and timestamps read as Spark reads them (:mod:`lakeseek.datetimes`): INT96 as
    microseconds, and the files Spark rebases from the Julian calendar rebased.
    """
    # Partition values as Spark reads them (lakeseek.partitions): timestamps in ``time_zone``.
    fields = partition_fields(schema, partition_columns)
    by_directory: dict[str, ds.Expression] = {}

    def partition(path: str) -> ds.Expression:
        directory = path.rpartition("/")[0]
        if directory not in by_directory:
            by_directory[directory] = partition_expression(path, fields, time_zone)
        return by_directory[directory]

    parquet = parquet_format()
    selected = row_groups or {}
    fragments = [
        parquet.make_fragment(
            f"{lake_root}/{path}",
            storage.fs,
            partition(path) if partition_columns else ds.scalar(True),
            row_groups=selected.get(path),
        )
        for path in relative_paths
    ]
    return spark_view(ds.FileSystemDataset(fragments, schema, parquet, storage.fs))


@contextmanager
def reading_data_files(storage: Storage, lake_root: str, relative_paths: Sequence[str]) -> Iterator[None]:
    """pyarrow's failures to read some of these data files as a one-line DataFileError naming the file.

    Spark fails a query over a file that is not Parquet (FAILED_READ_FILE) or that vanished
    after the listing (FILE_NOT_EXIST); so does lakeseek, saying which file. Errors that no
    data file explains (a bad filter, say) are left as they are.
    """
    try:
        yield
    except (pa.ArrowInvalid, OSError) as error:
        culprit = _unreadable_file(storage, lake_root, relative_paths, error)
        if culprit is None:
            raise
        location = f"{lake_root}/{culprit}" if storage.is_local else storage.uri(f"{lake_root}/{culprit}")
        if not storage.is_file(f"{lake_root}/{culprit}"):
            raise DataFileError(f"data file {location} was removed while the query read it: run it again") from error
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        reason = reason.split(f"{lake_root}/{culprit}", 1)[-1].lstrip("': ") or reason
        raise DataFileError(f"cannot read data file {location} (not Parquet, or damaged): {reason}") from error


def _unreadable_file(storage: Storage, lake_root: str, relative_paths: Sequence[str], error: Exception) -> str | None:
    """The file behind a read error: the one its message names, else the first that does not open."""
    text = str(error)
    named = [path for path in relative_paths if f"{lake_root}/{path}" in text]
    if named:
        return max(named, key=len)  # 'a/b.parquet' also contains 'b.parquet' of another directory
    import pyarrow.parquet as pq

    for path in relative_paths:
        try:
            pq.read_metadata(f"{lake_root}/{path}", filesystem=storage.fs)
        except (pa.ArrowInvalid, OSError):
            return path
    return None
