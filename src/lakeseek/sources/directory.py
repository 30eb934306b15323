"""A lake that is a directory of Parquet files, read as ``spark.read.parquet`` reads it, or of
CSV files with a header line or JSON lines files (``source_format="csv"`` / ``"json"``), read as
``spark.read.option("header", "true").csv`` and ``spark.read.json`` list them.

Its data files are every file below the root whose path has no component Spark skips
(:func:`is_hidden`), hive-partitioned or not (then none directly in the root, which Spark's
partition discovery never reads); its partition values are the ``name=value``
directories on a file's path, typed as Spark infers them (:mod:`lakeseek.sources.partitions`).
A directory has no version token: a file's stamp (size, mtime, and the storage's token of
its content) tells whether it changed (docs/freshness.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache, partial

import pyarrow as pa
import pyarrow.dataset as ds

from lakeseek.engine.runner import Runner
from lakeseek.exceptions import DataFileChangedError, LakeNotFoundError
from lakeseek.io import Stamp
from lakeseek.lake.files import file_schema, reading_data_files
from lakeseek.lake.formats import CSV, JSON
from lakeseek.sources.base import LakeSchema, LakeSource, Snapshot, merged_schema
from lakeseek.sources.partitions import (
    infer_partition_types,
    partition_expression,
    partition_values,
    raw_partition_values,
    unescape_path_name,
)


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


# One function for every listing: storages that keep a listing per tree and rules find it again.
_skip_directory = partial(is_hidden, directory=True)


# Up to this many files read, their stamps are checked one by one after the read; more, by a listing.
STAMPS_ASKED_ONE_BY_ONE = 16


class DirectorySource(LakeSource):
    name = "directory"
    listed_by_spark = True
    # The last listing the storage gave, whose exclusion, and the snapshot made of it.
    _last_snapshot: tuple[dict, str | None, Snapshot] | None = None

    def snapshot(self, *, exclude: str | None = None) -> Snapshot:
        """Every data file by path relative to the root, with its stamp.

        Runs on every query, so it reads each entry once and never enters hidden directories.
        Files under ``exclude`` are left out too; an index home inside the lake is under a
        hidden directory anyway (``lakeseek.location.locate`` refuses any other).
        """
        if not self.storage.is_dir(self.root):
            raise LakeNotFoundError(f"lake not found: {self.shown_root} is not a directory")
        # Directories answer to the directory rule, which hides less; files to their own.
        listed = self.storage.walk_files(self.root, skip_dir=_skip_directory, skip_file=is_hidden)
        last = self._last_snapshot
        if last is not None and last[0] is listed and last[1] == exclude:
            return last[2]  # the storage's own listing again (a watched tree that has not changed)
        # Spark reads no 0-byte file (no footer, no rows; Spark's readers skip them): neither do queries and
        # builds. Its directory still counts for partition discovery.
        found = {path: stamp for path, stamp in _spark_read(listed).items() if stamp.size}
        if exclude is not None and exclude.startswith(f"{self.root}/"):
            home = f"{exclude[len(self.root) + 1 :]}/"
            found = {path: stamp for path, stamp in found.items() if not path.startswith(home)}
        snapshot = Snapshot(found)
        self._last_snapshot = (listed, exclude, snapshot)
        return snapshot

    def check_unchanged(self, stamps: Mapping[str, Stamp]) -> None:
        # A file's stamp changes with every write, and a rename over it is another inode (or
        # object): the same stamp after the read means the rows read are those listed. A few
        # files are asked one by one (a needle's one: a stat, or a HEAD), more by a listing.
        if not stamps:
            return
        if len(stamps) <= STAMPS_ASKED_ONE_BY_ONE:
            now = {path: self.storage.stamp(self.path(path)) for path in stamps}
        else:
            now = self.storage.walk_files(self.root, skip_dir=_skip_directory, skip_file=is_hidden)
        changed = next((path for path, stamp in stamps.items() if now.get(path) != stamp), None)
        if changed is not None:
            raise DataFileChangedError(f"data file {self.shown(changed)} changed while it was read: run it again")

    def partition_values(self, file: str, fields: pa.Schema, time_zone: str) -> dict[str, object]:
        return partition_values(file, fields, time_zone)

    def partition_expression(self, file: str, fields: pa.Schema, time_zone: str) -> ds.Expression:
        return _directory_expression(file.rpartition("/")[0], fields, time_zone)

    def partition_types(self, files: Iterable[str], partition_columns: Sequence[str]) -> dict[str, pa.DataType]:
        return infer_partition_types(files, partition_columns)

    def spark_misread_partitions(self, files: Iterable[str]) -> str | None:
        """Spark refuses a partition directory of no value (``p=``: EMPTY_PARTITION_COLUMN_VALUE),
        which lakeseek reads as the empty string."""
        for file in files:
            empty = next((name for name, value in raw_partition_values(file).items() if value == ""), None)
            if empty is not None:
                return (
                    f"Spark refuses the partition directory '{empty}=' of data file {self.shown(file)} "
                    "(a partition value of no text): read the lake with lakeseek.Index.read"
                )
        return None

    def listed_partition_columns(self, files: Iterable[str]) -> tuple[str, ...]:
        # A partitioned file's directories name the partition columns, whichever file comes first.
        first = next((path for path in files if _in_partition(path)), "")
        keys = [unescape_path_name(part.split("=", 1)[0]) for part in first.split("/")[:-1] if "=" in part]
        return tuple(dict.fromkeys(keys))

    def discover(self, files: Mapping[str, Stamp], runner: Callable[[], Runner]) -> LakeSchema:
        """The schema ``spark.read.option("mergeSchema", "true").parquet`` gives the lake, without
        Spark: the first file's columns, every other file's merged in (:mod:`lakeseek.lake.schemas`),
        then the partition columns of its directories, typed as Spark infers them from every file's.
        A text file's columns are typed as its format infers them from all of its rows."""
        first = next((path for path in files if _in_partition(path)), next(iter(files)))
        partition_columns = self.listed_partition_columns(files)
        with reading_data_files(self, [first]):  # a damaged first file, named
            physical = file_schema(self, first, files[first].size)
        folded = {name.lower() for name in partition_columns}
        data = [field for field in physical if field.name.lower() not in folded]  # the directory's value wins
        types = infer_partition_types(files, partition_columns)
        partitions = [pa.field(name, types.get(name, pa.string())) for name in partition_columns]
        schema = merged_schema(self, runner, pa.schema(data + partitions), partition_columns, files)
        return LakeSchema.of(schema, partition_columns)


class CsvDirectorySource(DirectorySource):
    """A directory of CSV files, each with a header line (see :mod:`lakeseek.lake.formats.csv`)."""

    name = "csv"
    data_format = CSV


class JsonDirectorySource(DirectorySource):
    """A directory of JSON lines files (see :mod:`lakeseek.lake.formats.json`)."""

    name = "json"
    data_format = JSON


def _in_partition(path: str) -> bool:
    """Whether a file (by its path relative to the root) sits in a ``name=value`` directory."""
    return "=" in path.rpartition("/")[0]


def _spark_read(files: dict[str, Stamp]) -> dict[str, Stamp]:
    """The files Spark reads of those listed: once a file sits in a partition directory, Spark's
    partition discovery reads none directly in the root (PartitioningAwareFileIndex lists only
    the partitions' files), where lakeseek would have read them with NULL partition values."""
    # Run on each new listing: a lake without root files (nearly every one) is not copied.
    if all("/" in path for path in files) or not any(_in_partition(path) for path in files):
        return files
    return {path: stamp for path, stamp in files.items() if "/" in path}


# Directories are told apart by what their files hold, which no look at the root decides: a
# directory is Parquet unless opened as one of the others.
DIRECTORY_SOURCES = {source.name: source for source in (DirectorySource, CsvDirectorySource, JsonDirectorySource)}


@lru_cache(maxsize=4096)
def _directory_expression(directory: str, fields: pa.Schema, time_zone: str) -> ds.Expression:
    """The partition values of the files of one directory (all files of a directory share them)."""
    return partition_expression(f"{directory}/file", fields, time_zone)
