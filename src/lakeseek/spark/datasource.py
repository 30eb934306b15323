"""A PySpark Python data source: Spark SQL over a lake, pruned by its index.

It is format ``"lakeseek_python"``, and ``"lakeseek"`` where the JVM data source
(:mod:`lakeseek.spark.jvm`) cannot load: no JDK, or Spark Connect. ::

    import lakeseek.spark
    lakeseek.spark.register(spark)
    spark.sql("CREATE TABLE t USING lakeseek_python OPTIONS (path '/data/lake')")
    spark.sql("SELECT * FROM t WHERE record_id = 123")

Options: ``path`` (the lake), ``index`` (index home, when not ``PATH/_lakeseek``), ``name``
(which index), ``storage.<NAME>`` (an object store's setting, e.g. ``storage.AWS_ENDPOINT_URL``:
see :mod:`lakeseek.io`), and the partition sizing knobs ``maxPartitionBytes``,
``openCostInBytes`` and ``parallelism`` (defaults: the session's, as seen by :func:`register`).

Division of labour: the index only chooses *files*; Spark stays the judge of *rows*.
``pushFilters`` hands every filter back to Spark, so Spark evaluates each predicate on
what the source returns, exactly as over ``spark.read.parquet``. The filters lakeseek
can evaluate with Spark's semantics are also used twice inside the source: by the index
to drop files, and by pyarrow to drop rows early (cheap, and Parquet statistics skip row
groups). Both steps only ever drop rows that fail a filter Spark applies anyway, so the
answer is ``spark.read.parquet(PATH).where(...)``'s, however stale the index (new files
are read, removed ones skipped: see :mod:`lakeseek.planning`).

Under Spark up to 4.3 at least, though, a reader's pushed filters do not belong to one
scan (see :class:`LakeseekReader`): the readers Spark makes read every file and row,
and Spark applies every filter itself.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import datasource as spark_filters
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructField, StructType

from lakeseek.exceptions import LakeseekError
from lakeseek.index import Index, open_index
from lakeseek.io import Stamp
from lakeseek.planning import Plan
from lakeseek.sources import open_lake
from lakeseek.sources.base import LakeSource
from lakeseek.spark.dataframes import spark_schema
from lakeseek.spark.filters import Pushed, conjunction, usable
from lakeseek.spark.scan import (
    LakeseekPartition,
    ScanSettings,
    ScanSpec,
    dataset_schema,
    pack,
    plan_scan,
    read_option,
    read_partition,
)

FORMAT = "lakeseek"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
log = logging.getLogger("lakeseek")


def register(spark: SparkSession, name: str = FORMAT) -> None:
    """Register the Python data source as format ``name`` on ``spark``, with Python filter pushdown.

    Spark refuses to plan a Python data source that implements ``pushFilters`` unless
    ``spark.sql.python.filterPushdown.enabled`` is set, hence the conf. The session's
    partition sizing conf and parallelism are captured now (the planning worker cannot
    see them): re-register after changing them.
    """
    spark.conf.set(PUSHDOWN_CONF, "true")
    settings = ScanSettings.of(spark)

    # A class local to this call is pickled by value, so it carries ``settings`` and the
    # name to the planning worker; the base class is pickled by reference (lakeseek is
    # installed there).
    class SessionLakeseekDataSource(LakeseekDataSource):
        defaults = settings

        @classmethod
        def name(cls) -> str:
            return name

    spark.dataSource.register(SessionLakeseekDataSource)


# -- the data source ---------------------------------------------------------------------------
class LakeseekDataSource(DataSource):
    """Reads a lake like ``spark.read.parquet(path)``; where its readers narrow (see
    :class:`LakeseekReader`), only the files its index says may hold matching rows.
    Options: ``path``, ``index``, ``name`` (see the module doc)."""

    defaults: ScanSettings | None = None  # set by register(); else ScanSettings()
    # Whether readers narrow their scan to the filters pushed to them: never under Spark's
    # planning worker, which does not keep a reader's read for its own scan (see LakeseekReader).
    narrow_to_pushed_filters: bool = False

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        """The lake's schema as Spark reads it now (:func:`lakeseek.spark.spark_schema`), so the
        table has ``spark.read.option("mergeSchema", "true").parquet(path).schema`` (partition
        columns last; none with ``recursiveFileLookup``, which turns partition discovery off).

        For ``CREATE TABLE ... USING lakeseek`` the options also ride in the first field's
        metadata: Spark (4.1 to 4.3 at least) hands a catalog table's properties to
        ``getTable`` and drops them, so a table's reader gets no options, only its schema.
        """
        index = open_source_index(self.options)
        schema = spark_schema(index)
        if recursive_file_lookup(self.options):
            schema = StructType([f for f in schema.fields if f.name not in index.root.partition_columns])
        return with_source_options(schema, self.options) if _creates_table(self.options) else schema

    def reader(self, schema: StructType) -> LakeseekReader:
        # A table's options (from its schema) first, so options given with the query win.
        options = {key.lower(): value for key, value in [*source_options(schema).items(), *self.options.items()]}
        settings = (self.defaults or ScanSettings()).with_options(options)
        return LakeseekReader(options, schema, settings, narrow_to_pushed_filters=self.narrow_to_pushed_filters)


def open_source_index(options: Mapping[str, str]) -> Index:
    """The index the read options name, or a LakeseekError that says what is wrong."""
    path = read_option(options, "path")
    if not path:
        raise LakeseekError(
            "the lakeseek data source needs the lake's path: "
            "spark.read.format('lakeseek').load(PATH) or CREATE TABLE ... USING lakeseek OPTIONS (path 'PATH')"
        )
    try:
        # "once": a scan lists the lake once, and plans and sizes its files from that listing.
        index, name = read_option(options, "index"), read_option(options, "name")
        return open_index(open_source_lake(options), index=index, name=name, lake_listing="once")
    except LakeseekError as error:
        raise type(error)(f"lakeseek data source over {path}: {error}") from error


def open_source_lake(options: Mapping[str, str]) -> LakeSource:
    """The lake the read options name (its ``path``, ``source_format`` and storage options)."""
    path = read_option(options, "path")
    return open_lake(path, storage_options(options), source_format=read_option(options, "source_format"))


SOURCE_OPTIONS_KEY = "lakeseek.options"
_SOURCE_OPTIONS = ("path", "index", "name", "maxPartitionBytes", "openCostInBytes", "parallelism")


STORAGE_OPTION = "storage."


def storage_options(options: Mapping[str, str]) -> dict[str, str]:
    """The object store's settings among the read options: ``storage.<NAME>`` (see lakeseek.io)."""
    return {
        key[len(STORAGE_OPTION) :]: value for key, value in options.items() if key.lower().startswith(STORAGE_OPTION)
    }


def recursive_file_lookup(options: Mapping[str, str]) -> bool:
    """Whether the read lists the lake recursively without partition discovery (Spark's option)."""
    return (read_option(options, "recursiveFileLookup") or "").strip().lower() == "true"


def refuse_retyped(schema: StructType, now: StructType) -> None:
    """A LakeseekError when a column of ``schema`` (a DataFrame's or a table's, fixed when it was
    made) has another type in the lake ``now`` (a directory ``p=2.5`` beside ``p=1``): its
    values would be read as the old type, wrong or failing."""
    current = {field.name.lower(): field for field in now.fields}
    for field in schema.fields:
        found = current.get(field.name.lower())
        if found is not None and found.dataType != field.dataType:
            raise LakeseekError(
                f"the lake's column '{field.name}' is {found.dataType.simpleString()} now, "
                f"{field.dataType.simpleString()} when this DataFrame (or table) was made: read the lake again"
            )


def _creates_table(options: Mapping[str, str]) -> bool:
    # The catalog adds the table's provider to the properties it infers a new table's schema with.
    return read_option(options, "provider") is not None


def with_source_options(schema: StructType, options: Mapping[str, str]) -> StructType:
    """``schema`` with the lakeseek options in its first field's metadata (see ``schema()``)."""
    kept = {key: value for key in _SOURCE_OPTIONS if (value := read_option(options, key)) is not None}
    kept.update({f"{STORAGE_OPTION}{key}": value for key, value in storage_options(options).items()})
    first, *rest = schema.fields
    metadata = {**(first.metadata or {}), SOURCE_OPTIONS_KEY: json.dumps(kept, sort_keys=True)}
    return StructType([StructField(first.name, first.dataType, first.nullable, metadata), *rest])


def source_options(schema: StructType) -> dict[str, str]:
    """The options :func:`with_source_options` put in ``schema`` ({} when there are none)."""
    if not schema.fields:
        return {}
    raw = (schema.fields[0].metadata or {}).get(SOURCE_OPTIONS_KEY)
    return dict(json.loads(raw)) if raw else {}


class LakeseekReader(DataSourceReader):
    """Plans a scan with the index (on the driver's planning worker) and reads its files with
    pyarrow (on executors). Spark pickles the reader after ``pushFilters``, before
    ``partitions``, for the read function: the open index is left out of the pickle.

    Spark's planning worker makes a fresh reader for each scan it plans, but Spark (4.1 to
    4.3 at least) keeps the read it plans (the partitions, and the read function pickled
    with this reader) on the relation's data source, not on the scan
    (``PythonScanBuilder.pushFilters`` calls ``PythonDataSourceV2.setReadInfo``), and every
    scan of that relation reads with the last read stored. A later query on the same
    DataFrame, view or table reference with no filter to push (a bare ``count()``) never
    reaches Python and reads with an earlier query's read; the scans of one query (a
    self-union, an ``IN`` subquery, a self-join) all read with the last one planned. No
    state in Python is per scan, so a reader that dropped files or rows by its own pushed
    filters would answer other scans with them. By default a reader therefore reads every
    file and every row, and Spark applies every filter: ``spark.read.parquet``'s answer.
    ``narrow_to_pushed_filters`` is for a caller that plans one scan per reader: the index
    then picks its files and pyarrow drops rows early, by the filters of its last
    ``pushFilters``.
    """

    def __init__(
        self,
        options: Mapping[str, str],
        schema: StructType,
        settings: ScanSettings,
        *,
        narrow_to_pushed_filters: bool = False,
    ) -> None:
        self.options = dict(options)
        self.schema = schema
        self.settings = settings
        self.narrow_to_pushed_filters = narrow_to_pushed_filters
        self._index: Index | None = open_source_index(options)
        self.arrow_schema: pa.Schema = self._index.schema  # the lake's now (lakeseek.lake.schemas)
        refuse_retyped(schema, spark_schema(self._index))
        if recursive_file_lookup(self.options):  # no partition discovery: no partition column
            partitions = self._index.root.partition_columns
            kept = [f for f in self.arrow_schema if f.name not in partitions]
            self.arrow_schema = pa.schema(kept, metadata=self.arrow_schema.metadata)
        self.pushed: list[Pushed] = []
        self.plan: Plan | None = None  # set by partitions(), for callers that report pruning
        self.spec = self._spec()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_index"] = None
        state["plan"] = None  # can list a million files; executors do not need it
        return state

    @property
    def index(self) -> Index:
        if self._index is None:
            self._index = open_source_index(self.options)
        return self._index

    def pushFilters(self, filters: list[spark_filters.Filter]) -> list[spark_filters.Filter]:
        """Give every filter back to Spark; a narrowing reader keeps the ones lakeseek can evaluate."""
        # Replaced, not added to: they are the filters of the scan planned next.
        candidates = [usable(f, self.arrow_schema) for f in filters] if self.narrow_to_pushed_filters else []
        # A timestamp partition value depends on the session time zone, which the index (built
        # in UTC) and this planning worker do not know: Spark alone filters on those columns.
        zoned = {
            name
            for name in self.index.root.partition_columns
            if name in self.arrow_schema.names and pa.types.is_timestamp(self.arrow_schema.field(name).type)
        }
        self.pushed = [pushed for pushed in candidates if pushed is not None and not pushed.predicate.columns() & zoned]
        self.spec = self._spec()
        # All of them: Spark re-checks every row, so the result is exactly a Parquet scan's.
        return list(filters)

    def partitions(self) -> list[InputPartition]:
        """The candidate files, packed by size as Spark packs a Parquet scan's files."""
        chosen = self.index_plan()
        stamps = self._file_stamps()
        listed = [(path, stamps[path].size if path in stamps else None) for path in chosen.files]
        # Spark's file scans skip 0-byte files (no Parquet footer to read): so does this one.
        files = [(path, size or 0) for path, size in listed if size != 0]
        return [
            LakeseekPartition(
                tuple(group),
                {path: chosen.row_groups[path] for path in group if path in chosen.row_groups},
                {path: stamps[path] for path in group if path in stamps},
            )
            for group in pack(files, self.settings)
        ]

    def index_plan(self) -> Plan:
        """The index's plan for the usable filters (every file when there are none)."""
        self.plan = plan_scan(self.index, [pushed.predicate for pushed in self.pushed])
        return self.plan

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, LakeseekPartition):
            return iter(())  # Spark's stand-in partition when a scan has none
        return read_partition(self.spec, partition, self.schema)

    # -- internals ------------------------------------------------------------------------------
    def _spec(self) -> ScanSpec:
        index = self.index
        return ScanSpec(
            lake=index.lake.address,
            dataset_schema=dataset_schema(self.arrow_schema, self.schema),
            columns=tuple(self.schema.fieldNames()),
            partition_columns=() if recursive_file_lookup(self.options) else tuple(index.root.partition_columns),
            predicate=conjunction([pushed.bound for pushed in self.pushed]),
            time_zone=self.settings.time_zone,
        )

    def _file_stamps(self) -> Mapping[str, Stamp]:
        try:
            return self.index.lake_state().files  # the listing the plan used (lake_listing="once")
        except LakeseekError:
            return self.index.lake.snapshot(exclude=self.index.location.home).files


__all__ = ["FORMAT", "LakeseekDataSource", "LakeseekReader", "open_source_index", "register"]
