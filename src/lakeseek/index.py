"""The public handle on an index: ``open_index`` and :class:`Index`.

Lookups and reads need no Spark: the index gives candidate files, pyarrow reads them.
Every query takes the lake's snapshot first (a directory: its listing), so files added or
rewritten since indexing are always read and removed ones skipped: the answer is a full
scan's, however stale the index.

An :class:`Index` is one committed version of an index and does not change: opening the
index again gives its latest version. What handles learn by reading (footers, the lineage,
data files' schemas) is kept in a cache shared by every handle on the same index in the
process (:mod:`lakeseek.caches`), safe to use from several threads.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from lakeseek.caches import Once, cache_for
from lakeseek.commits.log import IndexLog, LogEntry
from lakeseek.engine.runner import runner_for
from lakeseek.exceptions import (
    IndexCorruptError,
    IndexLogUnreadableError,
    InvalidArgumentError,
    LakeseekError,
    PredicateParseError,
)
from lakeseek.expressions import Predicate
from lakeseek.expressions.arrow import read_matching
from lakeseek.expressions.binding import bind, resolve_column, value_type
from lakeseek.expressions.sql import parse_where
from lakeseek.format.lineage import Lineage
from lakeseek.format.root import DELETED, UNREADABLE, LineageSet, Root
from lakeseek.format.values import KeyValue
from lakeseek.io import Stamp, counting
from lakeseek.kinds import DEFAULT_KIND, kind_named
from lakeseek.kinds.base import ROW_FILE, KindReader
from lakeseek.kinds.sorted_index.content import SortedIndex
from lakeseek.lake.files import again_when_files_change, reading_data_files
from lakeseek.lake.rows import concat_rows
from lakeseek.lake.schemas import (
    current_partition_types,
    merge_schemas,
    same_column,
    spark_schema_json,
    with_partition_types,
)
from lakeseek.lake.state import Changes, LakeState, compare
from lakeseek.lake.statistics import file_statistics
from lakeseek.layout import with_sample
from lakeseek.locate import FILE, exact_keys, locate_keys, scan_keys
from lakeseek.location import DEFAULT_NAME, LakeLike, Location, as_indexed, index_names, locate
from lakeseek.planning import Explanation, Fallback, Plan, Planner, Prepared, explanation, full_scan
from lakeseek.planning.what_if import IndexSpec, WhatIf, specs_of, stored_columns, what_if
from lakeseek.sources.base import LakeSource, Snapshot
from lakeseek.status import IndexStatus, index_status

# How often a handle takes the lake's snapshot: every query, once, or when the last one is older
# than this many seconds.
LakeListing = Literal["per_query", "once"] | float
log = logging.getLogger("lakeseek")


def open_index(
    source: LakeLike,
    *,
    index: str | None = None,
    name: str | None = None,
    lake_listing: LakeListing = "per_query",
    storage_options: Mapping[str, object] | None = None,
) -> Index:
    """Open the latest committed version of an index of the lake at ``source``.

    ``name`` picks one of the lake's indexes (see :func:`lakeseek.location.locate`); ``index``
    is the index home when it is not ``SOURCE/_lakeseek``.
    ``lake_listing`` is the freshness policy. ``"per_query"`` (the default) takes the lake's
    snapshot on every query, so files added, rewritten or removed since indexing are always
    accounted for: a table format's version is checked (one small listing), a local directory
    is listed again only when its watch saw a change (:mod:`lakeseek.io.watch`), any other
    directory is listed. ``"once"`` reuses the first snapshot for the life of the Index, as a
    Spark DataFrame reuses its file index; a number of seconds reuses a snapshot for that long.
    Both are faster on object stores, and miss the changes made since the snapshot they use
    (:meth:`Index.reload` takes a new one). ``storage_options`` configure the lake's object
    store (see :mod:`lakeseek.io`; by default, the cloud's standard environment variables).
    """
    location = locate(source, index, name, storage_options=storage_options)
    location.require_lake()
    return latest_index(location, lake_listing)


def latest_index(location: Location, lake_listing: LakeListing = "per_query") -> Index:
    """The latest version of the index at ``location``; when no entry of its log reads whole,
    :meth:`Index.unreadable`, which reads every file, instead of an error."""
    try:
        root = IndexLog(location.storage, location.index_dir).latest()
    except IndexLogUnreadableError as error:
        return Index.unreadable(location, error, lake_listing)
    return Index(location, root, lake_listing=lake_listing)


def list_indexes(
    source: LakeLike, *, index: str | None = None, storage_options: Mapping[str, object] | None = None
) -> list[Index]:
    """Every committed index of the lake (deleted ones included). An index none of whose log
    entries reads whole is listed as its stand-in (:meth:`Index.unreadable`, state
    ``unreadable``), whose ``status()`` raises the error that says how to repair it."""
    first = locate(source, index, DEFAULT_NAME, existing=False, storage_options=storage_options)
    first.require_lake()
    found = []
    for name in index_names(first.storage, first.home):
        location = dataclasses.replace(first, name=name)
        log_ = IndexLog(location.storage, location.index_dir)
        if log_.versions():
            try:
                found.append(Index(location, log_.latest()))
            except IndexLogUnreadableError as error:
                found.append(Index.unreadable(location, error))
    return found


class Index:
    """One committed version of a lake's index."""

    def __init__(self, location: Location, root: Root, *, lake_listing: LakeListing = "per_query") -> None:
        seconds = isinstance(lake_listing, int | float) and not isinstance(lake_listing, bool)
        if lake_listing not in ("per_query", "once") and not (seconds and 0 < lake_listing < float("inf")):
            raise InvalidArgumentError(
                f"lake_listing must be 'per_query', 'once' or a number of seconds, not {lake_listing!r}"
            )
        self.lake_listing = lake_listing
        self.location = as_indexed(location, root.source_format)
        self.root = root
        self._shared = cache_for(location)
        self._version = self._shared.version(location, root)
        self._pinned = Once()  # the lake's state under lake_listing="once"
        self._taken: tuple[float, LakeState] | None = None  # under a time to live: when, and the state
        self._unreadable: IndexLogUnreadableError | None = None  # why a stand-in (see unreadable) stands in

    @classmethod
    def unreadable(
        cls, location: Location, error: IndexLogUnreadableError, lake_listing: LakeListing = "per_query"
    ) -> Index:
        """A stand-in for the index at ``location``, none of whose log entries reads whole
        (``error`` says why): it covers no file and looks nothing up, so every query reads
        every file of the lake and says why, as a damaged index file makes it do. Its schema
        is the lake's as ``create`` finds it (a lake with no data file keeps the error), its
        version the newest entry's. ``status`` raises the error; removing the index directory
        and creating the index again repairs it."""
        snapshot = location.source.snapshot(exclude=location.home)
        if not snapshot.files:
            raise error
        lake = location.source.discover(snapshot.files, lambda: runner_for("local", None, None))
        default = kind_named(DEFAULT_KIND)
        root = Root(
            version=max(IndexLog(location.storage, location.index_dir).versions(), default=-1),
            operation="none",
            timestamp_ms=0,
            state=UNREADABLE,
            data_version=-1,
            schema=lake.schema,
            spark_schema=lake.spark_schema,
            partition_columns=lake.partition_columns,
            lineage=LineageSet((), frozenset(), 0),
            kind=default.name,
            content=SortedIndex(default.configure({}), {}),
            source_format=location.source.name,
        )
        stand_in = cls(location, root, lake_listing=lake_listing)
        stand_in._unreadable = error
        return stand_in

    def __repr__(self) -> str:
        return f"Index(source={self.source!r}, name={self.name!r}, columns={self.columns}, version={self.version})"

    @property
    def source(self) -> str:
        return self.location.source.shown_root

    @property
    def lake(self):
        """The lake's source (:class:`lakeseek.sources.LakeSource`)."""
        return self.location.source

    @property
    def storage(self):
        return self.location.storage

    @property
    def lake_root(self) -> str:
        return self.location.lake_root

    @property
    def index_dir(self) -> str:
        return self.location.index_dir

    @property
    def name(self) -> str:
        return self.location.name

    @property
    def columns(self) -> list[str]:
        return list(self.root.columns)

    @property
    def version(self) -> int:
        return self.root.version

    @property
    def kind_reader(self) -> KindReader:
        """The reader of this version's kind (its caches are shared with other handles)."""
        return self._version.reader

    def lineage(self) -> Lineage:
        """The files this version covers (tombstoned ones left out)."""
        return self._version.lineage()

    def reload(self) -> Index:
        """A handle on the latest version of this index and on the lake now: this one when
        nothing was committed since and the lake is listed per query; a new one otherwise (a
        handle whose listing is kept, ``"once"`` or for a time, lists the lake again)."""
        try:
            latest = IndexLog(self.storage, self.index_dir).latest()
        except IndexLogUnreadableError as error:
            if self._unreadable is not None and self.lake_listing == "per_query":
                return self
            return Index.unreadable(self.location, error, self.lake_listing)
        # The commit time tells an index deleted and created again (its versions restart) apart.
        same = latest.version == self.version and latest.timestamp_ms == self.root.timestamp_ms
        if same and self.lake_listing == "per_query":
            return self
        return Index(self.location, latest, lake_listing=self.lake_listing)

    def history(self, since: int = -1) -> list[LogEntry]:
        """What each committed version after ``since`` changed, oldest first."""
        if not isinstance(since, int) or isinstance(since, bool):
            raise InvalidArgumentError(f"since must be a version number, not {since!r}")
        return IndexLog(self.storage, self.index_dir).history(since)

    # -- the lake's schema ------------------------------------------------------------------
    @property
    @again_when_files_change
    def schema(self) -> pa.Schema:
        """The lake's Arrow schema as lakeseek reads it now (see :meth:`schema_of`)."""
        return self.schema_of(self.lake_state())

    def schema_of(self, state: LakeState) -> pa.Schema:
        """The lake's schema in ``state`` (README, "The lake's schema"): the index's (a
        table format's own, where the table changed since), with the files it does not
        cover merged in (wider types; new columns, but for a table's files), the partition
        columns typed as the lake source gives them now. A file whose column has no exact
        common type with the lake's is an error naming it."""
        remembered = self._version.schema_of
        if remembered is not None and remembered[0] is state:
            return remembered[1]
        root = self.root
        schema = root.schema if state.declared is None else state.declared
        partitions = root.partition_columns
        if partitions:
            now = self.lake.partition_types(state.files, partitions)
            types = current_partition_types(schema, partitions, self._version.partition_types(), now)
            schema = with_partition_types(schema, types)
        found = self._shared.file_schemas(self.lake, sorted(state.unindexed), state)
        if state.declared is not None:  # older files may hold columns the table dropped
            found = [(path, pa.schema([f for f in file if f.name in schema.names])) for path, file in found]
        schema = merge_schemas(schema, found, partitions, self.lake.data_format.common_type)
        self._version.schema_of = (state, schema)
        return schema

    def spark_schema_json(self, state: LakeState | None = None) -> str:
        """The lake's schema as Spark reads it, as Spark's JSON (``StructType.json()``), for
        the lake as ``state`` lists it (default: now)."""
        root = self.root
        state = state or self.lake_state()
        return spark_schema_json(self.schema_of(state), root.partition_columns, root.schema, root.spark_schema)

    # -- queries ----------------------------------------------------------------------------
    @again_when_files_change
    def plan(self, where: str | Predicate, *, state: LakeState | None = None) -> Plan:
        """The files a query with this predicate (SQL text or an unbound expression tree) must
        read, in the lake as ``state`` lists it (default: now)."""
        state = state or self.lake_state()
        return self._plan(self.bind(where, state), state)

    @again_when_files_change
    def files(self, where: str, *, sample: float | None = None) -> list[str]:
        """Paths of the data files that may hold rows matching ``where`` (SQL), of a ``sample``
        when given (see :meth:`read`)."""
        state = self.lake_state()
        return [self.lake.shown(path) for path in self._plan(self._sampled(where, sample, state), state).files]

    def read(self, where: str, columns: list[str] | str | None = None, *, sample: float | None = None) -> pa.Table:
        """The rows matching ``where``, read with pyarrow from the candidate files only. On a
        lake in OTree layout (:mod:`lakeseek.layout`), ``sample`` (a fraction in (0, 1]) keeps
        the rows of weight below it: deterministic, and a smaller sample inside a larger one."""
        return self.query(where, columns, sample=sample)[0]

    @again_when_files_change
    def query(
        self, where: str, columns: list[str] | str | None = None, *, sample: float | None = None
    ) -> tuple[pa.Table, Plan]:
        """:meth:`read`, with the plan it read by (for callers that report staleness or fallbacks)."""
        state = self.lake_state()
        predicate = self._sampled(where, sample, state)
        covered = self.covered_read(predicate, columns, state)
        if covered is not None:
            return covered
        chosen = self._plan(predicate, state)
        return self.read_files(chosen.files, predicate, columns, chosen.row_groups, state), chosen

    def _sampled(self, where: str | Predicate, sample: float | None, state: LakeState) -> Predicate:
        return with_sample(self.bind(where, state), sample, self.schema_of(state), self.lake.shown_root)

    def covered_read(
        self, predicate: Predicate, columns: list[str] | None, state: LakeState
    ) -> tuple[pa.Table, Plan] | None:
        """The read answered from the index's own rows (a covering kind carrying every column
        the query needs, for a condition it looks up), plus the files it does not cover, read
        from the lake; None when it cannot be."""
        if not self.root.is_active or not self.kind_reader.carries_rows:
            return None
        schema = self.schema_of(state)
        selected = schema.names if columns is None else selected_columns(columns, schema)
        needed = list(dict.fromkeys([*selected, *sorted(predicate.columns())]))
        try:
            if not all(self.serves(column, state) for column in needed):
                return None  # a column typed otherwise since indexing (or not recorded at all)
            lookup = self._planner(state).covering(predicate)
            rows = None if lookup is None else lookup.rows(needed)
        except IndexCorruptError as error:
            self._unusable(error)  # said once; the plan then reads the lake
            return None
        if rows is None:
            return None
        live = pa.array(list(state.indexed), pa.int32())
        rows = rows.filter(pc.is_in(rows.column(ROW_FILE), value_set=live)).drop_columns([ROW_FILE])
        rows = rows.cast(pa.schema([schema.field(name) for name in needed]))
        found = read_matching(ds.dataset(rows), None, predicate, schema).select(selected)
        unindexed = sorted(state.unindexed)
        if unindexed:
            extra = self.read_files(unindexed, predicate, selected, None, state)
            # (A table of no column, a count, keeps its rows only uncast.)
            found = concat_rows([found, extra.cast(found.schema) if found.num_columns else extra])
        plan = Plan(
            files=unindexed,
            total_files=len(state.files),
            index_used=True,
            indexed_columns_used=(lookup.column,),
            unindexed_files=len(state.unindexed),
            removed_files=len(state.removed),
            from_index=True,
        )
        return found, plan

    @again_when_files_change
    def scan(self, where: str, columns: list[str] | str | None = None) -> pa.Table:
        """The rows matching ``where``, read from every file of the lake without the index."""
        state = self.lake_state()
        predicate = self.bind(where, state)
        return self.read_files(list(state.files), predicate, columns, None, state)

    @again_when_files_change
    def explain(self, where: str, *, analyze: bool = False, what_if: Sequence[str | IndexSpec] = ()) -> Explanation:
        """How a query with this predicate uses the index: columns used, candidate files (and
        row groups) against the total, index reads and bytes, estimated against actual cost,
        and why the index (or part of the predicate) was not used. ``analyze`` also runs the
        read and reports rows and time. ``what_if``: indexes not built, as ``KIND:COLUMNS``
        (see :mod:`lakeseek.planning.what_if`), each with the plan it would give."""
        started = time.perf_counter()
        specs = specs_of(what_if)
        with counting() as io:
            state = self.lake_state()
            predicate = self.bind(where, state)
            chosen = self._plan(predicate, state)
        sizes = {path: state.files[path].size for path in chosen.files}
        result = explanation(where, self.name, self.version, chosen, sizes, io.reads, io.bytes_read)
        covered = self.covered_note(predicate, state)
        if covered:
            result = dataclasses.replace(result, notes=(*result.notes, covered))
        if specs:
            result = dataclasses.replace(result, what_if=self.imagine(specs, predicate, state))
        if not analyze:
            return result
        rows = self.read_files(chosen.files, predicate, None, chosen.row_groups, state).num_rows
        return dataclasses.replace(result, rows=rows, seconds=time.perf_counter() - started)

    def imagine(self, specs: Sequence[IndexSpec], predicate: Predicate, state: LakeState) -> tuple[WhatIf, ...]:
        """How a bound ``predicate`` would run over the lake as ``state`` lists it with each of
        the indexes ``specs``, estimated from the data files' statistics."""
        schema = self.schema_of(state)
        partition_columns = self.root.partition_columns
        columns = stored_columns(specs, schema)
        statistics = file_statistics(self.lake, state.files, schema, columns, partition_columns)
        return tuple(what_if(specs, predicate, schema, statistics, partition_columns))

    def covered_note(self, predicate: Predicate, state: LakeState) -> str | None:
        """What explain says when the index would answer a read of this predicate from its own
        rows (a covering kind looking up one of its conditions), without reading them."""
        if not self.root.is_active or not self.kind_reader.carries_rows:
            return None
        try:
            lookup = self._planner(state).covering(predicate)
        except IndexCorruptError:
            return None
        if lookup is None:
            return None
        return (
            f"a read of columns the index carries is answered from its rows (looked up by '{lookup.column}'): "
            f"only the {len(state.unindexed):,} files it does not cover are opened"
        )

    def locate(self, keys: Iterable[KeyValue] | pa.Array, column: str | None = None) -> pa.Table:
        """Every ``(key, file)`` pair where ``file`` holds a row whose ``column`` is ``key``.

        A batch lookup of up to millions of keys without Spark (Hudi's getRecordLocations):
        e.g. the files to rewrite to erase a list of user ids. ``column`` may be left out
        when the index has one column. With row-group precision a ``row_group`` column
        says where in the file (NULL for files the index does not cover, read whole).
        NULL keys are ignored.
        """
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        # A string is iterable too: its characters are not the keys it names.
        if not isinstance(keys, pa.Array) and (isinstance(keys, str | bytes) or not isinstance(keys, Iterable)):
            raise InvalidArgumentError(f"keys are a list or an Arrow array of keys, not {type(keys).__name__}")
        # Kept: a run again (a file changed under the read, a damaged index) reads them again.
        return self._locate(keys if isinstance(keys, pa.Array) else list(keys), column)

    @again_when_files_change
    def _locate(self, keys: list[KeyValue] | pa.Array, column: str | None) -> pa.Table:
        state = self.lake_state()
        name = self.locate_column(column, state)
        column_type = value_type(self.schema_of(state).field(name).type)
        served = self.root.is_active and self.serves(name, state)
        read: dict[str, Stamp] = {}  # every data file opened, its stamp checked when the read ends
        with reading_data_files(self.lake, list(state.files), read):
            found = None
            if served:
                wanted = exact_keys(keys, pa.field(name, column_type))
                key_type = self.kind_reader.key_type(name, column_type)
                try:
                    found = locate_keys(self.kind_reader, state, name, wanted, key_type, self._opener(state, read))
                except IndexCorruptError as error:
                    self._unusable(error)
            if found is None:
                found = self._scan_keys(state, name, keys, column_type, read)
        paths = pc.binary_join_element_wise(self.lake.shown_root + "/", found.column(FILE), "")
        return found.set_column(found.schema.get_field_index(FILE), FILE, paths)

    def locate_column(self, column: str | None, state: LakeState | None = None) -> str:
        """The indexed column ``locate`` looks keys up in: ``column``, or the index's only one
        (a stand-in for an unreadable index knows none: any column, which is scanned)."""
        if column is not None and not isinstance(column, str):
            raise InvalidArgumentError(f"a column is named by a string, not {type(column).__name__}")
        if column is None:
            if len(self.root.columns) != 1:
                raise LakeseekError(f"the index has several columns ({', '.join(self.columns)}): choose one")
            return self.columns[0]
        name = resolve_column(column, self.schema_of(state or self.lake_state())).name
        if name not in self.root.columns and self._unreadable is None:
            raise InvalidArgumentError(f"column '{name}' is not indexed (indexed: {', '.join(self.columns)})")
        return name

    def _scan_keys(
        self,
        state: LakeState,
        column: str,
        keys: Iterable[KeyValue] | pa.Array,
        column_type: pa.DataType,
        opened: dict[str, Stamp],
    ) -> pa.Table:
        wanted = exact_keys(keys, pa.field(column, column_type))
        return scan_keys(list(state.files), column, wanted, self._opener(state, opened), self.kind_reader.row_groups)

    def serves(self, column: str, state: LakeState) -> bool:
        """Whether the index of ``column`` answers for the lake in ``state``: not when files
        it does not cover gave the column another type (a wider integer, a partition value of
        another type) since it was indexed, until a refresh indexes them; nor when a table
        dropped the column, nor when the column of that name is another one (a table that
        matches columns by id dropped it and added another of its name)."""
        return same_column(self.root.schema, self.schema_of(state), column)

    def _opener(self, state: LakeState, opened: dict[str, Stamp]) -> Callable[[list[str]], object]:
        """Opens data files of the lake in ``state`` as datasets, noting each in ``opened`` with its stamp."""
        schema = self.schema_of(state)
        partitions = self.root.partition_columns
        files = state.files

        def dataset(paths: list[str]) -> object:
            stamps = {path: files[path] for path in paths}
            opened.update(stamps)
            return self.lake.dataset(paths, schema, partitions, stamps=stamps)

        return dataset

    # -- state ------------------------------------------------------------------------------
    def forget_listing(self) -> None:
        """Drop the listing kept (``"once"`` or for a time): the next query lists the lake
        again, as after a read found a file of it removed or changed (docs/freshness.md)."""
        self._pinned = Once()
        self._taken = None
        self.lake.storage.forget_listing(self.lake.root)

    def lake_state(self) -> LakeState:
        """The lake now compared with what the index covers."""
        if self.lake_listing == "once":
            return self._pinned.get(self._current_state)
        if self.lake_listing != "per_query":
            taken = self._taken
            if taken is not None and time.monotonic() - taken[0] < self.lake_listing:
                return taken[1]
            now = time.monotonic()
            state = self._current_state()
            self._taken = (now, state)
            return state
        return self._current_state()

    def _current_state(self) -> LakeState:
        """A source with versions is asked its version first: at the version the index
        recorded, the lake is what the index covers (no listing); otherwise, its snapshot,
        taken once per version of the source (a version's files never change)."""
        recorded = self.root.source_version
        if recorded is not None:
            now = self.lake.version(recorded)
            taken = self._version.state_at_version
            if now == recorded:
                try:
                    return self._version.unchanged_state()
                except IndexCorruptError as error:
                    self._unusable(error)  # the snapshot then reads every file: never a wrong answer
            elif taken is not None and taken[0] == now:
                return taken[1]
        snapshot = self._snapshot()
        state = self._state_of(snapshot)
        if snapshot.version is not None:
            self._version.state_at_version = (snapshot.version, state)
        return state

    def _snapshot(self) -> Snapshot:
        return self.lake.snapshot(exclude=self.location.home)

    def _state_of(self, snapshot: Snapshot) -> LakeState:
        remembered = self._version.state
        same_files = remembered is not None and (
            remembered.files is snapshot.files or remembered.files == snapshot.files
        )
        if same_files and _same_schema(remembered.declared, snapshot.schema):
            return remembered
        try:
            state = compare(self.lineage(), snapshot.files, self._version.recorded(), self._changes(snapshot))
        except IndexCorruptError as error:
            # Never a wrong answer: a damaged lineage vouches for no file, so every file is read.
            self._unusable(error)
            state = compare(Lineage.concat([]), snapshot.files)
        state = dataclasses.replace(state, declared=snapshot.schema)
        self._version.state = state
        return state

    def _changes(self, snapshot: Snapshot) -> Changes | None:
        """What the lake source says changed since the version the index describes, if it can tell."""
        then = self.root.source_version
        if then is None or snapshot.version is None:
            return None
        if then == snapshot.version:
            return Changes(frozenset(), frozenset())
        return self.lake.changes(then, snapshot)

    @again_when_files_change
    def status(self, *, verify: bool = False) -> IndexStatus:
        """The index compared with the lake now: freshness, size, running operations, damage
        (with ``verify``, found by reading every index file whole, checksums checked)."""
        if self._unreadable is not None:
            raise self._unreadable
        return index_status(self, verify)

    # -- internals --------------------------------------------------------------------------
    def bind(self, where: str | Predicate, state: LakeState | None = None) -> Predicate:
        """``where`` (SQL text or an unbound expression tree) bound to the lake's schema in ``state``."""
        if not isinstance(where, str | Predicate):
            raise PredicateParseError(f"a predicate is SQL text, not {type(where).__name__}: {where!r}")
        schema = self.schema_of(state or self.lake_state())
        return bind(parse_where(where) if isinstance(where, str) else where, schema)

    def read_files(
        self,
        files: list[str],
        predicate: Predicate,
        columns: list[str] | None,
        row_groups: dict | None,
        state: LakeState,
    ) -> pa.Table:
        """The rows of ``files`` (with ``row_groups``, only those) that a bound ``predicate`` keeps."""
        schema = self.schema_of(state)
        selected = selected_columns(columns, schema)
        stamps = state.files
        self.storage.count_data_files(len(files), sum(stamps[f][0] for f in files if f in stamps))
        known = {path: stamps[path] for path in files if path in stamps}
        with reading_data_files(self.lake, files, known):  # a damaged, vanished or replaced file
            dataset = self.lake.dataset(files, schema, self.root.partition_columns, row_groups, stamps=known)
            return read_matching(dataset, selected, predicate, schema)

    def _plan(self, predicate: Predicate, state: LakeState) -> Plan:
        chosen = self.prepare(predicate, state).run()
        if chosen.is_stale:
            log.info(
                "index is stale: %d new or changed files are read without it, %d removed files skipped",
                chosen.unindexed_files,
                chosen.removed_files,
            )
        return chosen

    def _planner(self, state: LakeState) -> Planner:
        """A planner of the lake in ``state``, looking up only the columns the index still
        serves there (a column the lake retyped since indexing is not looked up)."""
        served = {column for column in self.root.columns if self.serves(column, state)}
        return Planner(self.kind_reader, self.schema_of(state), self.root.columns, state, served)

    def prepare(self, predicate: Predicate, state: LakeState) -> Prepared:
        """The plan of a bound ``predicate`` in the lake as ``state`` lists it, estimated from
        the index's root; running it looks the index up, then lets the lake's own layout
        (:meth:`LakeSource.prune`) drop files that cannot match. Used to weigh several indexes
        of a lake against each other (:mod:`lakeseek.indexes`) before reading any of them."""
        prepared = self._prepare(predicate, state)
        return dataclasses.replace(prepared, run=lambda: pruned(self.lake, prepared.run(), predicate))

    def _prepare(self, predicate: Predicate, state: LakeState) -> Prepared:
        if self.root.state == DELETED:
            reason = f"index '{self.name}' is deleted (restore it to use it): every file is read"
            return Prepared.of(full_scan(state.files, reason, Fallback.DELETED))
        if self._unreadable is not None:
            reason = f"{self._unreadable}; until then every file is read"
            if self._shared.first_time(reason):
                log.warning("%s", reason)
            return Prepared.of(full_scan(state.files, reason, Fallback.DAMAGED))
        try:
            self.lineage()  # a damaged lineage is a damaged index, whatever the state made of it
            prepared = self._planner(state).prepare(predicate)
        except IndexCorruptError as error:
            # Never a wrong answer, and never none: a damaged index costs a full scan.
            return Prepared.of(full_scan(state.files, *self._unusable(error)))

        def run() -> Plan:
            try:
                return prepared.run()
            except IndexCorruptError as error:
                return full_scan(state.files, *self._unusable(error))

        return dataclasses.replace(prepared, run=run)

    def _unusable(self, error: IndexCorruptError) -> tuple[str, Fallback]:
        """Why this handle's index cannot serve (every file is then read), said once per index
        and cause: a version vacuumed since the handle opened it, which reopening cures, or
        damage, which a full refresh repairs."""
        if self.version not in IndexLog(self.storage, self.index_dir).versions():
            fallback = Fallback.VACUUMED
            reason = (
                f"index version {self.version} of '{self.name}' was vacuumed since this handle opened it: "
                "every file is read; open the index again for its latest version"
            )
        else:
            fallback = Fallback.DAMAGED
            reason = f"the index is damaged ({error}): every file is read; run a full refresh to repair it"
        if self._shared.first_time(reason):
            log.warning("%s", reason)
        return reason, fallback


def selected_columns(columns: list[str] | str | None, schema: pa.Schema) -> list[str] | None:
    """The lake's names of the ``columns`` a read asks for (None: all of them; a string: that
    one, as ``create_index`` takes one); a column asked for twice, in any spelling, is an
    error (a table cannot hold it twice in every format)."""
    if columns is None:
        return None
    if isinstance(columns, str):
        columns = [columns]  # not its letters
    selected = [resolve_column(column, schema).name for column in columns]
    twice = next((name for name in selected if selected.count(name) > 1), None)
    if twice is not None:
        raise LakeseekError(f"column '{twice}' is asked for twice")
    return selected


def pruned(lake: LakeSource, plan: Plan, predicate: Predicate) -> Plan:
    """``plan`` without the files the lake's own layout says hold no matching row."""
    kept = lake.prune(plan.files, predicate)
    if len(kept) == len(plan.files):
        return plan
    note = f"the lake's layout leaves {len(kept):,} of {len(plan.files):,} candidate files"
    kept_set = set(kept)
    row_groups = {path: groups for path, groups in plan.row_groups.items() if path in kept_set}
    return dataclasses.replace(plan, files=kept, row_groups=row_groups, notes=(*plan.notes, note))


def _same_schema(one: pa.Schema | None, other: pa.Schema | None) -> bool:
    return one is other or (one is not None and other is not None and one.equals(other))
