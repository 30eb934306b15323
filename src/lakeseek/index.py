"""The public handle on an index: ``open_index`` and :class:`Index`.

Lookups and reads need no Spark: the index gives candidate files, pyarrow reads them.
Every query lists the lake first, so files added or rewritten since indexing are always
read and removed ones skipped: the answer is a full scan's, however stale the index.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.commits.checks import problems
from lakeseek.commits.leases import Leases
from lakeseek.commits.log import IndexLog
from lakeseek.evolution import (
    current_partition_types,
    file_schemas,
    infer_partition_types,
    merge_schemas,
    open_files,
    spark_schema_json,
    with_partition_types,
)
from lakeseek.exceptions import IndexCorruptError, LakeNotFoundError, LakeseekError, UnsupportedLakeError
from lakeseek.explain import Explanation, explanation
from lakeseek.expressions import Predicate
from lakeseek.expressions.arrow import read_matching
from lakeseek.expressions.binding import bind, resolve_column, value_type
from lakeseek.expressions.sql import parse_where
from lakeseek.format.lineage import Lineage
from lakeseek.format.root import DELETED, Root
from lakeseek.format.values import KeyValue, key_type_for
from lakeseek.io import Storage, counting, storage_for
from lakeseek.lake import LakeState, compare, is_hidden, list_data_files, reading_data_files
from lakeseek.locate import FILE, exact_keys, locate_keys, scan_keys
from lakeseek.lookup import IndexReader
from lakeseek.planning import Plan, full_scan, plan

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

DEFAULT_HOME = "_lakeseek"
DEFAULT_NAME = "default"
_VALID_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
LakeListing = Literal["per_query", "once"]
log = logging.getLogger("lakeseek")


@dataclass(frozen=True)
class Location:
    """Where a lake and one of its indexes are: ``<home>/<name>``, home being ``SOURCE/_lakeseek``."""

    storage: Storage
    lake_root: str
    home: str
    name: str

    @property
    def index_dir(self) -> str:
        return f"{self.home}/{self.name}"


def index_names(storage: Storage, home: str) -> list[str]:
    """Names of the indexes (committed or not) under an index home."""
    return sorted(name for name in storage.list_dirs(home) if _VALID_NAME.fullmatch(name))


def locate(source: str, index: str | None = None, name: str | None = None, *, existing: bool = True) -> Location:
    """Where the lake at ``source`` and its index ``name`` are.

    ``index`` is the index home when it is not ``SOURCE/_lakeseek``. Without a ``name``,
    an existing index is chosen when the lake has just one (or one named "default").
    """
    storage, lake_root = storage_for(source)
    _refuse_table_formats(storage, lake_root)
    if index is None:
        home = f"{lake_root}/{DEFAULT_HOME}"
    else:
        index_storage, home = storage_for(index)
        if index_storage is not storage:
            raise LakeseekError("the index must live on the same storage as the lake")
    if storage.is_local:  # a symlink must not smuggle the index into the lake, or the lake into it
        real_lake, real_home = os.path.realpath(lake_root), os.path.realpath(home)
    else:
        real_lake, real_home = lake_root, home
    _check_home(real_lake, real_home)
    if name is None:
        name = _default_name(storage, home) if existing else DEFAULT_NAME
    if not _VALID_NAME.fullmatch(name):
        raise LakeseekError(f"invalid index name {name!r}: use letters, digits, '_', '-' and '.'")
    if _is_within(real_lake, f"{real_home}/{name}"):
        raise LakeseekError(
            f"the lake would be inside the index directory {home}/{name}, where vacuum deletes every file "
            "the index does not reference: choose another --index or --name"
        )
    return Location(storage, lake_root, home, name)


def _refuse_table_formats(storage: Storage, lake_root: str) -> None:
    """Read as a Parquet directory, a Delta, Hudi or Iceberg table gives the rows of files the
    table has removed (as Spark's parquet reader does): until lakeseek reads these formats as
    versioned sources, it refuses them rather than answer with rows the table no longer has."""
    table_format = _table_format(storage, lake_root)
    if table_format is not None:
        shown = lake_root if storage.is_local else storage.uri(lake_root)
        article = "an" if table_format[0] in "AEIOU" else "a"
        raise UnsupportedLakeError(
            f"{shown} is {article} {table_format} table: lakeseek does not read table formats yet, and its "
            "directory read as plain Parquet holds files the table has removed"
        )


def _table_format(storage: Storage, lake_root: str) -> str | None:
    if storage.is_dir(f"{lake_root}/_delta_log"):
        return "Delta Lake"
    if storage.is_dir(f"{lake_root}/.hoodie"):
        return "Apache Hudi"
    metadata = storage.list_files(f"{lake_root}/metadata", recursive=False)
    if any(status.path.endswith(".metadata.json") for status in metadata):
        return "Apache Iceberg"
    return None


def _check_home(lake_root: str, home: str) -> None:
    """Refuse an index home inside the lake unless a hidden directory holds it.

    Only a hidden directory on its way (a component of its path relative to the lake that
    starts with '_' or '.', without '=', and is no Parquet summary name like '_metadata')
    keeps the index files out of what Spark, Trino, DuckDB and lakeseek read as data; and
    lakeseek's listing skips the home, so data files under it would vanish from queries.
    """
    if not _is_within(home, lake_root):
        return
    parts = [] if home == lake_root else home[len(lake_root) + 1 :].split("/")
    if any(is_hidden(part, directory=True) for part in parts):
        return
    harm = "Spark, Trino and DuckDB would read the index files as data"
    if any("=" in part for part in parts):
        harm = f"lakeseek would skip the data files under {'/'.join(parts)}, and {harm}"
    raise LakeseekError(
        f"the index home {home} is inside the lake {lake_root} and not under a hidden directory: {harm}; "
        f"use a directory whose name starts with '_' or '.' (like {lake_root}/{DEFAULT_HOME}) or one outside the lake"
    )


def _is_within(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or below it."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _default_name(storage: Storage, home: str) -> str:
    names = [n for n in index_names(storage, home) if storage.is_dir(f"{home}/{n}/log")]
    if DEFAULT_NAME in names or not names:
        return DEFAULT_NAME
    if len(names) == 1:
        return names[0]
    raise LakeseekError(f"the lake has several indexes ({', '.join(names)}): choose one by name")


def open_index(
    source: str, *, index: str | None = None, name: str | None = None, lake_listing: LakeListing = "per_query"
) -> Index:
    """Open the latest committed version of an index of the lake at ``source``.

    ``name`` picks one of the lake's indexes (see :func:`locate`); ``index`` is the index
    home when it is not ``SOURCE/_lakeseek``.
    ``lake_listing="per_query"`` (the default) lists the lake on every query, so files
    added, rewritten or removed since indexing are always accounted for. ``"once"`` reuses
    the first listing for the life of the Index, as a Spark DataFrame reuses its file
    index: faster lookups, but changes made to the lake afterwards are not seen until the
    index is opened again.
    """
    location = locate(source, index, name)
    if not location.storage.is_dir(location.lake_root):
        raise LakeNotFoundError(f"lake not found: {location.lake_root} is not a directory")
    root = IndexLog(location.storage, location.index_dir).latest()
    return Index(location, root, lake_listing=lake_listing)


@dataclass(frozen=True)
class ColumnStatus:
    name: str
    type: str
    entries: int
    index_files: int
    segments: int
    bytes: int


@dataclass(frozen=True)
class IndexStatus:
    source: str
    index: str
    name: str
    state: str
    version: int
    last_operation: str
    updated_ms: int
    columns: list[ColumnStatus]
    indexed_files: int
    lake_files: int
    new_files: list[str]
    changed_files: list[str]
    removed_files: list[str]
    recorded_files: list[str]  # recorded by a quick refresh: scanned, not indexed
    tombstoned_files: int  # removed or rewritten files whose entries lookups ignore until an optimize
    index_bytes: int
    running_operations: list[str]
    problems: list[str]  # damaged or foreign files of the index, each with its repair

    @property
    def is_fresh(self) -> bool:
        return not (self.new_files or self.changed_files or self.removed_files or self.recorded_files)


class Index:
    """One committed version of a lake's index."""

    def __init__(self, location: Location, root: Root, *, lake_listing: LakeListing = "per_query") -> None:
        if lake_listing not in ("per_query", "once"):
            raise ValueError(f"lake_listing must be 'per_query' or 'once', not {lake_listing!r}")
        self.lake_listing = lake_listing
        self.location = location
        self.storage = location.storage
        self.lake_root = location.lake_root
        self.index_dir = location.index_dir
        self.root = root
        self.reader = IndexReader(self.storage, self.index_dir, root)
        self._state: LakeState | None = None  # the latest comparison, reused while the lake is unchanged
        self._schema_now: tuple[LakeState, pa.Schema] | None = None  # the schema of that state
        self._file_schemas: dict[tuple[str, tuple], pa.Schema] = {}  # by (path, stamp)
        self._partition_types: dict[str, pa.DataType] | None = None
        self.last_plan: Plan | None = None  # the plan of the latest query, for callers that report staleness
        self._said: set[str] = set()  # warnings already given by this handle

    def __repr__(self) -> str:
        return f"Index(source={self.source!r}, name={self.name!r}, columns={self.columns}, version={self.version})"

    @property
    def name(self) -> str:
        return self.location.name

    @property
    def source(self) -> str:
        return self._location(self.lake_root)

    @property
    def columns(self) -> list[str]:
        return list(self.root.columns)

    @property
    def version(self) -> int:
        return self.root.version

    @property
    def schema(self) -> pa.Schema:
        """The lake's Arrow schema as lakeseek reads it now (see :meth:`schema_of`)."""
        return self.schema_of(self.lake_state())

    def schema_of(self, state: LakeState) -> pa.Schema:
        """The lake's schema in ``state`` (README, "The lake's schema"): the index's,
        with the files it does not cover merged in (wider types, new columns) and the
        partition columns typed as Spark infers them from the listing. A file whose column
        has no exact common type with the lake's is an error naming it."""
        if self._schema_now is not None and self._schema_now[0] is state:
            return self._schema_now[1]
        root = self.root
        schema = root.schema
        partitions = root.partition_columns
        if partitions:
            types = current_partition_types(schema, partitions, self._indexed_partition_types(), state.files)
            schema = with_partition_types(schema, types)
        # A root that did not check its files' schemas (format 3) vouches for none of them.
        merged = sorted(state.unindexed) if root.schema_checked else sorted(state.files)
        schema = merge_schemas(schema, self._read_file_schemas(merged, state), partitions)
        self._schema_now = (state, schema)
        return schema

    def _indexed_partition_types(self) -> dict[str, pa.DataType]:
        """The partition types Spark infers over the files the index was built on (see
        :func:`lakeseek.evolution.current_partition_types`)."""
        if self._partition_types is None:
            try:
                paths = self.reader.lineage().paths + self.reader.pending().paths
            except IndexCorruptError:
                paths = []
            self._partition_types = infer_partition_types(paths, self.root.partition_columns)
        return self._partition_types

    def _read_file_schemas(self, paths: list[str], state: LakeState) -> list[tuple[str, pa.Schema]]:
        """``(path, schema)`` of the distinct schemas among ``paths`` (footers read once per stamp)."""
        missing = [path for path in paths if (path, tuple(state.files[path])) not in self._file_schemas]
        for path, schema in zip(missing, file_schemas(self.storage, self.lake_root, missing), strict=True):
            self._file_schemas[(path, tuple(state.files[path]))] = schema
        distinct: dict[pa.Schema, str] = {}
        for path in paths:
            distinct.setdefault(self._file_schemas[(path, tuple(state.files[path]))], path)
        return [(path, found) for found, path in distinct.items()]

    def spark_schema_json(self, state: LakeState | None = None) -> str:
        """The lake's schema as Spark reads it, as Spark's JSON (``StructType.json()``), for
        the lake as ``state`` lists it (default: now)."""
        root = self.root
        state = state or self.lake_state()
        return spark_schema_json(self.schema_of(state), root.partition_columns, root.schema, root.spark_schema)

    # -- queries ----------------------------------------------------------------------------
    def plan(self, where: str | Predicate, *, state: LakeState | None = None) -> Plan:
        """The files a query with this predicate (SQL text or an unbound expression tree) must
        read, in the lake as ``state`` lists it (default: now)."""
        state = state or self.lake_state()
        return self._plan(self._bind(where, state), state)

    def files(self, where: str) -> list[str]:
        """Paths of the data files that may hold rows matching ``where`` (SQL)."""
        return [self._location(f"{self.lake_root}/{path}") for path in self.plan(where).files]

    def read(self, where: str, columns: list[str] | None = None) -> pa.Table:
        """The rows matching ``where``, read with pyarrow from the candidate files only."""
        state = self.lake_state()
        predicate = self._bind(where, state)
        chosen = self._plan(predicate, state)
        return self._read(chosen.files, predicate, columns, chosen.row_groups, state)

    def scan(self, where: str, columns: list[str] | None = None) -> pa.Table:
        """The rows matching ``where``, read from every file of the lake without the index."""
        state = self.lake_state()
        predicate = self._bind(where, state)
        return self._read(list(state.files), predicate, columns, None, state)

    def spark_schema(self) -> StructType:
        """The lake's schema as Spark reads it now (partition columns last): ``schema`` in
        Spark's types, as ``spark.read.option("mergeSchema", "true").parquet(SOURCE)`` infers it."""
        from pyspark.sql.types import StructType

        return StructType.fromJson(json.loads(self.spark_schema_json(self.lake_state())))

    def explain(self, where: str, *, analyze: bool = False) -> Explanation:
        """How a query with this predicate uses the index: columns used, candidate files (and
        row groups) against the total, index reads and bytes, estimated against actual cost,
        and why the index (or part of the predicate) was not used. ``analyze`` also runs the
        read and reports rows and time."""
        started = time.perf_counter()
        with counting() as io:
            state = self.lake_state()
            predicate = self._bind(where, state)
            chosen = self._plan(predicate, state)
        sizes = {path: stamp[0] for path, stamp in state.files.items()}
        result = explanation(where, self.name, self.version, chosen, sizes, io.reads, io.bytes_read)
        if not analyze:
            return result
        rows = self._read(chosen.files, predicate, None, chosen.row_groups, state).num_rows
        return dataclasses.replace(result, rows=rows, seconds=time.perf_counter() - started)

    def locate(self, keys: Iterable[KeyValue] | pa.Array, column: str | None = None) -> pa.Table:
        """Every ``(key, file)`` pair where ``file`` holds a row whose ``column`` is ``key``.

        A batch lookup of up to millions of keys without Spark (Hudi's getRecordLocations):
        e.g. the files to rewrite to erase a list of user ids. ``column`` may be left out
        when the index has one column. With row-group precision a ``row_group`` column
        says where in the file (NULL for files the index does not cover, read whole).
        NULL keys are ignored.
        """
        state = self.lake_state()
        name = self.locate_column(column, state)
        with reading_data_files(self.storage, self.lake_root, list(state.files)):
            if self.root.state == DELETED or not self.serves(name, state):
                found = self._scan_keys(state, name, keys)
            else:
                try:
                    found = locate_keys(self.reader, state, name, keys, self._opener(state))
                except IndexCorruptError as error:
                    self._unusable(error)
                    found = self._scan_keys(state, name, keys)
        paths = pc.binary_join_element_wise(self._location(self.lake_root) + "/", found.column(FILE), "")
        return found.set_column(found.schema.get_field_index(FILE), FILE, paths)

    def locate_column(self, column: str | None, state: LakeState | None = None) -> str:
        """The indexed column ``locate`` looks keys up in: ``column``, or the index's only one."""
        if column is None:
            if len(self.root.columns) != 1:
                raise LakeseekError(f"the index has several columns ({', '.join(self.columns)}): choose one")
            return self.columns[0]
        name = resolve_column(column, self.schema_of(state or self.lake_state())).name
        if name not in self.root.columns:
            raise LakeseekError(f"column '{name}' is not indexed (indexed: {', '.join(self.columns)})")
        return name

    def _scan_keys(self, state: LakeState, column: str, keys: Iterable[KeyValue] | pa.Array) -> pa.Table:
        column_type = value_type(self.schema_of(state).field(column).type)
        if self.serves(column, state):
            key_type = self.root.columns[column].key_type
        else:  # the column's type changed since indexing (see serves): keys of its type now
            try:
                key_type = key_type_for(column_type, column)
            except LakeseekError:
                key_type = column_type
        wanted = exact_keys(keys, column_type, key_type)
        return scan_keys(list(state.files), column, wanted, self._opener(state), self.reader.row_groups)

    def serves(self, column: str, state: LakeState) -> bool:
        """Whether the index of ``column`` answers for the lake in ``state``: not when files
        it does not cover gave the column another type (a wider integer, a partition value of
        another type) since it was indexed, until a refresh indexes them."""
        recorded = self.root.schema
        if column not in recorded.names:
            return False
        now = self.schema_of(state)
        return value_type(now.field(column).type).equals(value_type(recorded.field(column).type))

    def _opener(self, state: LakeState):
        schema = self.schema_of(state)
        partitions = self.root.partition_columns
        return lambda paths: open_files(self.storage, self.lake_root, paths, schema, partitions)

    # -- state ------------------------------------------------------------------------------
    def lake_state(self) -> LakeState:
        """The lake now compared with what the index covers."""
        if self.lake_listing == "once" and self._state is not None:
            return self._state
        files = self._list_lake()
        if self._state is None or self._state.files != files:
            try:
                self._state = compare(self.reader.lineage(), files, self.reader.pending())
            except IndexCorruptError as error:
                # Never a wrong answer: a damaged lineage vouches for no file, so every file is read.
                self._unusable(error)
                self._state = compare(Lineage.concat([]), files)
        return self._state

    def status(self) -> IndexStatus:
        state = self.lake_state()
        leases = Leases(self.storage, self.index_dir).all()
        return IndexStatus(
            source=self.source,
            index=self._location(self.index_dir),
            name=self.name,
            state=self.root.state,
            version=self.version,
            last_operation=self.root.operation,
            updated_ms=self.root.timestamp_ms,
            columns=[
                ColumnStatus(c.name, str(c.key_type), c.entries, len(c.files), len(c.segments), c.size)
                for c in self.root.columns.values()
            ],
            indexed_files=len(self.reader.lineage()),
            lake_files=len(state.files),
            new_files=state.new,
            changed_files=state.changed,
            removed_files=state.removed,
            recorded_files=state.recorded,
            tombstoned_files=len(self.root.lineage.removed),
            index_bytes=self.root.index_bytes,
            problems=problems(self.storage, self.index_dir, self.root),
            running_operations=[
                f"{lease.operation} ({lease.operation_id[:8]})" for lease in leases if lease.is_alive()
            ],
        )

    # -- internals --------------------------------------------------------------------------
    def _bind(self, where: str | Predicate, state: LakeState | None = None) -> Predicate:
        schema = self.schema_of(state or self.lake_state())
        return bind(parse_where(where) if isinstance(where, str) else where, schema)

    def _read(
        self,
        files: list[str],
        predicate: Predicate,
        columns: list[str] | None,
        row_groups: dict | None = None,
        state: LakeState | None = None,
    ) -> pa.Table:
        schema = self.schema_of(state or self._state or self.lake_state())
        selected = None if columns is None else [resolve_column(c, schema).name for c in columns]
        if selected is not None and len(set(selected)) < len(selected):
            twice = next(name for name in selected if selected.count(name) > 1)
            raise LakeseekError(f"column '{twice}' is asked for twice")
        stamps = self._state.files if self._state else {}
        self.storage.count_data_files(len(files), sum(stamps[f][0] for f in files if f in stamps))
        with reading_data_files(self.storage, self.lake_root, files):  # a damaged or vanished file, named
            dataset = open_files(self.storage, self.lake_root, files, schema, self.root.partition_columns, row_groups)
            return read_matching(dataset, selected, predicate, schema)

    def _plan(self, predicate: Predicate, state: LakeState | None = None) -> Plan:
        if self.root.state == DELETED:
            chosen = full_scan(
                self._list_lake(), f"index '{self.name}' is deleted (restore it to use it): every file is read"
            )
        else:
            try:
                state = state or self.lake_state()
                served = {column for column in self.root.columns if self.serves(column, state)}
                chosen = plan(predicate, self.reader, state, served)
            except IndexCorruptError as error:
                # Never a wrong answer, and never none: a damaged index costs a full scan.
                chosen = full_scan(self._list_lake(), self._unusable(error))
        self.last_plan = chosen
        if chosen.unindexed_files or chosen.removed_files:
            log.info(
                "index is stale: %d new or changed files are read without it, %d removed files skipped",
                chosen.unindexed_files,
                chosen.removed_files,
            )
        return chosen

    def _unusable(self, error: IndexCorruptError) -> str:
        """Why this handle's index cannot serve (every file is then read), said once per handle
        and cause: a version vacuumed since the handle opened it, which reopening cures, or
        damage, which a full refresh repairs."""
        if self.version not in IndexLog(self.storage, self.index_dir).versions():
            reason = (
                f"index version {self.version} of '{self.name}' was vacuumed since this handle opened it: "
                "every file is read; open the index again for its latest version"
            )
        else:
            reason = f"the index is damaged ({error}): every file is read; run a full refresh to repair it"
        if reason not in self._said:
            self._said.add(reason)
            log.warning("%s", reason)
        return reason

    def _list_lake(self) -> dict:
        return list_data_files(self.storage, self.lake_root, self.location.home)

    def _location(self, path: str) -> str:
        return path if self.storage.is_local else self.storage.uri(path)
