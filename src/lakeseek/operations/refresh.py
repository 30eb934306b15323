"""``refresh``: bring an index up to date with its lake (full, incremental, or quick)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from lakeseek.commits.transaction import DEFAULT_COMMIT_TRIES
from lakeseek.engine.runner import Engine, runner_for
from lakeseek.exceptions import InvalidArgumentError
from lakeseek.format.actions import (
    Action,
    AddFiles,
    ColumnsAre,
    DataVersionIs,
    RecordFiles,
    RemoveFiles,
    ReplaceFiles,
    SetContent,
    SetSchema,
    SetSourceVersion,
    StateIs,
    Transaction,
)
from lakeseek.format.lineage import MAX_FILE_IDS
from lakeseek.format.root import ACTIVE, Root
from lakeseek.index import Index
from lakeseek.kinds import kind_named
from lakeseek.lake.schemas import same_column
from lakeseek.lake.state import compare
from lakeseek.location import LakeLike
from lakeseek.operations.protocol import (
    LazyRunner,
    Operation,
    existing,
    indexable,
    lake_snapshot,
    numbered,
    operation,
    require_active,
    schema_now,
    stamped,
)
from lakeseek.sources.base import Snapshot

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from lakeseek.engine.progress import ProgressCallback
    from lakeseek.location import Location

RefreshMode = Literal["full", "incremental", "quick"]
logger = logging.getLogger("lakeseek")


def refresh_index(
    source: LakeLike,
    mode: RefreshMode = "incremental",
    *,
    index: str | None = None,
    name: str | None = None,
    spark: SparkSession | None = None,
    engine: Engine = "spark",
    progress: ProgressCallback | None = None,
    commit_tries: int = DEFAULT_COMMIT_TRIES,
    storage_options: Mapping[str, object] | None = None,
) -> Index:
    """Bring the index up to date with the lake.

    - ``full``: rebuild it from the lake.
    - ``incremental``: index the files added or rewritten since the last version (for the
      sorted kind, as a new increment); removed files become tombstones; existing index
      files stay as they are.
    - ``quick``: only record the changes; queries then scan the recorded files (hybrid
      scan) and skip removed ones. No job runs.

    ``engine="local"`` runs the job's tasks in this process instead of on Spark (small
    changes: no Spark start-up).
    """
    if mode not in ("full", "incremental", "quick"):
        raise InvalidArgumentError(f"unknown refresh mode {mode!r}: use full, incremental or quick")
    location = existing(source, index, name, storage_options)
    runner = LazyRunner(lambda: runner_for(engine, spark, progress))
    with operation(location, f"refresh {mode}", commit_tries) as op:
        root = op.transact(lambda base: _refresh(op, base, mode, runner))
    return Index(location, root)


def _refresh(op: Operation, base: Root, mode: str, runner: LazyRunner) -> Transaction | None:
    location = op.location
    active = require_active(base, location)
    snapshot = lake_snapshot(location)
    files = snapshot.files
    if mode == "full":  # reads nothing of the old index: it repairs damaged index files too
        return _rebuild(op, base, snapshot, runner)
    lineage = base.lineage.indexed(location.storage, location.index_dir)
    pending = base.lineage.recorded(location.storage, location.index_dir)
    state = compare(lineage, files, pending)
    requirements = (active, DataVersionIs(base.data_version), ColumnsAre(frozenset(base.columns)))
    table_schema = _table_schema(location, base, snapshot, runner)
    if table_schema is None and mode == "incremental":
        return _rebuild(op, base, snapshot, runner)
    listed = location.source.listed_partition_columns(files)
    if mode == "incremental" and listed is not None and listed != base.partition_columns:
        # Partition directories appeared, or went: every file reads with other columns.
        logger.info("the lake's partition columns are now (%s): the index is rebuilt", ", ".join(listed))
        return _rebuild(op, base, snapshot, runner)
    version = [] if table_schema is None else [SetSourceVersion(snapshot.version), *table_schema]
    partition_schema: list[Action] = []
    if base.partition_columns and snapshot.schema is None:
        # The files indexed or recorded after this refresh are the lake's now, and their
        # partition values may type a column otherwise (a directory removed, or one recorded):
        # queries take the root's types as those of the files it covers.
        schema, spark_schema = schema_now(location, base, snapshot, [], runner)
        retyped = [c for c in base.content.stored_columns if not same_column(base.schema, schema, c)]
        if retyped:
            # Its index files hold the old type, and once the files that typed it so leave the
            # lineage nothing would tell the type came from them: every file is indexed again.
            logger.info("partition column(s) %s changed type: the index is rebuilt", ", ".join(retyped))
            return _rebuild(op, base, snapshot, runner)
        if not _same_schema(base, schema, spark_schema):
            partition_schema = [SetSchema(schema, spark_schema)]
    if state.is_fresh:
        if partition_schema:
            return Transaction(f"refresh {mode}", tuple(partition_schema), requirements)
        if snapshot.version == base.source_version or not version:
            return None
        return Transaction(f"refresh {mode}", tuple(version), requirements)
    indexed_ids = dict(zip(lineage.paths, lineage.ids, strict=True))
    tombstones = frozenset(indexed_ids[p] for p in state.removed + state.changed if p in indexed_ids)
    recorded_ids = dict(zip(pending.paths, pending.ids, strict=True))
    next_id = base.lineage.next_file_id
    ids = []
    for path in state.unindexed:
        if path in recorded_ids and path in state.recorded:
            ids.append(recorded_ids[path])
        else:
            ids.append(next_id)
            next_id += 1
    if next_id > MAX_FILE_IDS:  # ids are never reused: a full refresh numbers the files anew
        return _rebuild(op, base, snapshot, runner)
    changed = stamped(ids, state.unindexed, files)
    inline_budget = base.lineage.inline_files - base.lineage.pending_files
    part = op.lineage_part(changed, inline_budget) if len(changed) else None
    actions: list[Action] = []
    if mode == "quick" or base.lineage.pending is not None:
        # A quick refresh records the files; an incremental one indexes the recorded ones too.
        actions.append(RecordFiles(part if mode == "quick" else None, next_id))
    if mode == "incremental" and part is not None:
        schema, spark_schema = schema_now(location, base, snapshot, state.unindexed, runner)
        retyped = [c for c in base.content.stored_columns if not same_column(base.schema, schema, c)]
        if retyped:
            # Index files of the old type cannot take the new values: every file is indexed again.
            logger.info("column(s) %s changed type in new files: the index is rebuilt", ", ".join(retyped))
            return _rebuild(op, base, snapshot, runner)
        job = op.job(schema, base.partition_columns, runner)
        change = kind_named(base.kind).add_files(job, base.content, changed)
        actions += [*change.actions, AddFiles(part, next_id)]
        if not _same_schema(base, schema, spark_schema):
            actions.append(SetSchema(schema, spark_schema))
        requirements += change.requirements
    if not any(isinstance(action, SetSchema) for action in actions):
        actions += partition_schema
    if tombstones:
        actions.append(RemoveFiles(tombstones))
    if snapshot.version != base.source_version:
        schema_set = any(isinstance(action, SetSchema) for action in actions)
        actions += version if not schema_set else version[:1]
    return Transaction(f"refresh {mode}", tuple(actions), requirements)


def _table_schema(location, base: Root, snapshot, runner: LazyRunner) -> list[Action] | None:
    """What the root needs to record a table's new version: its schema there (a column
    added that no file holds yet, or dropped), since queries take the root's schema for the
    lake's while the table stays at the version the root records. None when the table dropped
    an indexed column or changed its type: its index files cannot describe that version (an
    incremental refresh rebuilds them; a quick one leaves the version unrecorded, so queries
    take the table's schema from the table)."""
    if snapshot.schema is None or snapshot.version == base.source_version:
        return []
    schema, spark_schema = schema_now(location, base, snapshot, [], runner)
    if any(not same_column(base.schema, schema, c) for c in base.content.stored_columns):
        return None
    return [] if _same_schema(base, schema, spark_schema) else [SetSchema(schema, spark_schema)]


def _same_schema(base: Root, schema: pa.Schema, spark_schema: str) -> bool:
    """Whether the root records this schema already, its metadata included (the other
    spellings of columns: an Arrow schema's ``==`` leaves metadata out)."""
    return schema.equals(base.schema, check_metadata=True) and spark_schema == base.spark_schema


def _schema_of_files(
    location: Location, base: Root, snapshot: Snapshot, runner: LazyRunner
) -> tuple[pa.Schema, str, tuple[str, ...]]:
    """The lake's schema and partition columns from its files now, as a create takes them (a
    lake without a schema of its own: columns, and wider types, that only removed files held
    go; partition directories that appeared, or went, as Spark would read them); else the
    recorded schema with every file's merged in, and the index's partition columns."""
    if snapshot.schema is None and snapshot.files:
        discovered = location.source.discover(snapshot.files, runner)
        return discovered.schema, discovered.spark_schema, tuple(discovered.partition_columns)
    return (*schema_now(location, base, snapshot, list(snapshot.files), runner), base.partition_columns)


def _rebuild(op: Operation, base: Root, snapshot: Snapshot, runner: LazyRunner) -> Transaction:
    location = op.location
    files = snapshot.files
    schema, spark_schema, partition_columns = _schema_of_files(location, base, snapshot, runner)
    columns = indexable(base, schema, partition_columns)
    lineage = numbered(files, first_id=0)
    kind = kind_named(base.kind)
    job = op.job(schema, partition_columns, runner)
    content = kind.build(job, kind.config_for(kind.config_of(base.content), schema), columns, lineage)
    changed_partitions = None if partition_columns == base.partition_columns else partition_columns
    actions = (
        SetContent(content),
        ReplaceFiles(op.lineage_part(lineage, 0)),
        SetSchema(schema, spark_schema, changed_partitions),
        SetSourceVersion(snapshot.version),
    )
    return Transaction("refresh full", actions, (StateIs(ACTIVE), ColumnsAre(frozenset(base.columns))))
