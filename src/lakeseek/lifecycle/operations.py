"""Operations that change an index: create, refresh, optimize, delete, restore, vacuum, cancel.

Every change follows one protocol (seed 003's lifecycle, without its blocking states):

1. take a lease (``_leases/<operation id>.json``) so vacuum knows the work is live;
2. read the latest version and write the new files under the operation's id;
3. commit the next version with put-if-absent;
4. on a lost race, re-apply the change on top of the winner when it is still valid
   (an optimize after a refresh, a refresh after an optimize), else redo it on the
   new latest version; give up with a clear error after a few rounds;
5. release the lease and delete whatever the operation wrote but did not commit.

Readers only ever read committed versions, so a running operation neither blocks them
nor shows them anything half-done; files of older versions stay until ``vacuum``
removes the versions past their retention.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import pyarrow as pa

from lakeseek.commits.leases import LEASE_DIR, OPERATION_ID, Lease, Leases
from lakeseek.commits.log import LOG_DIR, IndexLog, is_entry_name
from lakeseek.engine.runner import Engine, Runner, runner_for
from lakeseek.exceptions import (
    CommitFailedError,
    IndexAlreadyExistsError,
    IndexCorruptError,
    IndexNotFoundError,
    LakeNotFoundError,
    LakeseekError,
    OperationCancelledError,
    UnsupportedColumnError,
)
from lakeseek.expressions.binding import value_type
from lakeseek.format.filters import read_filter_bytes, write_filters
from lakeseek.format.index_file import DEFAULT_CHUNK_ROWS, read_footer
from lakeseek.format.lineage import Lineage, write_lineage
from lakeseek.format.root import ACTIVE, DELETED, ColumnIndex, IndexConfig, LineagePart, LineageSet, Root, Segment
from lakeseek.index import DEFAULT_NAME, Index, Location, index_names, locate
from lakeseek.io import Storage
from lakeseek.lake import Stamp, compare, list_data_files
from lakeseek.lookup import IndexReader

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakeseek.build.job import IndexedColumn, IndexJob
    from lakeseek.engine.progress import ProgressCallback

logger = logging.getLogger("lakeseek")
# Index entries per index file (one write task each); fewer files when the lake is small.
ENTRIES_PER_INDEX_FILE = 4_000_000
# A chunk is read whole by a lookup and an index file is written by one task: bounds that
# keep both within one machine's memory.
MAX_CHUNK_ROWS = 1 << 26
MAX_ENTRIES_PER_INDEX_FILE = 1 << 40
# Up to this many files the lineage lives inside the root, so a cold lookup needs no extra read.
INLINE_LINEAGE_MAX_FILES = 20_000
MAX_COMMIT_ATTEMPTS = 10  # tries to commit one operation, re-preparations included
# A temporary file lives for the milliseconds of one atomic write; vacuum leaves younger
# ones alone, so it never deletes a lease or log entry being written.
TEMPORARY_GRACE_MS = 3600 * 1000
DEFAULT_RETENTION_HOURS = 168.0

RefreshMode = Literal["full", "incremental", "quick"]
OptimizeMode = Literal["quick", "full"]
# The latest version -> the new root, or None when the change (prepared on an earlier
# version) is no longer valid on top of the latest one and must be prepared again.
Change = Callable[[Root], Root | None]


# -- create ---------------------------------------------------------------------------------
def create_index(
    source: str,
    columns: list[str] | str,
    *,
    index: str | None = None,
    spark: SparkSession | None = None,
    name: str | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    entries_per_index_file: int = ENTRIES_PER_INDEX_FILE,
    row_groups: bool = False,
    progress: ProgressCallback | None = None,
) -> Index:
    """Index ``columns`` of the Parquet lake at ``source`` with Spark and return the index.

    The index is ``SOURCE/_lakeseek/<name>`` (name "default" unless given; ``index`` moves
    the home). When the index exists, the columns it lacks are added to it (over the files
    it covers). ``spark`` defaults to a local session. ``chunk_rows`` bounds a chunk (the
    unit a lookup reads); ``entries_per_index_file`` sets how many index files (and write
    tasks) a column gets. ``row_groups=True`` makes entries point at the data files' row
    groups, so reads skip the row groups that cannot match (for lakes of large,
    multi-row-group files). ``progress`` receives (label, done, total) task counts.
    """
    names = _column_list(columns)
    config = _checked_config(chunk_rows, entries_per_index_file, row_groups)
    location = locate(source, index, name, existing=False)
    if not location.storage.is_dir(location.lake_root):
        raise LakeNotFoundError(f"lake not found: {location.lake_root} is not a directory")
    log = IndexLog(location.storage, location.index_dir)
    if log.versions() and _unrecorded(log.latest(), names):
        # Columns only files added since the last refresh have (or a partition column that was
        # void then): the refresh indexes those files and records their schema, then the
        # columns are added like any other.
        refresh_index(source, "incremental", index=index, spark=spark, name=name, progress=progress)
    with _operation(location, "create") as op:
        if log.versions():
            root = op.transact(lambda base: _add_columns(op, base, names, runner_for("spark", spark, progress)))
        else:
            root = _create(op, names, config, spark, progress)
    return Index(location, root)


def _unrecorded(root: Root, names: list[str]) -> bool:
    """Whether some of ``names`` are not columns of the schema ``root`` records (as Spark
    resolves names: in any case), or are void (NULL-typed) in it."""
    recorded = {field.name.lower() for field in root.schema if not pa.types.is_null(field.type)}
    return root.state == ACTIVE and any(name.lower() not in recorded for name in names)


def _create(
    op: _Operation, names: list[str], config: IndexConfig, spark: SparkSession | None, progress: ProgressCallback | None
) -> Root:
    from lakeseek.build.job import IndexJob, discover_lake, indexed_columns, merged_schema
    from lakeseek.engine.session import default_session
    from lakeseek.evolution import spark_schema_json

    location = op.location
    files = _lake_files(location)
    if not files:
        raise LakeNotFoundError(f"no data files in {location.lake_root}")
    spark = spark or default_session()
    runner = runner_for("spark", spark, progress)
    lake = discover_lake(spark, location.storage, location.lake_root, next(iter(files)))
    # Spark's schema is one file's: every file's is merged in (lakeseek.evolution).
    schema = merged_schema(
        lambda: runner, location.storage, location.lake_root, lake.schema, lake.partition_columns, list(files)
    )
    columns = indexed_columns(names, schema, lake.partition_columns)
    lineage = _numbered(files, first_id=0)
    job = IndexJob(
        location.storage,
        location.lake_root,
        location.index_dir,
        op.id,
        schema,
        lake.partition_columns,
        config,
        spark.sparkContext.defaultParallelism,
    )
    segments = job.run(runner, columns, lineage, bloom=False)
    root = Root(
        version=0,
        operation="create",
        timestamp_ms=_now_ms(),
        state=ACTIVE,
        data_version=0,
        config=config,
        schema=schema,
        spark_schema=spark_schema_json(schema, lake.partition_columns, lake.schema, lake.spark_schema),
        partition_columns=lake.partition_columns,
        columns={c.name: ColumnIndex(c.name, c.key_type, (segments[c.name],)) for c in columns},
        lineage=LineageSet((op.lineage_part(lineage, 0),), frozenset(), len(lineage)),
        schema_checked=True,
    )
    try:
        op.commit(root)
    except CommitFailedError as error:
        raise IndexAlreadyExistsError(f"another writer created an index at {location.index_dir} first") from error
    return root


def _add_columns(op: _Operation, base: Root, names: list[str], runner: Runner) -> Change | None:
    from lakeseek.build.job import indexed_columns

    _require_active(base, op.location)
    wanted = indexed_columns(names, base.schema, base.partition_columns)
    new = [c for c in wanted if c.name not in base.columns]
    if not new:
        raise IndexAlreadyExistsError(
            f"index '{op.location.name}' already covers {', '.join(c.name for c in wanted)}; "
            "use refresh to bring it up to date, or another --name for a separate index"
        )
    reader = IndexReader(op.location.storage, op.location.index_dir, base)
    lineage = reader.lineage()
    state = compare(lineage, _lake_files(op.location), reader.pending())
    # Every column covers every file of the lineage that is not tombstoned: queries and
    # status trust a file whose stamp matches for every column. The new columns can only
    # index the files that are in the lake as indexed; the others (removed, or rewritten)
    # are tombstoned, so that if they come back with the same stamp (a directory moved out
    # and back keeps its files' inodes and ctimes) they count as new, are read by every
    # query, and the next refresh indexes them for every column.
    unchanged = _subset(lineage, set(state.indexed))
    tombstones = frozenset(lineage.ids) - set(state.indexed)
    segments = op.index_job(base, runner).run(runner, new, unchanged, bloom=False)

    def change(latest: Root) -> Root | None:
        if not _same_data(base, latest):
            return None
        added = {c.name: ColumnIndex(c.name, c.key_type, (segments[c.name],)) for c in new}
        columns = {**latest.columns, **added}
        if not tombstones:
            return dataclasses.replace(latest, operation="add columns", columns=columns)
        lineage_set = dataclasses.replace(latest.lineage, removed=latest.lineage.removed | tombstones)
        return _with_data(latest, "add columns", columns=columns, lineage=lineage_set)

    return change


# -- refresh --------------------------------------------------------------------------------
def refresh_index(
    source: str,
    mode: RefreshMode = "incremental",
    *,
    index: str | None = None,
    spark: SparkSession | None = None,
    name: str | None = None,
    engine: Engine = "spark",
    progress: ProgressCallback | None = None,
) -> Index:
    """Bring the index up to date with the lake.

    - ``full``: rebuild it from the lake.
    - ``incremental``: index the files added or rewritten since the last version as a
      new segment; removed files become tombstones; existing index files stay as they are.
    - ``quick``: only record the changes; queries then scan the recorded files (hybrid
      scan) and skip removed ones. No job runs.

    ``engine="local"`` runs the job's tasks in this process instead of on Spark (small
    changes: no Spark start-up).
    """
    if mode not in ("full", "incremental", "quick"):
        raise LakeseekError(f"unknown refresh mode {mode!r}: use full, incremental or quick")
    location = _existing(source, index, name)
    with _operation(location, f"refresh {mode}") as op:
        root = op.transact(lambda base: _refresh(op, base, mode, lambda: runner_for(engine, spark, progress)))
    return Index(location, root)


def _refresh(op: _Operation, base: Root, mode: str, runner: Callable[[], Runner]) -> Change | None:
    _require_active(base, op.location)
    files = _lake_files(op.location)
    if mode == "full":  # reads nothing of the old index: it repairs damaged index files too
        return _rebuild(op, base, files, runner())
    reader = IndexReader(op.location.storage, op.location.index_dir, base)
    lineage, pending = reader.lineage(), reader.pending()
    state = compare(lineage, files, pending)
    if state.is_fresh:
        return None
    indexed_ids = dict(zip(lineage.paths, lineage.ids, strict=True))
    tombstones = {indexed_ids[p] for p in state.removed + state.changed if p in indexed_ids}
    recorded_ids = dict(zip(pending.paths, pending.ids, strict=True))
    next_id = base.lineage.next_file_id
    ids = []
    for path in state.unindexed:
        if path in recorded_ids and path in state.recorded:
            ids.append(recorded_ids[path])
        else:
            ids.append(next_id)
            next_id += 1
    changed = _stamped(ids, state.unindexed, files)
    inline_budget = base.lineage.inline_files - base.lineage.pending_files
    part = op.lineage_part(changed, inline_budget) if len(changed) else None
    segments: dict[str, Segment] = {}
    checked: dict = {}  # the schema the indexed files merge to, when this refresh indexes files
    if mode == "incremental" and part is not None:
        job_runner = runner()
        # A root of an earlier format vouches for no file's schema: every file is checked.
        schema_files = state.unindexed if base.schema_checked else list(files)
        now = _schema_now(op.location, base, files, schema_files, lambda: job_runner)
        retyped = [c for c in base.columns if not _same_type(base.schema, now.schema, c)]
        if retyped:
            # Keys of the old type cannot take the new values: every file is indexed again.
            logger.info("column(s) %s changed type in new files: the index is rebuilt", ", ".join(retyped))
            return _rebuild(op, base, files, job_runner)
        segments = op.index_job(now, job_runner).run(job_runner, _columns(now), changed, bloom=True)
        checked = {"schema": now.schema, "spark_schema": now.spark_schema, "schema_checked": True}

    def change(latest: Root) -> Root | None:
        if not _same_data(base, latest):
            return None
        columns = {}
        for name, column in latest.columns.items():
            delta = segments.get(name)
            columns[name] = (
                dataclasses.replace(column, segments=(*column.segments, delta)) if delta and delta.files else column
            )
        indexed_part = () if mode == "quick" or part is None else (part,)
        lineage_set = LineageSet(
            parts=latest.lineage.parts + indexed_part,
            removed=latest.lineage.removed | tombstones,
            next_file_id=next_id,
            pending=part if mode == "quick" else None,
        )
        return _with_data(latest, f"refresh {mode}", columns=columns, lineage=lineage_set, **checked)

    return change


def _rebuild(op: _Operation, base: Root, files: dict[str, Stamp], runner: Runner) -> Change:
    from lakeseek.build.job import indexed_columns

    now = _schema_now(op.location, base, files, list(files), lambda: runner)
    indexed = []
    for name in base.columns:
        try:
            indexed += indexed_columns([name], now.schema, now.partition_columns)
        except UnsupportedColumnError as error:  # a partition column that became a DOUBLE
            logger.warning("column '%s' can no longer be indexed, the index drops it: %s", name, error)
    if not indexed:
        raise UnsupportedColumnError("no column of the index can still be indexed: delete the index")
    lineage = _numbered(files, first_id=0)
    segments = op.index_job(now, runner).run(runner, indexed, lineage, bloom=False)
    part = op.lineage_part(lineage, 0)

    def change(latest: Root) -> Root | None:
        if set(latest.columns) != set(base.columns):
            return None
        columns = {
            c.name: dataclasses.replace(latest.columns[c.name], key_type=c.key_type, segments=(segments[c.name],))
            for c in indexed
        }
        lineage_set = LineageSet((part,), frozenset(), len(lineage))
        return _with_data(
            latest,
            "refresh full",
            columns=columns,
            lineage=lineage_set,
            schema=now.schema,
            spark_schema=now.spark_schema,
            schema_checked=True,
            legacy_temporal_blooms=False,  # every index file is written anew
        )

    return change


def _schema_now(
    location: Location, base: Root, files: dict[str, Stamp], paths: list[str], runner: Callable[[], Runner]
) -> Root:
    """``base`` with the lake's schema now (lakeseek.evolution): partition types inferred from
    the listing ``files``, the schemas of the data files ``paths`` merged in."""
    from lakeseek.build.job import merged_schema
    from lakeseek.evolution import (
        current_partition_types,
        infer_partition_types,
        spark_schema_json,
        with_partition_types,
    )

    schema = base.schema
    partitions = base.partition_columns
    if partitions:
        reader = IndexReader(location.storage, location.index_dir, base)
        try:
            indexed_paths = reader.lineage().paths + reader.pending().paths
        except IndexCorruptError:  # a damaged manifest: the listing alone says what the types are
            indexed_paths = list(files)
        then = infer_partition_types(indexed_paths, partitions)
        schema = with_partition_types(schema, current_partition_types(schema, partitions, then, files))
    schema = merged_schema(runner, location.storage, location.lake_root, schema, partitions, sorted(paths))
    spark_schema = spark_schema_json(schema, partitions, base.schema, base.spark_schema)
    return dataclasses.replace(base, schema=schema, spark_schema=spark_schema, schema_checked=True)


def _same_type(old: pa.Schema, new: pa.Schema, column: str) -> bool:
    return value_type(new.field(column).type).equals(value_type(old.field(column).type))


# -- optimize -------------------------------------------------------------------------------
def optimize_index(
    source: str,
    mode: OptimizeMode = "quick",
    *,
    index: str | None = None,
    spark: SparkSession | None = None,
    name: str | None = None,
    engine: Engine | None = None,
    progress: ProgressCallback | None = None,
) -> Index:
    """Compact the index.

    - ``quick``: merge each column's delta segments into one (in this process by default).
    - ``full``: fold the delta segments into the main index with the paper's Algorithm 2
      (only index files whose key range receives entries are rewritten), drop tombstoned
      entries and compact the lineage (on Spark by default).
    """
    if mode not in ("quick", "full"):
        raise LakeseekError(f"unknown optimize mode {mode!r}: use quick or full")
    location = _existing(source, index, name)
    chosen: Engine = engine or ("local" if mode == "quick" else "spark")
    with _operation(location, f"optimize {mode}") as op:
        root = op.transact(lambda base: _optimize(op, base, mode, lambda: runner_for(chosen, spark, progress)))
    return Index(location, root)


def _optimize(op: _Operation, base: Root, mode: str, make_runner: Callable[[], Runner]) -> Change | None:
    from lakeseek.build.fold import fold_deltas, merge_deltas
    from lakeseek.build.job import index_file_prefix

    _require_active(base, op.location)
    index_uri = op.location.storage.uri(op.location.index_dir)
    removed = base.lineage.removed
    if mode == "quick":
        chosen = {n: c for n, c in base.columns.items() if len(c.segments) > 2}
        if not chosen:
            return None
        runner = make_runner()
        merged = {
            name: merge_deltas(runner, index_uri, index_file_prefix(op.id, number), column, removed, base.config)
            for number, (name, column) in enumerate(chosen.items())
        }
    else:
        lineage = base.lineage
        if all(len(c.segments) == 1 for c in base.columns.values()) and not lineage.removed and len(lineage.parts) == 1:
            return None
        chosen = dict(base.columns)
        runner = make_runner()
        merged = {
            name: fold_deltas(runner, index_uri, index_file_prefix(op.id, number), column, removed, base.config)
            for number, (name, column) in enumerate(chosen.items())
        }
        reader = IndexReader(op.location.storage, op.location.index_dir, base)
        compacted = op.lineage_part(reader.lineage(), lineage.pending_files)

    def change(latest: Root) -> Root | None:
        columns = dict(latest.columns)
        for name, column in chosen.items():
            now = latest.columns.get(name)
            if now is None or now.segments[: len(column.segments)] != column.segments:
                return None  # what this optimize read was replaced meanwhile
            added_since = now.segments[len(column.segments) :]
            kept = column.segments[:1] if mode == "quick" else ()
            replacement = (merged[name],) if merged[name].files or mode == "full" else ()
            columns[name] = dataclasses.replace(now, segments=kept + replacement + added_since)
        lineage_set = latest.lineage
        if mode == "full":
            old = base.lineage
            if latest.lineage.parts[: len(old.parts)] != old.parts or not old.removed <= latest.lineage.removed:
                return None
            lineage_set = dataclasses.replace(
                latest.lineage,
                parts=(compacted, *latest.lineage.parts[len(old.parts) :]),
                removed=latest.lineage.removed - old.removed,
            )
        return dataclasses.replace(latest, operation=f"optimize {mode}", columns=columns, lineage=lineage_set)

    return change


# -- delete, restore ------------------------------------------------------------------------
def delete_index(source: str, *, index: str | None = None, name: str | None = None) -> Index:
    """Soft-delete: queries stop using the index; ``restore`` brings it back, ``vacuum`` clears it."""
    return _set_state(source, index, name, DELETED)


def restore_index(source: str, *, index: str | None = None, name: str | None = None) -> Index:
    """Undo a ``delete``."""
    return _set_state(source, index, name, ACTIVE)


def _set_state(source: str, index: str | None, name: str | None, state: str) -> Index:
    location = _existing(source, index, name)
    verb = "delete" if state == DELETED else "restore"

    def prepare(base: Root) -> Change:
        if base.state == state:
            raise LakeseekError(f"index '{location.name}' is already {state}")
        return lambda latest: (
            None if latest.state == state else dataclasses.replace(latest, operation=verb, state=state)
        )

    with _operation(location, verb) as op:
        root = op.transact(prepare)
    return Index(location, root)


# -- vacuum, cancel -------------------------------------------------------------------------
@dataclass(frozen=True)
class VacuumResult:
    files_deleted: int
    bytes_deleted: int
    versions_deleted: int
    operations_recovered: int


def vacuum_index(
    source: str,
    *,
    index: str | None = None,
    name: str | None = None,
    retention_hours: float = DEFAULT_RETENTION_HOURS,
) -> VacuumResult:
    """Delete every index file no retained version references.

    Versions older than ``retention_hours`` (except the latest) are dropped first, so
    readers that opened a version within the retention keep working. Files written by a
    live operation (its lease) are kept; those of crashed or cancelled ones are removed.
    """
    location = _existing(source, index, name)
    storage, index_dir = location.storage, location.index_dir
    log = IndexLog(storage, index_dir)
    # Order matters: files are listed before leases, leases before the log, so a file an
    # operation wrote after our listing is not seen, and one it committed is referenced.
    listed = [s for s in storage.list_files(index_dir) if not _is_lease(_relative(s.path, index_dir))]
    leases = Leases(storage, index_dir).all()
    live = {lease.operation_id for lease in leases if lease.is_alive()}
    versions = log.versions()
    if not versions:
        raise IndexNotFoundError(f"no lakeseek index at {index_dir}")
    roots = log.roots()  # damaged entries reference nothing anyone can read
    if not roots:
        log.latest()  # says that every entry is damaged, and what to do
    readable = sorted(roots)
    cutoff_ms = _now_ms() - retention_hours * 3600 * 1000
    retained = [readable[-1]]
    for version in reversed(readable[:-1]):
        if roots[version].timestamp_ms < cutoff_ms:
            break
        retained.append(version)
    referenced = set().union(*(roots[v].referenced_paths() for v in retained))
    kept_entries = {_relative(log.entry_path(v), index_dir) for v in versions if v >= min(retained)}
    deleted = deleted_bytes = 0
    for status in listed:
        relative = _relative(status.path, index_dir)
        if relative in referenced or relative in kept_entries or _owner(relative) in live:
            continue
        if _is_temporary(relative) and status.mtime_ns > (_now_ms() - TEMPORARY_GRACE_MS) * 1_000_000:
            continue  # an atomic write under way: the lease it will become is not there yet
        if _owner(relative) is None and not _is_log_entry(relative):
            continue  # not a name lakeseek writes: left alone (status reports strays)
        storage.delete_file(status.path)
        deleted += 1
        deleted_bytes += status.size
    recovered = 0
    for lease in leases:
        if lease.operation_id not in live:
            Leases(storage, index_dir).release(lease.operation_id)
            recovered += 1
    listed_owners = {_owner(_relative(s.path, index_dir)) for s in listed}
    _prune_empty_dirs(storage, index_dir, lambda owner: owner in listed_owners and owner not in live)
    return VacuumResult(deleted, deleted_bytes, len([v for v in versions if v < min(retained)]), recovered)


def cancel_operations(source: str, *, index: str | None = None, name: str | None = None) -> list[Lease]:
    """Cancel every running or crashed operation on the index and delete what it wrote.

    A cancelled operation that is still running finds its lease gone and does not commit.
    """
    location = _existing(source, index, name)
    leases = Leases(location.storage, location.index_dir)
    cancelled = leases.all()
    for lease in cancelled:
        _discard(location, lease.operation_id)
        leases.release(lease.operation_id)
    return cancelled


def list_indexes(source: str, *, index: str | None = None) -> list[Index]:
    """Every committed index of the lake (deleted ones included)."""
    first = locate(source, index, DEFAULT_NAME, existing=False)
    if not first.storage.is_dir(first.lake_root):
        raise LakeNotFoundError(f"lake not found: {first.lake_root} is not a directory")
    found = []
    for name in index_names(first.storage, first.home):
        location = dataclasses.replace(first, name=name)
        log = IndexLog(location.storage, location.index_dir)
        if log.versions():
            found.append(Index(location, log.latest()))
    return found


# -- the protocol ---------------------------------------------------------------------------
class _Operation:
    """One running operation: its id, lease, and the commit loop."""

    def __init__(self, location: Location, kind: str) -> None:
        self.location = location
        self.kind = kind
        self.id = uuid.uuid4().hex
        self.log = IndexLog(location.storage, location.index_dir)
        self.leases = Leases(location.storage, location.index_dir)
        self.lease: Lease | None = None
        self.committed: Root | None = None

    def transact(self, prepare: Callable[[Root], Change | None]) -> Root:
        """Prepare a change on the latest version and commit it. When another writer commits
        first, the change is applied again on top of its version, or, when it no longer
        applies there, prepared again; at most ``MAX_COMMIT_ATTEMPTS`` tries in all."""
        latest = self.log.latest()
        change: Change | None = None
        for attempt in range(1, MAX_COMMIT_ATTEMPTS + 1):
            root = None
            if change is not None:
                root = change(latest)
            if root is None:  # first try, or the change no longer applies: prepare it on the latest version
                change = prepare(latest)
                if change is None:
                    return latest  # nothing to do
                root = change(latest)
                if root is None:
                    raise LakeseekError(f"{self.kind} prepared a change that does not apply to the version it read")
            root = dataclasses.replace(root, version=self.log.next_version(latest), timestamp_ms=_now_ms())
            self.check_lease()
            root = self.with_delta_filters(root, latest)
            if root.data_version == _THIS_VERSION:
                root = dataclasses.replace(root, data_version=root.version)
            try:
                self.commit(root)
                return root
            except CommitFailedError:
                latest = self.log.latest()
                logger.info(
                    "%s lost the race for version %d to %s (try %d)", self.kind, root.version, latest.operation, attempt
                )
        raise CommitFailedError(
            f"gave up on {self.kind} of index '{self.location.name}' after {MAX_COMMIT_ATTEMPTS} tries: "
            "other writers keep changing it; try again"
        )

    def check_lease(self) -> None:
        if self.lease is not None and not self.leases.holds(self.lease):
            raise OperationCancelledError(f"{self.kind} of index '{self.location.name}' was cancelled")

    def commit(self, root: Root) -> None:
        self.check_lease()
        self.log.commit(root, self.id)
        self.committed = root

    def with_delta_filters(self, root: Root, latest: Root) -> Root:
        """``root`` with a delta filter file covering exactly its delta index files."""
        deltas = root.delta_files()
        if not deltas:
            return dataclasses.replace(root, delta_filters=None)
        storage, index_dir = self.location.storage, self.location.index_dir
        known = {}
        if latest.delta_filters is not None:
            if set(deltas) == set(latest.delta_files()):
                return dataclasses.replace(root, delta_filters=latest.delta_filters)
            known = read_filter_bytes(storage, f"{index_dir}/{latest.delta_filters.path}")
        blooms = {}
        for path, (column, info) in deltas.items():
            if path in known:
                blooms[path] = known[path]
                continue
            footer = read_footer(storage, f"{index_dir}/{path}", info, column.key_type)
            if footer.bloom is not None:
                blooms[path] = footer.bloom.to_bytes()
        return dataclasses.replace(root, delta_filters=write_filters(storage, index_dir, self.id, blooms))

    def lineage_part(self, lineage: Lineage, inline_files: int) -> LineagePart:
        """A lineage part: inline while the root's inline lineage stays small, else a manifest."""
        lake_bytes = sum(lineage.sizes)
        if inline_files + len(lineage) <= INLINE_LINEAGE_MAX_FILES:
            return LineagePart(len(lineage), lake_bytes, 0, inline=lineage)
        path, size = write_lineage(self.location.storage, self.location.index_dir, self.id, lineage)
        return LineagePart(len(lineage), lake_bytes, size, path=path)

    def index_job(self, base: Root, runner: Runner) -> IndexJob:
        from lakeseek.build.job import IndexJob
        from lakeseek.engine.runner import SparkRunner

        parallelism = runner.spark.sparkContext.defaultParallelism if isinstance(runner, SparkRunner) else 1
        location = self.location
        return IndexJob(
            location.storage,
            location.lake_root,
            location.index_dir,
            self.id,
            base.schema,
            base.partition_columns,
            base.config,
            parallelism,
        )


@contextmanager
def _operation(location: Location, kind: str) -> Iterator[_Operation]:
    op = _Operation(location, kind)
    _recover(location)
    op.lease = op.leases.acquire(op.id, kind)
    try:
        yield op
    finally:
        # Only this operation's commit can reference its files: no need to read the log.
        _discard(location, op.id, referenced=op.committed.referenced_paths() if op.committed else set())
        op.leases.release(op.id)


def _recover(location: Location) -> None:
    """Clear the leftovers of operations that died (their lease expired or their process is gone)."""
    leases = Leases(location.storage, location.index_dir)
    for lease in leases.all():
        if not lease.is_alive():
            _discard(location, lease.operation_id)
            leases.release(lease.operation_id)


def _discard(location: Location, operation_id: str, referenced: set[str] | None = None) -> None:
    """Delete the files an operation wrote that no committed version references
    (``referenced``, or else every version in the log)."""
    storage, index_dir = location.storage, location.index_dir
    mine = [s for s in storage.list_files(index_dir) if _owner(_relative(s.path, index_dir)) == operation_id]
    mine = [s for s in mine if not _is_lease(_relative(s.path, index_dir))]
    if not mine:
        return
    if referenced is None:
        referenced = set().union(*(root.referenced_paths() for root in IndexLog(storage, index_dir).roots().values()))
    for status in mine:
        if _relative(status.path, index_dir) not in referenced:
            storage.delete_file(status.path)
    _prune_empty_dirs(storage, index_dir, lambda owner: owner == operation_id)


def _owner(relative: str) -> str | None:
    """The operation that wrote a file of the index directory, from its name; None for a
    name lakeseek's operations do not write."""
    owner = _named_owner(relative)
    return owner if owner is not None and OPERATION_ID.fullmatch(owner) else None


def _named_owner(relative: str) -> str | None:
    parts = relative.split("/")
    if len(parts) >= 3 and parts[0] in ("data", "_tmp"):
        return parts[1]
    if len(parts) == 2 and parts[0] in ("lineage", "filters"):
        return parts[1].split("-", 1)[0]
    if len(parts) == 2 and parts[0] in (LOG_DIR, LEASE_DIR) and parts[1].startswith(".tmp-"):
        return parts[1].split("-")[1]
    if len(parts) == 2 and parts[0] == LEASE_DIR and parts[1].endswith(".json"):
        return parts[1].removesuffix(".json")
    return None


def _is_temporary(relative: str) -> bool:
    return relative.rsplit("/", 1)[-1].startswith(".tmp-")


def _is_log_entry(relative: str) -> bool:
    directory, _, name = relative.rpartition("/")
    return directory == LOG_DIR and is_entry_name(name)


def _is_lease(relative: str) -> bool:
    return relative.startswith(f"{LEASE_DIR}/") and relative.endswith(".json")


def _prune_empty_dirs(storage: Storage, index_dir: str, owners: Callable[[str], bool]) -> None:
    """Remove the empty per-operation directories of the operations ``owners`` accepts."""
    for top in ("data", "_tmp"):
        for name in storage.list_dirs(f"{index_dir}/{top}"):
            directory = f"{index_dir}/{top}/{name}"
            if owners(name) and not storage.list_files(directory):
                storage.delete_dir(directory)


# -- helpers --------------------------------------------------------------------------------
def _existing(source: str, index: str | None, name: str | None) -> Location:
    location = locate(source, index, name)
    if not location.storage.is_dir(location.lake_root):
        raise LakeNotFoundError(f"lake not found: {location.lake_root} is not a directory")
    if not IndexLog(location.storage, location.index_dir).versions():
        raise IndexNotFoundError(f"no lakeseek index '{location.name}' at {location.home}")
    return location


def _require_active(root: Root, location: Location) -> None:
    if root.state != ACTIVE:
        raise LakeseekError(f"index '{location.name}' is {root.state}: restore it first")


def _same_data(base: Root, latest: Root) -> bool:
    """Whether work prepared on ``base`` (indexing files, numbering them) still fits ``latest``."""
    return latest.data_version == base.data_version and set(latest.columns) == set(base.columns)


_THIS_VERSION = -1


def _with_data(root: Root, operation: str, **changes) -> Root:
    """``root`` with a changed lineage: the commit makes its own version the data version."""
    return dataclasses.replace(root, operation=operation, data_version=_THIS_VERSION, **changes)


def _columns(root: Root) -> list[IndexedColumn]:
    from lakeseek.build.job import indexed_columns

    return indexed_columns(list(root.columns), root.schema, root.partition_columns)


def _lake_files(location: Location) -> dict[str, Stamp]:
    return dict(sorted(list_data_files(location.storage, location.lake_root, location.home).items()))


def _numbered(files: dict[str, Stamp], first_id: int) -> Lineage:
    return _stamped(list(range(first_id, first_id + len(files))), list(files), files)


def _stamped(ids: list[int], paths: list[str], files: dict[str, Stamp]) -> Lineage:
    """The lineage of ``paths`` (numbered ``ids``) with the stamps the lake listing gave them."""
    stamps = [files[path] for path in paths]
    return Lineage(
        ids=ids,
        paths=paths,
        sizes=[stamp.size for stamp in stamps],
        mtimes=[stamp.mtime_ns for stamp in stamps],
        versions=[stamp.version for stamp in stamps],
    )


def _subset(lineage: Lineage, ids: set[int]) -> Lineage:
    return lineage.without(frozenset(set(lineage.ids) - ids))


def _checked_config(chunk_rows: int, entries_per_index_file: int, row_groups: bool) -> IndexConfig:
    for option, value, limit in (
        ("chunk_rows", chunk_rows, MAX_CHUNK_ROWS),
        ("entries_per_index_file", entries_per_index_file, MAX_ENTRIES_PER_INDEX_FILE),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= limit:
            raise LakeseekError(f"{option} must be a whole number from 1 to {limit:,}, not {value!r}")
    return IndexConfig(chunk_rows, entries_per_index_file, bool(row_groups))


def _column_list(columns: list[str] | str) -> list[str]:
    names = [c.strip() for c in columns.split(",")] if isinstance(columns, str) else list(columns)
    names = list(dict.fromkeys(n for n in names if n))
    if not names:
        raise UnsupportedColumnError("no columns to index")
    return names


def _relative(path: str, directory: str) -> str:
    return path[len(directory) + 1 :]


def _now_ms() -> int:
    return int(time.time() * 1000)
