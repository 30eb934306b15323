"""The public handle on an index: ``open_index`` and :class:`Index`.

Lookups and reads need no Spark: the index gives candidate files, pyarrow reads them.
Every query lists the lake first, so files added or rewritten since indexing are always
read and removed ones skipped: the answer is a full scan's, however stale the index.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import pyarrow as pa

from lakeseek.exceptions import LakeNotFoundError, LakeseekError
from lakeseek.expressions import Predicate
from lakeseek.expressions.arrow import to_arrow
from lakeseek.expressions.binding import bind, resolve_column
from lakeseek.expressions.sql import parse_where, to_spark_sql
from lakeseek.format.root import Root
from lakeseek.io import Storage, storage_for
from lakeseek.lake import LakeState, compare, list_data_files, open_dataset
from lakeseek.log import IndexLog
from lakeseek.lookup import IndexReader
from lakeseek.planning import Plan, plan

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_INDEX_DIR = "_lakeseek"
LakeListing = Literal["per_query", "once"]
log = logging.getLogger("lakeseek")


def locate(source: str, index: str | None = None) -> tuple[Storage, str, str]:
    """The storage, lake root and index directory for a source and optional index location."""
    storage, lake_root = storage_for(source)
    if index is None:
        return storage, lake_root, f"{lake_root}/{DEFAULT_INDEX_DIR}"
    index_storage, index_dir = storage_for(index)
    if index_storage is not storage:
        raise LakeseekError("the index must live on the same storage as the lake")
    return storage, lake_root, index_dir


def open_index(source: str, index: str | None = None, *, lake_listing: LakeListing = "per_query") -> Index:
    """Open the latest committed index of the lake at ``source``.

    ``index`` is the index directory when it is not ``SOURCE/_lakeseek``.
    ``lake_listing="per_query"`` (the default) lists the lake on every query, so files
    added, rewritten or removed since indexing are always accounted for. ``"once"`` reuses
    the first listing for the life of the Index, as a Spark DataFrame reuses its file
    index: faster lookups, but changes made to the lake afterwards are not seen until the
    index is opened again.
    """
    storage, lake_root, index_dir = locate(source, index)
    if not storage.is_dir(lake_root):
        raise LakeNotFoundError(f"lake not found: {lake_root} is not a directory")
    root = IndexLog(storage, index_dir).latest()
    return Index(storage, lake_root, index_dir, root, lake_listing=lake_listing)


@dataclass(frozen=True)
class ColumnStatus:
    name: str
    type: str
    entries: int
    index_files: int
    bytes: int


@dataclass(frozen=True)
class IndexStatus:
    source: str
    index: str
    version: int
    created_ms: int
    columns: list[ColumnStatus]
    indexed_files: int
    lake_files: int
    new_files: list[str]
    changed_files: list[str]
    removed_files: list[str]
    index_bytes: int
    lake_bytes_indexed: int


class Index:
    """One committed version of a lake's index."""

    def __init__(
        self, storage: Storage, lake_root: str, index_dir: str, root: Root, *, lake_listing: LakeListing = "per_query"
    ) -> None:
        if lake_listing not in ("per_query", "once"):
            raise ValueError(f"lake_listing must be 'per_query' or 'once', not {lake_listing!r}")
        self.lake_listing = lake_listing
        self.storage = storage
        self.lake_root = lake_root
        self.index_dir = index_dir
        self.root = root
        self.reader = IndexReader(storage, index_dir, root)
        self._state: LakeState | None = None  # the latest comparison, reused while the lake is unchanged
        self.last_plan: Plan | None = None  # the plan of the latest query, for callers that report staleness

    def __repr__(self) -> str:
        return f"Index(source={self.source!r}, columns={self.columns}, version={self.version})"

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
        return self.root.schema

    # -- queries ----------------------------------------------------------------------------
    def plan(self, where: str) -> Plan:
        """The files a query with this predicate must read."""
        return self._plan(self._bind(where))

    def files(self, where: str) -> list[str]:
        """Paths of the data files that may hold rows matching ``where`` (SQL)."""
        return [self._location(f"{self.lake_root}/{path}") for path in self.plan(where).files]

    def read(self, where: str, columns: list[str] | None = None) -> pa.Table:
        """The rows matching ``where``, read with pyarrow from the candidate files only."""
        predicate = self._bind(where)
        return self._read(self._plan(predicate).files, predicate, columns)

    def scan(self, where: str, columns: list[str] | None = None) -> pa.Table:
        """The rows matching ``where``, read from every file of the lake without the index."""
        predicate = self._bind(where)
        return self._read(list(self.lake_state().files), predicate, columns)

    def to_spark(self, spark: SparkSession, where: str) -> DataFrame:
        """A Spark DataFrame of the rows matching ``where``, over the candidate files only.

        Same rows as ``spark.read.parquet(SOURCE).where(where)`` when Spark reads the
        predicate as lakeseek does (see :func:`lakeseek.expressions.sql.to_spark_sql`).
        """
        from pyspark.sql.types import StructType

        chosen = self.plan(where)
        schema = StructType.fromJson(json.loads(self.root.spark_schema))
        if not chosen.files:
            return spark.createDataFrame([], schema)
        uris = [self.storage.uri(f"{self.lake_root}/{path}") for path in chosen.files]
        reader = spark.read.schema(schema).option("basePath", self.storage.uri(self.lake_root))
        return reader.parquet(*uris).where(to_spark_sql(where))

    # -- state ------------------------------------------------------------------------------
    def lake_state(self) -> LakeState:
        """The lake now compared with what the index covers."""
        if self.lake_listing == "once" and self._state is not None:
            return self._state
        files = list_data_files(self.storage, self.lake_root, self.index_dir)
        if self._state is None or self._state.files != files:
            self._state = compare(self.reader.lineage(), files)
        return self._state

    def status(self) -> IndexStatus:
        state = self.lake_state()
        return IndexStatus(
            source=self.source,
            index=self._location(self.index_dir),
            version=self.version,
            created_ms=self.root.timestamp_ms,
            columns=[
                ColumnStatus(c.name, str(c.key_type), c.entries, len(c.files), c.size)
                for c in self.root.columns.values()
            ],
            indexed_files=self.root.lineage.files,
            lake_files=len(state.files),
            new_files=state.new,
            changed_files=state.changed,
            removed_files=state.removed,
            index_bytes=self.root.index_bytes,
            lake_bytes_indexed=self.root.lineage.lake_bytes,
        )

    # -- internals --------------------------------------------------------------------------
    def _bind(self, where: str) -> Predicate:
        return bind(parse_where(where), self.schema)

    def _read(self, files: list[str], predicate: Predicate, columns: list[str] | None) -> pa.Table:
        selected = None if columns is None else [resolve_column(c, self.schema).name for c in columns]
        stamps = self._state.files if self._state else {}
        self.storage.stats.add_data_files(len(files), sum(stamps[f][0] for f in files if f in stamps))
        dataset = open_dataset(self.storage, self.lake_root, files, self.schema, self.root.partition_columns)
        return dataset.to_table(columns=selected, filter=to_arrow(predicate, self.schema))

    def _plan(self, predicate: Predicate) -> Plan:
        chosen = plan(predicate, self.reader, self.lake_state())
        self.last_plan = chosen
        if chosen.unindexed_files or chosen.removed_files:
            log.info(
                "index is stale: %d new or changed files are read without it, %d removed files skipped",
                chosen.unindexed_files,
                chosen.removed_files,
            )
        return chosen

    def _location(self, path: str) -> str:
        return path if self.storage.is_local else self.storage.uri(path)
