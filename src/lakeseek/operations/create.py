"""``create``: a new index of a lake, or columns added to an existing one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lakeseek.commits.log import IndexLog
from lakeseek.commits.transaction import DEFAULT_COMMIT_TRIES
from lakeseek.engine.runner import Engine, runner_for
from lakeseek.exceptions import (
    CommitFailedError,
    IndexAlreadyExistsError,
    LakeNotFoundError,
    LakeseekError,
    UnsupportedColumnError,
)
from lakeseek.format.actions import ColumnsAre, DataVersionIs, RemoveFiles, Transaction
from lakeseek.format.root import ACTIVE, LineageSet, Root
from lakeseek.index import Index
from lakeseek.kinds import DEFAULT_KIND, kind_named
from lakeseek.lake.files import run_again_when_files_change
from lakeseek.lake.state import compare
from lakeseek.location import LakeLike, as_indexed, locate
from lakeseek.operations.protocol import (
    LazyRunner,
    Operation,
    lake_snapshot,
    now_ms,
    numbered,
    operation,
    require_active,
)
from lakeseek.operations.refresh import refresh_index

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakeseek.engine.progress import ProgressCallback


def create_index(
    source: LakeLike,
    columns: list[str] | str,
    *,
    kind: str | None = None,
    index: str | None = None,
    name: str | None = None,
    spark: SparkSession | None = None,
    engine: Engine = "spark",
    progress: ProgressCallback | None = None,
    commit_tries: int = DEFAULT_COMMIT_TRIES,
    storage_options: Mapping[str, object] | None = None,
    **options: Any,
) -> Index:
    """Index ``columns`` of the lake at ``source`` and return the index.

    The index is ``SOURCE/_lakeseek/<name>`` (name "default" unless given; ``index`` moves
    the home), of the ``kind`` given (default: ``sorted``, or the existing index's kind;
    ``options`` are the kind's own: for ``sorted``,
    ``chunk_rows``, ``entries_per_index_file`` and ``row_groups``, see
    :class:`lakeseek.kinds.sorted_index.SortedKind`). When the index exists, the columns it lacks
    are added to it (over the files it covers). The build runs on Spark (``spark`` defaults
    to a local session), or with ``engine="local"`` in this process. ``progress`` receives
    (label, done, total) task counts. ``storage_options`` configure the lake's object store
    (see :mod:`lakeseek.io`).
    """
    names = _column_list(columns)
    location = locate(source, index, name, existing=False, storage_options=storage_options)
    location.require_lake()
    log = IndexLog(location.storage, location.index_dir)
    latest = log.latest() if log.versions() else None
    if latest is not None:
        location = as_indexed(location, latest.source_format)
    chosen = kind_named(kind or (latest.kind if latest else DEFAULT_KIND))
    config = chosen.configure(options)
    if latest is not None:
        if latest.kind != chosen.name:
            raise LakeseekError(f"index '{location.name}' is of kind {latest.kind}, not {chosen.name}")
        if _unrecorded(latest, names):
            # Columns only files added since the last refresh have (or a partition column that was
            # void then): the refresh indexes those files and records their schema, then the
            # columns are added like any other.
            refresh_index(
                source,
                "incremental",
                index=index,
                spark=spark,
                name=name,
                engine=engine,
                progress=progress,
                storage_options=storage_options,
            )
    runner = LazyRunner(lambda: runner_for(engine, spark, progress))
    with operation(location, "create", commit_tries) as op:
        if latest is not None:
            root = op.transact(lambda base: _add_columns(op, base, names, runner))
        else:
            root = run_again_when_files_change(lambda: _create(op, chosen.name, config, names, runner))
    return Index(location, root)


def _unrecorded(root: Root, names: list[str]) -> bool:
    """Whether some of ``names`` are not columns of the schema ``root`` records (as Spark
    resolves names: in any case), or are void (NULL-typed) in it."""
    recorded = {field.name.lower() for field in root.schema if not pa.types.is_null(field.type)}
    return root.state == ACTIVE and any(name.lower() not in recorded for name in names)


def _create(op: Operation, kind: str, config: Any, names: list[str], runner: LazyRunner) -> Root:
    location = op.location
    snapshot = lake_snapshot(location)
    files = snapshot.files
    if not files:
        raise LakeNotFoundError(f"no data files in {location.lake_root}")
    lake = location.source.discover(files, runner)
    chosen = kind_named(kind)
    columns = chosen.check_columns(names, lake.schema, lake.partition_columns)
    lineage = numbered(files, first_id=0)
    content = chosen.build(op.job(lake.schema, lake.partition_columns, runner), config, columns, lineage)
    root = Root(
        version=0,
        operation="create",
        timestamp_ms=now_ms(),
        state=ACTIVE,
        data_version=0,
        schema=lake.schema,
        spark_schema=lake.spark_schema,
        partition_columns=lake.partition_columns,
        lineage=LineageSet((op.lineage_part(lineage, 0),), frozenset(), len(lineage)),
        kind=kind,
        content=content,
        source_version=snapshot.version,
        source_format=location.source.name,
    )
    try:
        op.commit_first(root)
    except CommitFailedError as error:
        raise IndexAlreadyExistsError(f"another writer created an index at {location.index_dir} first") from error
    return op.committed


def _add_columns(op: Operation, base: Root, names: list[str], runner: LazyRunner) -> Transaction:
    location = op.location
    active = require_active(base, location)
    kind = kind_named(base.kind)
    wanted = kind.check_columns(names, base.schema, base.partition_columns)
    new = [column for column in wanted if column not in base.columns]
    if not new:
        raise IndexAlreadyExistsError(
            f"index '{location.name}' already covers {', '.join(wanted)}; "
            "use refresh to bring it up to date, or another --name for a separate index"
        )
    lineage = base.lineage.indexed(location.storage, location.index_dir)
    pending = base.lineage.recorded(location.storage, location.index_dir)
    state = compare(lineage, lake_snapshot(location).files, pending)
    # Every column covers every file of the lineage that is not tombstoned: queries and
    # status trust a file whose stamp matches for every column. The new columns can only
    # index the files that are in the lake as indexed; the others (removed, or rewritten)
    # are tombstoned, so that if they come back with the same stamp (a directory moved out
    # and back keeps its files' inodes and ctimes) they count as new, are read by every
    # query, and the next refresh indexes them for every column.
    unchanged = lineage.without(frozenset(set(lineage.ids) - set(state.indexed)))
    tombstones = frozenset(lineage.ids) - set(state.indexed)
    change = kind.add_columns(op.job(base.schema, base.partition_columns, runner), base.content, new, unchanged)
    actions = change.actions + ((RemoveFiles(tombstones),) if tombstones else ())
    requirements = (active, DataVersionIs(base.data_version), ColumnsAre(frozenset(base.columns)), *change.requirements)
    return Transaction("add columns", actions, requirements)


def _column_list(columns: list[str] | str) -> list[str]:
    names = [c.strip() for c in columns.split(",")] if isinstance(columns, str) else list(columns)
    names = list(dict.fromkeys(n for n in names if n))
    if not names:
        raise UnsupportedColumnError("no columns to index")
    return names
