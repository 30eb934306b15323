"""What a lake is to lakeseek: a source of data files, at versions.

A :class:`LakeSource` says which data files make the lake now (a :class:`Snapshot`: every
file with its stamp, and the source's own version token when it has one), what changed since
one of its versions when it can tell, the partition values of a file, and the lake's schema
when an index is created. Reading the files is the same for every source
(:mod:`lakeseek.lake.files`). A directory of Parquet files listed as Spark lists it is the
first source (:mod:`lakeseek.sources.directory`); another is a module here and one
:func:`lakeseek.sources.register_source` line.
"""

from __future__ import annotations

import contextlib
import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from lakeseek.engine.runner import Runner
from lakeseek.exceptions import LakeMetadataError, LakeseekError, UnsupportedLakeError, one_line
from lakeseek.format import values
from lakeseek.io import Stamp, Storage
from lakeseek.lake.files import distinct_schemas, open_files
from lakeseek.lake.formats import PARQUET, DataFormat
from lakeseek.lake.formats.base import ColumnStatistics
from lakeseek.lake.schemas import merge_schemas, spark_schema_json
from lakeseek.lake.state import Changes

if TYPE_CHECKING:
    from lakeseek.expressions import Predicate

_EMPTY_SPARK_SCHEMA = '{"type": "struct", "fields": []}'


@dataclass(frozen=True)
class Snapshot:
    """The lake at one version: every data file (by its path in the source) with its stamp."""

    files: dict[str, Stamp]
    # The source's token of this version (a table format's version number); None where the
    # source has none (a directory): then only the files' stamps tell versions apart.
    version: str | None = None
    # The schema a table format declares at this version, which Spark reads the table with
    # whatever its files hold (columns dropped since, or added and in no file yet); None
    # where the files make the schema (a directory).
    schema: pa.Schema | None = None


@dataclass(frozen=True)
class LakeAddress:
    """A lake as plain data any process can open again (a Spark executor, for the tasks of a
    job): its URI, the source it was opened as, and the storage options."""

    uri: str
    source: str
    options: Mapping[str, object] = field(default_factory=dict)

    def open(self) -> LakeSource:
        """The lake, as the same source (a LakeseekError when this process does not know it:
        the module that registers it must be imported here too)."""
        from lakeseek.sources import open_lake

        return open_lake(self.uri, self.options, source_format=self.source)


@dataclass(frozen=True)
class LakeSchema:
    """The lake's schema when an index is created: Arrow types lakeseek reads it with, the
    same as Spark's StructType JSON, and the partition columns."""

    schema: pa.Schema
    spark_schema: str
    partition_columns: tuple[str, ...]

    @classmethod
    def of(cls, schema: pa.Schema, partition_columns: Sequence[str] = ()) -> LakeSchema:
        """The lake's schema with Spark's type for each column."""
        columns = tuple(partition_columns)
        return cls(schema, spark_schema_json(schema, columns, pa.schema([]), _EMPTY_SPARK_SCHEMA), columns)


DEFAULT_HOME = "_lakeseek"


class LakeSource(ABC):
    """A lake whose data files are files of one format (:mod:`lakeseek.lake.formats`; Parquet
    unless a source says otherwise) on one storage, below one root.

    A source is registered by name (:func:`lakeseek.sources.register_source`) in each process
    that opens the lake: build tasks open it again on Spark's executors, so the module that
    registers it must be imported there too (a task that finds another source raises)."""

    name: ClassVar[str]
    data_format: ClassVar[DataFormat] = PARQUET
    # Whether Spark's own reading of the root as a directory of Parquet files reads exactly the
    # lake's files (a directory's); a table format's directory also holds files it removed.
    listed_by_spark: ClassVar[bool] = False
    # Spark read options its Parquet scan of the root needs to list the lake's files at all
    # (files in subdirectories that are not partitions: recursiveFileLookup).
    spark_listing_options: ClassVar[Mapping[str, str]] = {}
    # Whether the lake's own layout narrows a scan (prune): then the Spark format reads it
    # without an index; any other lake needs one there, and its absence is an error.
    prunes_itself: ClassVar[bool] = False
    # The object store's settings the lake was opened with (see lakeseek.io): build tasks,
    # wherever they run, open the lake again with them.
    storage_options: Mapping[str, object] = {}

    def __init__(self, storage: Storage, root: str) -> None:
        self.storage = storage
        self.root = root

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.shown_root!r})"

    # -- where ----------------------------------------------------------------------------------
    @property
    def uri(self) -> str:
        """The lake's URI: :func:`lakeseek.sources.open_lake` of it gives this source back
        (build tasks open the lake so, wherever they run)."""
        return self.storage.uri(self.root)

    @property
    def address(self) -> LakeAddress:
        """The lake as plain data, for tasks to open it again wherever they run."""
        return LakeAddress(self.uri, self.name, dict(self.storage_options))

    @property
    def shown_root(self) -> str:
        """The lake as people see it: a local path, or a URI."""
        return self.root if self.storage.is_local else self.uri

    @property
    def default_home(self) -> str:
        """Where the lake's indexes live unless told: a hidden directory of the lake, which
        Spark, Trino, DuckDB and the table formats' own cleaners (Delta's and Iceberg's
        orphan-file removal skip hidden paths) leave alone."""
        return f"{self.root}/{DEFAULT_HOME}"

    def path(self, file: str) -> str:
        """A data file's storage path."""
        return f"{self.root}/{file}"

    def file_uri(self, file: str) -> str:
        """A data file's URI, for engines (Spark)."""
        return self.storage.uri(self.path(file))

    def shown(self, file: str) -> str:
        """A data file as ``files()`` returns it and messages name it: a local path, or a URI."""
        return self.path(file) if self.storage.is_local else self.file_uri(file)

    def exists(self) -> bool:
        return self.storage.is_dir(self.root)

    # -- which files ----------------------------------------------------------------------------
    @abstractmethod
    def snapshot(self, *, exclude: str | None = None) -> Snapshot:
        """The lake now. ``exclude`` is a directory (an index home) whose files are never data.
        LakeNotFoundError when there is no lake.

        A source that gives versions vouches with them: while a snapshot's ``version`` equals
        the one an index recorded, no file it lists changed (queries compare no stamp), so its
        files must never be rewritten in place (a table format's are not), or its version
        must change when one is."""

    def version(self, known: str | None = None) -> str | None:
        """The source's current version token, found cheaply (a table format: one small request,
        no listing of data files), or None when the source has no versions (then every query
        takes a snapshot). ``known`` is the version an index recorded, a start for the search."""
        return None

    def changes(self, since: str, snapshot: Snapshot) -> Changes | None:
        """What changed from the source's version ``since`` to ``snapshot``; None when the
        source cannot tell (then the files' stamps are compared). What it returns is taken
        over the stamps: a listed file it does not name counts as unchanged."""
        return None

    # -- what the files hold ----------------------------------------------------------------------
    def partition_values(self, file: str, fields: pa.Schema, time_zone: str) -> dict[str, object]:
        """The partition columns' values of a data file (``fields``: the columns and their types)."""
        return {}

    def partition_expression(self, file: str, fields: pa.Schema, time_zone: str) -> ds.Expression:
        """:meth:`partition_values` as the expression a pyarrow dataset fragment carries."""
        return ds.scalar(True)

    def partition_types(self, files: Iterable[str], partition_columns: Sequence[str]) -> dict[str, pa.DataType]:
        """The types the partition columns take over ``files`` (the lake's files, or those an
        index covered), where the files say (see :func:`lakeseek.lake.schemas.current_partition_types`)."""
        return {}

    def spark_misread_partitions(self, files: Iterable[str]) -> str | None:
        """Why Spark, which takes partition values from directory names, would read one of
        ``files`` with other partition values than the lake's (a sentence naming the file),
        or None. A directory's partition values are its directory names, as Spark reads them."""
        return None

    def recorded_statistics(self, files: Sequence[str], schema: pa.Schema) -> dict[str, dict[str, ColumnStatistics]]:
        """What the table's own metadata records of data files' columns (of ``schema``, the
        lake's): per file, per column it records in full, bounds holding every non-NULL value of
        the file (``min`` <= value <= ``max``, widened where the format truncates them; both None
        when the file holds no non-NULL value) and the NULLs (of the rows the file holds, deleted
        ones too). A column it records only in part, or not exactly enough to bound its values, is
        left out: such a file is read instead. A source without such metadata records nothing."""
        return {}

    def prune(self, files: Sequence[str], predicate: Predicate) -> list[str]:
        """The files of ``files`` that may hold rows the bound ``predicate`` keeps, by what the
        source's own layout records of them (an OTree lake's blocks); a source that records
        nothing of the kind keeps them all. Never drops a file that holds a matching row."""
        return list(files)

    def deleted_rows(self, file: str, stamp: Stamp | None) -> np.ndarray | None:
        """The positions (ascending) of the rows the source deleted from data file ``file``
        without rewriting it (a Delta table's deletion vector), in the content ``stamp`` (the
        lake's stamp of the file; None: the file as the source holds it now) identifies; None
        when every row of the file is the lake's. Every read of the file leaves them out."""
        return None

    def check_unchanged(self, stamps: Mapping[str, Stamp]) -> None:
        """A DataFileError when a data file just read, listed with these stamps, holds other
        content now: it may have been replaced between the listing and the read, and rows of
        two states of the lake would make an answer of neither. A table format never rewrites
        a file it lists: nothing to check."""
        return None

    def check_columns(self, files: Sequence[str], stamps: Mapping[str, Stamp] | None = None) -> None:
        """An error when a data file of ``files`` (with the lake's ``stamps`` of them) holds
        a column the lake now calls by another name, or a column of one of the lake's names
        that is not the lake's column (a table format that matches columns by id): lakeseek,
        Spark's Parquet scan included, reads a file's columns by name. A lake whose columns
        are its files' columns by name has nothing to check."""
        return None

    def listed_partition_columns(self, files: Iterable[str]) -> tuple[str, ...] | None:
        """The partition columns the paths of ``files`` name, where the lake's directories make
        them; None where they do not (a table format's metadata names its own)."""
        return None

    def discover(self, files: Mapping[str, Stamp], runner: Callable[[], Runner]) -> LakeSchema:
        """The lake's schema when an index of ``files`` is created: by default every file's
        schema merged (:mod:`lakeseek.lake.schemas`), without partition columns."""
        return LakeSchema.of(merged_schema(self, runner, pa.schema([]), (), files))

    def dataset(
        self,
        files: list[str],
        schema: pa.Schema,
        partition_columns: Sequence[str],
        row_groups: Mapping[str, Sequence[int]] | None = None,
        time_zone: str = "UTC",
        stamps: Mapping[str, Stamp] | None = None,
    ):
        """A pyarrow dataset over exactly ``files``, read with ``schema`` (see
        :func:`lakeseek.lake.files.open_files`): the lake's ``stamps`` of the files spare HEAD
        requests (their sizes) and say which rows the source deleted (:meth:`deleted_rows`)."""
        self.check_columns(files, stamps)
        return open_files(self, files, schema, partition_columns, row_groups, time_zone=time_zone, stamps=stamps)


# Up to this many files, their footers are read in this process (by threads), else by a job.
FOOTERS_IN_PROCESS = 1_000
FOOTERS_PER_TASK = 2_000


def merged_schema(
    source: LakeSource,
    runner: Callable[[], Runner],
    schema: pa.Schema,
    partition_columns: Sequence[str],
    files: Mapping[str, Stamp],
) -> pa.Schema:
    """``schema`` with the schema of every data file of ``files`` merged in, in their order (see
    :mod:`lakeseek.lake.schemas`): wider types, new columns, other spellings of a column; an
    IncompatibleSchemaError names a file whose column has no exact common type with the lake's."""
    paths = list(files)
    sizes = {path: stamp.size for path, stamp in files.items()}
    if len(paths) <= FOOTERS_IN_PROCESS:
        found = distinct_schemas(source, paths, sizes)
    else:
        chunks = [paths[i : i + FOOTERS_PER_TASK] for i in range(0, len(paths), FOOTERS_PER_TASK)]
        tasks = [(source.address, {path: sizes[path] for path in chunk}) for chunk in chunks]
        results = runner().run("reading the files' schemas", tasks, _schemas_task)
        found = [(result["path"], values.deserialize_schema(result["schema"])) for result in results]
    return merge_schemas(schema, found, partition_columns, source.data_format.common_type)


def bounded_by_metadata(arrow_type: pa.DataType) -> bool:
    """Whether a table format's recorded bounds of a column of this type can bound its values:
    not for floating point, whose NaN the formats leave out of (or put into) their bounds."""
    kinds = (pa.types.is_integer, pa.types.is_boolean, pa.types.is_date, pa.types.is_timestamp, pa.types.is_decimal)
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or any(k(arrow_type) for k in kinds)


def _schemas_task(lake: LakeAddress, sizes: dict[str, int]) -> list[dict]:
    found = distinct_schemas(lake.open(), list(sizes), sizes)
    return [{"path": path, "schema": values.serialize_schema(schema)} for path, schema in found]


# -- table formats, read by their own libraries ---------------------------------------------------
class NamedTable(Protocol):
    """What messages name a table by: its source's name and where it is (a LakeSource, or a
    table not opened yet)."""

    name: str
    shown_root: str


@dataclass(frozen=True)
class TableName:
    name: str
    shown_root: str


def table_library(source: NamedTable, module: str, title: str):
    """The package a table format is read with (its extra is the source's name), or an error
    saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise UnsupportedLakeError(
            f"{source.shown_root} is {title} table: reading it needs the {module.split('.')[0]} package "
            f"(pip install 'lakeseek[{source.name}]')"
        ) from error


@contextlib.contextmanager
def table_errors(source: NamedTable, *errors: type[BaseException]) -> Iterator[None]:
    """The table format library's ``errors`` while it reads the table, as one-line lakeseek errors."""
    try:
        yield
    except LakeseekError:
        raise
    except errors as error:
        detail = one_line(error)
        raise LakeMetadataError(f"cannot read the {source.name} table {source.shown_root}: {detail}") from error
