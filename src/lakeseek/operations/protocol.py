"""How every operation that changes an index runs (seed 003's lifecycle, without its blocking states):

1. take a lease (``_leases/<operation id>.json``) so vacuum knows the work is live;
2. read the latest version and write the new files under the operation's id;
3. commit the change as a transaction with put-if-absent (:mod:`lakeseek.commits.transaction`):
   on a lost race it is applied on top of the winner when its requirements still hold,
   else prepared again, a bounded number of tries in all;
4. release the lease and delete whatever the operation wrote but did not commit.

Readers only ever read committed versions, so a running operation neither blocks them
nor shows them anything half-done; files of older versions stay until ``vacuum``
removes the versions past their retention.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import pyarrow as pa

from lakeseek.commits.leases import COMMIT_MARGIN_MS, Lease, Leases
from lakeseek.commits.log import IndexLog
from lakeseek.commits.transaction import DEFAULT_COMMIT_TRIES, Prepare, commit
from lakeseek.engine.runner import Runner
from lakeseek.exceptions import (
    CommitOutcomeUnknownError,
    IndexNotFoundError,
    LakeseekError,
    OperationCancelledError,
    UnsupportedColumnError,
)
from lakeseek.format.actions import Requirement, StateIs
from lakeseek.format.lineage import Lineage, write_lineage
from lakeseek.format.root import ACTIVE, LineagePart, Root
from lakeseek.io import Stamp
from lakeseek.kinds import kind_named
from lakeseek.kinds.base import Job, OperationFiles
from lakeseek.lake.files import run_again_when_files_change
from lakeseek.lake.schemas import current_partition_types, spark_schema_json, with_partition_types
from lakeseek.location import LakeLike, Location, as_indexed, locate
from lakeseek.operations.names import discard, recover
from lakeseek.sources.base import Snapshot, merged_schema

logger = logging.getLogger("lakeseek")
# Up to this many files the lineage lives inside the root, so a cold lookup needs no extra read.
INLINE_LINEAGE_MAX_FILES = 20_000


class Operation:
    """One running operation: its id, lease, and what it writes and commits."""

    def __init__(self, location: Location, name: str, commit_tries: int = DEFAULT_COMMIT_TRIES) -> None:
        self.location = location
        self.name = name
        self.id = uuid.uuid4().hex
        self.commit_tries = commit_tries
        self.log = IndexLog(location.storage, location.index_dir)
        self.leases = Leases(location.storage, location.index_dir)
        self.files = OperationFiles(location.storage, location.index_dir, self.id, location.source.storage_options)
        self.lease: Lease | None = None
        self.committed: Root | None = None

    @property
    def what(self) -> str:
        return f"{self.name} of index '{self.location.name}'"

    def transact(self, prepare: Prepare) -> Root:
        """Commit what ``prepare`` makes of the latest version (see :func:`lakeseek.commits.transaction.commit`)."""

        def finish(root: Root, latest: Root) -> Root:
            content = kind_named(root.kind).complete(root.content, latest.content, self.files)
            return dataclasses.replace(root, content=content)

        root = commit(
            self.log,
            # A build lists the lake and reads its files: one changed meanwhile, it starts again.
            lambda base: run_again_when_files_change(lambda: prepare(base)),
            what=self.what,
            owner=self.id,
            finish=finish,
            check=self.check_lease,
            tries=self.commit_tries,
        )
        self.committed = root
        return root

    def commit_first(self, root: Root) -> None:
        """Commit version 0 (CommitFailedError when another writer created it first)."""
        self.check_lease()
        root = dataclasses.replace(root, content=kind_named(root.kind).complete(root.content, None, self.files))
        self.log.commit(root, (), self.id)
        self.committed = root

    def check_lease(self) -> None:
        """Before each commit, after reading the version to commit on (see cancel_operations)."""
        if self.lease is None:
            return
        if not self.leases.holds(self.lease):
            raise OperationCancelledError(f"{self.what} was cancelled")
        if now_ms() > self.lease.expires_ms - COMMIT_MARGIN_MS:
            raise OperationCancelledError(
                f"{self.what} ran too long to commit safely (its lease expires at {self.lease.expires_ms} ms, "
                "after which vacuum may take its files): run it again"
            )

    def lineage_part(self, lineage: Lineage, inline_files: int) -> LineagePart:
        """A lineage part: inline while the root's inline lineage stays small, else a manifest."""
        lake_bytes = sum(lineage.sizes)
        if inline_files + len(lineage) <= INLINE_LINEAGE_MAX_FILES:
            return LineagePart(len(lineage), lake_bytes, 0, inline=lineage)
        path, size = write_lineage(self.location.storage, self.location.index_dir, self.id, lineage)
        return LineagePart(len(lineage), lake_bytes, size, path=path)

    def job(self, schema: pa.Schema, partition_columns: tuple[str, ...], runner: Callable[[], Runner]) -> Job:
        return Job(self.location.source, self.files, schema, partition_columns, runner)


@contextmanager
def operation(location: Location, name: str, commit_tries: int = DEFAULT_COMMIT_TRIES) -> Iterator[Operation]:
    op = Operation(location, name, commit_tries)
    recover(location)
    op.lease = op.leases.acquire(op.id, name)
    undecided = False
    try:
        yield op
    except (OperationCancelledError, CommitOutcomeUnknownError) as error:
        undecided = isinstance(error, CommitOutcomeUnknownError)  # its entry may land yet
        raise
    except Exception as error:
        # A cancel deletes what the operation wrote, which it may have been reading (a spill file).
        if op.committed is None and not op.leases.holds(op.lease):
            raise OperationCancelledError(f"{op.what} was cancelled") from error
        raise
    finally:
        # Only this operation's commit can reference its files: no need to read the log.
        if not undecided:
            discard(location, op.id, referenced=op.committed.referenced_paths() if op.committed else set())
        op.leases.release(op.id)


# -- what operations share ----------------------------------------------------------------------
class LazyRunner:
    """A task runner made on first use (starting Spark only when a job needs it)."""

    def __init__(self, make: Callable[[], Runner]) -> None:
        self._make = make
        self._runner: Runner | None = None

    def __call__(self) -> Runner:
        if self._runner is None:
            self._runner = self._make()
        return self._runner


def existing(
    source: LakeLike, index: str | None, name: str | None, storage_options: Mapping[str, object] | None
) -> Location:
    location = locate(source, index, name, storage_options=storage_options)
    location.require_lake()
    log = IndexLog(location.storage, location.index_dir)
    if not log.versions():
        raise IndexNotFoundError(f"no lakeseek index '{location.name}' at {location.home}")
    return as_indexed(location, log.latest().source_format)


def require_active(root: Root, location: Location) -> Requirement:
    """Refuse an index that is not active; the requirement that it still is when the work
    commits (a delete may commit first)."""
    if root.state != ACTIVE:
        raise LakeseekError(f"index '{location.name}' is {root.state}: restore it first")
    return StateIs(ACTIVE)


def lake_snapshot(location: Location) -> Snapshot:
    """The lake now, its files in path order (which numbers them)."""
    snapshot = location.source.snapshot(exclude=location.home)
    return dataclasses.replace(snapshot, files=dict(sorted(snapshot.files.items())))


def numbered(files: dict[str, Stamp], first_id: int) -> Lineage:
    return stamped(list(range(first_id, first_id + len(files))), list(files), files)


def stamped(ids: list[int], paths: list[str], files: dict[str, Stamp]) -> Lineage:
    """The lineage of ``paths`` (numbered ``ids``) with the stamps the lake snapshot gave them."""
    stamps = [files[path] for path in paths]
    return Lineage(
        ids=ids,
        paths=paths,
        sizes=[stamp.size for stamp in stamps],
        mtimes=[stamp.mtime_ns for stamp in stamps],
        versions=[stamp.version for stamp in stamps],
    )


def indexable(root: Root, schema: pa.Schema, partition_columns: tuple[str, ...]) -> list[str]:
    """The index's columns its kind can still index in ``schema``; a column it no longer can
    (a partition column that became a DOUBLE, a column the table dropped) is dropped with a
    warning."""

    kind = kind_named(root.kind)
    kept = []
    for column in root.columns:
        if column not in schema.names:
            logger.warning("column '%s' is no longer the lake's, the index drops it", column)
            continue
        try:
            kept += kind.check_columns([column], schema, partition_columns)
        except UnsupportedColumnError as error:
            logger.warning("column '%s' can no longer be indexed, the index drops it: %s", column, error)
    if not kept:
        raise UnsupportedColumnError("no column of the index can still be indexed: delete the index")
    return kept


def schema_now(
    location: Location, base: Root, snapshot: Snapshot, paths: list[str], runner: Callable[[], Runner]
) -> tuple[pa.Schema, str]:
    """The lake's schema now, and Spark's JSON of it (lakeseek.lake.schemas): the index's (a
    table format's own at ``snapshot``), with the partition types the source gives the
    snapshot's files and the schemas of the data files ``paths`` merged in (a table's columns
    only: its older files may hold columns it dropped)."""
    files = snapshot.files
    declared = snapshot.schema
    schema = base.schema if declared is None else declared
    partitions = base.partition_columns
    source = location.source
    if partitions:
        try:
            indexed = base.lineage.indexed(location.storage, location.index_dir).paths
            indexed += base.lineage.recorded(location.storage, location.index_dir).paths
        except LakeseekError:  # a damaged manifest: the files now alone say what the types are
            indexed = list(files)
        then = source.partition_types(indexed, partitions)
        now = source.partition_types(files, partitions)
        schema = with_partition_types(schema, current_partition_types(schema, partitions, then, now))
    schema = merged_schema(source, runner, schema, partitions, {path: files[path] for path in sorted(paths)})
    if declared is not None:
        schema = pa.schema([field for field in schema if field.name in declared.names])
    return schema, spark_schema_json(schema, partitions, base.schema, base.spark_schema)


def now_ms() -> int:
    return int(time.time() * 1000)
