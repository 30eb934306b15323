"""A lake that is a directory of Parquet files, read as ``spark.read.parquet`` reads it.

Its data files are every file below the root whose path has no component Spark skips
(:func:`is_hidden`), hive-partitioned or not; its partition values are the ``name=value``
directories on a file's path, typed as Spark infers them (:mod:`lakeseek.sources.partitions`).
A directory has no version token: a file's stamp (size, mtime, and the storage's token of
its content) tells whether it changed (docs/freshness.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache, partial
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.dataset as ds

from lakeseek.engine.paths import literal_path
from lakeseek.engine.runner import Runner, spark_errors
from lakeseek.exceptions import LakeNotFoundError
from lakeseek.lake.datetimes import spark_arrow_schema
from lakeseek.lake.files import open_data_file
from lakeseek.lake.schemas import spark_schema_json
from lakeseek.sources.base import LakeSchema, LakeSource, Snapshot, merged_schema
from lakeseek.sources.partitions import infer_partition_types, partition_expression, partition_values

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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


class DirectorySource(LakeSource):
    name = "directory"

    def snapshot(self, *, exclude: str | None = None) -> Snapshot:
        """Every data file by path relative to the root, with its stamp.

        Runs on every query, so it reads each entry once and never enters hidden directories.
        Files under ``exclude`` are left out too; an index home inside the lake is under a
        hidden directory anyway (``lakeseek.location.locate`` refuses any other).
        """
        if not self.storage.is_dir(self.root):
            raise LakeNotFoundError(f"lake not found: {self.root} is not a directory")
        # Directories answer to the directory rule, which hides less; files to their own.
        found = self.storage.walk_files(self.root, skip_dir=partial(is_hidden, directory=True), skip_file=is_hidden)
        # Spark reads no 0-byte file (no footer, no rows; spark.read.parquet skips them): neither do queries and builds.
        found = {path: stamp for path, stamp in found.items() if stamp.size}
        if exclude is not None and exclude.startswith(f"{self.root}/"):
            home = f"{exclude[len(self.root) + 1 :]}/"
            found = {path: stamp for path, stamp in found.items() if not path.startswith(home)}
        return Snapshot(found)

    def partition_values(self, file: str, fields: pa.Schema, time_zone: str) -> dict[str, object]:
        return partition_values(file, fields, time_zone)

    def partition_expression(self, file: str, fields: pa.Schema, time_zone: str) -> ds.Expression:
        return _directory_expression(file.rpartition("/")[0], fields, time_zone)

    def partition_types(self, files: Iterable[str], partition_columns: Sequence[str]) -> dict[str, pa.DataType]:
        return infer_partition_types(files, partition_columns)

    def discover(self, files: list[str], runner: Callable[[], Runner], spark: Callable[[], SparkSession]) -> LakeSchema:
        """Spark's schema of the lake (its partition columns and their inferred types: the Spark
        front ends rely on them), with every file's schema merged in (Spark's is one file's)."""
        from lakeseek.engine.schema import lake_schema  # imports pyspark: only builds that start on Spark need it

        with spark_errors():
            spark_schema = spark().read.parquet(literal_path(self.uri)).schema
        keys = {part.split("=", 1)[0] for part in files[0].split("/")[:-1] if "=" in part}
        partition_columns = tuple(name for name in spark_schema.names if name in keys)
        physical = spark_arrow_schema(open_data_file(self, files[0]))
        recorded = lake_schema(spark_schema, physical, list(partition_columns))
        schema = merged_schema(self, runner, recorded, partition_columns, files)
        return LakeSchema(
            schema, spark_schema_json(schema, partition_columns, recorded, spark_schema.json()), partition_columns
        )


@lru_cache(maxsize=4096)
def _directory_expression(directory: str, fields: pa.Schema, time_zone: str) -> ds.Expression:
    """The partition values of the files of one directory (all files of a directory share them)."""
    return partition_expression(f"{directory}/file", fields, time_zone)
