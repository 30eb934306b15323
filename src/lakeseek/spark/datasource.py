"""A PySpark Python data source: Spark SQL over a lake, pruned by its index.

It is format ``"lakeseek_python"``, and ``"lakeseek"`` where the JVM data source
(:mod:`lakeseek.spark.jvm`) cannot load: no JDK, or Spark Connect. ::

    import lakeseek.spark
    lakeseek.spark.register(spark)
    spark.sql("CREATE TABLE t USING lakeseek_python OPTIONS (path '/data/lake')")
    spark.sql("SELECT * FROM t WHERE record_id = 123")

Options: ``path`` (the lake), ``index`` (index home, when not ``PATH/_lakeseek``), ``name``
(which index), and the partition sizing knobs ``maxPartitionBytes``, ``openCostInBytes``
and ``parallelism`` (defaults: the session's, as seen by :func:`register`).

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

import datetime as dt
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import reduce
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import datasource as spark_filters
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructField, StructType

import lakeseek
from lakeseek.evolution import open_files
from lakeseek.exceptions import LakeseekError
from lakeseek.expressions import And, Comparison, Constant, In, IsNull, Like, Literal, Not, Or, Predicate
from lakeseek.expressions.arrow import to_arrow
from lakeseek.expressions.binding import bind, resolve_column, value_type
from lakeseek.index import Index
from lakeseek.io import storage_for
from lakeseek.lake import list_data_files, reading_data_files
from lakeseek.planning import Plan, full_scan

FORMAT = "lakeseek"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
TIME_ZONE_CONF = "spark.sql.session.timeZone"
log = logging.getLogger("lakeseek")


# -- registration and partition sizing ---------------------------------------------------------
@dataclass(frozen=True)
class ScanSettings:
    """How a scan's files are packed into Spark partitions (Spark's own file-source rules).

    The Python planning worker has no SparkSession to ask, so :func:`register` takes these
    from the session once and they travel with the registered data source class.
    """

    max_partition_bytes: int = 128 * 1024 * 1024  # spark.sql.files.maxPartitionBytes
    open_cost_bytes: int = 4 * 1024 * 1024  # spark.sql.files.openCostInBytes
    parallelism: int = field(default_factory=lambda: os.cpu_count() or 1)
    # The session time zone when a task cannot see its query's (see session_time_zone): the
    # JVM's default zone, which is Spark's when spark.sql.session.timeZone is not set.
    time_zone: str = "UTC"

    @classmethod
    def of(cls, spark: SparkSession) -> ScanSettings:
        """The settings of ``spark``: its file-source conf and default parallelism."""
        conf = spark.conf
        try:
            parallelism = spark.sparkContext.defaultParallelism
        except Exception:  # Spark Connect has no SparkContext
            parallelism = int(conf.get("spark.default.parallelism", "0") or 0) or (os.cpu_count() or 1)
        try:
            time_zone = spark._jvm.java.util.TimeZone.getDefault().getID()
        except Exception:  # Spark Connect: no JVM at hand; the session's zone now is the best guess
            time_zone = conf.get(TIME_ZONE_CONF, "UTC")
        return cls(
            max_partition_bytes=parse_bytes(conf.get("spark.sql.files.maxPartitionBytes", "128MB")),
            open_cost_bytes=parse_bytes(conf.get("spark.sql.files.openCostInBytes", "4MB")),
            parallelism=max(1, int(parallelism)),
            time_zone=time_zone,
        )

    def with_options(self, options: Mapping[str, str]) -> ScanSettings:
        """These settings overridden by the read options of the same (Spark-like) names."""
        max_bytes = _option(options, "maxPartitionBytes")
        open_cost = _option(options, "openCostInBytes")
        parallelism = _option(options, "parallelism")
        return ScanSettings(
            parse_bytes(max_bytes) if max_bytes else self.max_partition_bytes,
            parse_bytes(open_cost) if open_cost else self.open_cost_bytes,
            max(1, int(parallelism)) if parallelism else self.parallelism,
            self.time_zone,
        )


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def parse_bytes(text: str | int) -> int:
    """A Spark byte size (``134217728``, ``"128MB"``, ``"4m"``, ``"1g"``) in bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)b?\s*", str(text).lower())
    if not match:
        raise LakeseekError(f"invalid byte size {text!r} (expected e.g. 134217728, 128m or 128MB)")
    return int(match.group(1)) * _UNITS[match.group(2)]


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
        """The lake's schema as Spark reads it now (:meth:`lakeseek.Index.spark_schema`), so the
        table has ``spark.read.option("mergeSchema", "true").parquet(path).schema`` (partition
        columns last; none with ``recursiveFileLookup``, which turns partition discovery off).

        For ``CREATE TABLE ... USING lakeseek`` the options also ride in the first field's
        metadata: Spark (4.1 to 4.3 at least) hands a catalog table's properties to
        ``getTable`` and drops them, so a table's reader gets no options, only its schema.
        """
        index = open_source_index(self.options)
        schema = index.spark_schema()
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
    path = _option(options, "path")
    if not path:
        raise LakeseekError(
            "the lakeseek data source needs the lake's path: "
            "spark.read.format('lakeseek').load(PATH) or CREATE TABLE ... USING lakeseek OPTIONS (path 'PATH')"
        )
    try:
        # "once": a scan lists the lake once, and plans and sizes its files from that listing.
        return lakeseek.open_index(
            path, index=_option(options, "index"), name=_option(options, "name"), lake_listing="once"
        )
    except LakeseekError as error:
        raise type(error)(f"lakeseek data source over {path}: {error}") from error


SOURCE_OPTIONS_KEY = "lakeseek.options"
_SOURCE_OPTIONS = ("path", "index", "name", "maxPartitionBytes", "openCostInBytes", "parallelism")


def recursive_file_lookup(options: Mapping[str, str]) -> bool:
    """Whether the read lists the lake recursively without partition discovery (Spark's option)."""
    return (_option(options, "recursiveFileLookup") or "").strip().lower() == "true"


def _creates_table(options: Mapping[str, str]) -> bool:
    # The catalog adds the table's provider to the properties it infers a new table's schema with.
    return _option(options, "provider") is not None


def with_source_options(schema: StructType, options: Mapping[str, str]) -> StructType:
    """``schema`` with the lakeseek options in its first field's metadata (see ``schema()``)."""
    kept = {key: value for key in _SOURCE_OPTIONS if (value := _option(options, key)) is not None}
    first, *rest = schema.fields
    metadata = {**(first.metadata or {}), SOURCE_OPTIONS_KEY: json.dumps(kept, sort_keys=True)}
    return StructType([StructField(first.name, first.dataType, first.nullable, metadata), *rest])


def source_options(schema: StructType) -> dict[str, str]:
    """The options :func:`with_source_options` put in ``schema`` ({} when there are none)."""
    if not schema.fields:
        return {}
    raw = (schema.fields[0].metadata or {}).get(SOURCE_OPTIONS_KEY)
    return dict(json.loads(raw)) if raw else {}


def _option(options: Mapping[str, str], key: str) -> str | None:
    # Spark passes a case-insensitive dict; plain dicts (tests, direct use) are matched the same way.
    if key in options:
        return options[key]
    lowered = key.lower()
    return next((value for name, value in options.items() if name.lower() == lowered), None)


# -- Spark filters -> lakeseek predicates ------------------------------------------------------
@dataclass(frozen=True)
class Both(spark_filters.Filter):
    """``left AND right``: the JVM pushes these, the Python data source API does not."""

    left: spark_filters.Filter
    right: spark_filters.Filter


@dataclass(frozen=True)
class Either(spark_filters.Filter):
    """``left OR right``."""

    left: spark_filters.Filter
    right: spark_filters.Filter


_COMPARISONS = {
    spark_filters.EqualTo: "=",
    spark_filters.GreaterThan: ">",
    spark_filters.GreaterThanOrEqual: ">=",
    spark_filters.LessThan: "<",
    spark_filters.LessThanOrEqual: "<=",
}


def to_predicate(spark_filter: spark_filters.Filter, schema: pa.Schema) -> Predicate | None:
    """An unbound lakeseek predicate that means what ``spark_filter`` means in Spark, or None
    when there is none lakeseek evaluates with Spark's semantics.

    None for: nested column references; literals whose Python type does
    not match the column's type family (Spark only pushes a filter whose literal already
    has the column's type, so a mismatch means something unusual: keep out of its way).
    """
    if isinstance(spark_filter, spark_filters.Not):
        operand = to_predicate(spark_filter.child, schema)
        return None if operand is None else Not(operand)
    if isinstance(spark_filter, Both | Either):
        left, right = to_predicate(spark_filter.left, schema), to_predicate(spark_filter.right, schema)
        if left is None or right is None:
            return None
        return And(left, right) if isinstance(spark_filter, Both) else Or(left, right)
    path = getattr(spark_filter, "attribute", None)
    if path is None or len(path) != 1:
        return None
    try:
        column_type = value_type(resolve_column(path[0], schema).type)
    except LakeseekError:
        return None
    column = path[0]
    if isinstance(spark_filter, spark_filters.IsNull):
        return IsNull(column)
    if isinstance(spark_filter, spark_filters.IsNotNull):
        return Not(IsNull(column))
    op = _COMPARISONS.get(type(spark_filter))
    if op is not None:
        literal = spark_literal(spark_filter.value, column_type)
        return None if literal is None else Comparison(op, column, literal)
    if isinstance(spark_filter, spark_filters.EqualNullSafe):
        if spark_filter.value is None:
            return IsNull(column)
        literal = spark_literal(spark_filter.value, column_type)
        # a <=> v is never NULL: FALSE where a is NULL, so NOT (a <=> v) keeps those rows.
        return None if literal is None else And(Not(IsNull(column)), Comparison("=", column, literal))
    if isinstance(spark_filter, spark_filters.In):
        literals = [spark_literal(value, column_type) for value in spark_filter.value]
        # An empty IN list is FALSE even for NULL in Spark, unlike lakeseek's IN: not pushed.
        return None if not literals or None in literals else In(column, tuple(literals))
    if isinstance(spark_filter, _STRING_MATCHES):
        text = _like_escape(spark_filter.value)
        if isinstance(spark_filter, spark_filters.StringStartsWith):
            return Like(column, text + "%")
        if isinstance(spark_filter, spark_filters.StringEndsWith):
            return Like(column, "%" + text)
        return Like(column, "%" + text + "%")
    return None


_STRING_MATCHES = (spark_filters.StringStartsWith, spark_filters.StringEndsWith, spark_filters.StringContains)


def _like_escape(text: str) -> str:
    """``text`` as a LIKE pattern matching itself (see lakeseek.expressions.arrow.like)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def spark_literal(value: Any, column_type: pa.DataType) -> Literal | None:
    """A pushed filter's Python value as a lakeseek literal for a column of ``column_type``.

    The kinds are the ones :func:`lakeseek.expressions.binding.typed_literal` reads; None
    when the pair is not one to push (see :func:`to_predicate`).
    """
    t = column_type
    if value is None:
        return Literal("null", None)
    if pa.types.is_floating(t) or isinstance(value, float):
        # lakeseek's Arrow filter orders NaN as Spark does (see lakeseek.expressions.arrow).
        if pa.types.is_floating(t) and isinstance(value, int | float) and not isinstance(value, bool):
            return Literal("float", float(value))
        return None
    if isinstance(value, bool):
        return Literal("bool", value) if pa.types.is_boolean(t) else None
    if isinstance(value, int | Decimal):
        if not (pa.types.is_integer(t) or pa.types.is_decimal(t)):
            return None
        if isinstance(value, int):
            return Literal("int", value)
        return Literal("decimal", value) if value.is_finite() else None
    if isinstance(value, str):
        return Literal("string", value) if pa.types.is_string(t) or pa.types.is_large_string(t) else None
    if isinstance(value, bytes | bytearray):
        binary = pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
        return Literal("hex", bytes(value)) if binary else None
    if isinstance(value, dt.datetime):
        # TIMESTAMP (an instant: aware, UTC) goes with a zoned column, TIMESTAMP_NTZ (naive)
        # with a zoneless one; a mix would need a time zone Spark and lakeseek may not share.
        if not pa.types.is_timestamp(t) or (value.tzinfo is None) != (t.tz is None):
            return None
        return Literal("timestamp", value.isoformat())
    if isinstance(value, dt.date):
        return Literal("date", value.isoformat()) if pa.types.is_date(t) else None
    return None


@dataclass(frozen=True)
class Pushed:
    """A Spark filter lakeseek can use: unbound (for the index's planner) and bound (for pyarrow)."""

    spark_filter: spark_filters.Filter
    predicate: Predicate
    bound: Predicate


def usable(spark_filter: spark_filters.Filter, schema: pa.Schema) -> Pushed | None:
    """``spark_filter`` as a predicate the index and pyarrow evaluate as Spark does, or None."""
    predicate = to_predicate(spark_filter, schema)
    if predicate is None:
        return None
    try:
        bound = bind(predicate, schema)
        to_arrow(bound, schema)  # fails now rather than on an executor
    except (LakeseekError, pa.ArrowException, TypeError, ValueError) as error:
        log.debug("filter %s not used by lakeseek: %s", spark_filter, error)
        return None
    return Pushed(spark_filter, predicate, bound)


def _conjunction(predicates: Sequence[Predicate]) -> Predicate | None:
    return reduce(And, predicates) if predicates else None


# -- the reader --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScanSpec:
    """What every task of one scan shares: where the lake is, how to read it, what to keep.

    Held by the reader, which Spark pickles into the read function it ships to executors,
    so it travels once per task rather than once per partition, and no task opens the index.
    """

    location: str  # the lake root, as storage_for() takes it
    dataset_schema: pa.Schema  # the index's Arrow schema, plus any column it leaves out
    columns: tuple[str, ...]  # Spark's columns, in its order
    partition_columns: tuple[str, ...]
    predicate: Predicate | None  # bound: the AND of the usable filters
    time_zone: str = "UTC"  # of timestamp partition values when the task cannot see its session's


@dataclass
class LakeseekPartition(InputPartition):
    """Some candidate files of a scan (relative paths) and, for some, the only row groups to read."""

    files: tuple[str, ...]
    row_groups: dict[str, tuple[int, ...]] = field(default_factory=dict)
    size: int = 0  # bytes, as listed


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
        self.arrow_schema: pa.Schema = self._index.schema  # the lake's now (lakeseek.evolution)
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
        sizes = self._file_sizes()
        listed = [(path, sizes.get(path)) for path in chosen.files]
        # Spark's file scans skip 0-byte files (no Parquet footer to read): so does this one.
        files = [(path, size or 0) for path, size in listed if size != 0]
        return [
            LakeseekPartition(
                tuple(group),
                {path: chosen.row_groups[path] for path in group if path in chosen.row_groups},
                sum(sizes.get(path, 0) for path in group),
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
            location=index.storage.uri(index.lake_root),
            dataset_schema=dataset_schema(self.arrow_schema, self.schema),
            columns=tuple(self.schema.fieldNames()),
            partition_columns=() if recursive_file_lookup(self.options) else tuple(index.root.partition_columns),
            predicate=_conjunction([pushed.bound for pushed in self.pushed]),
            time_zone=self.settings.time_zone,
        )

    def _file_sizes(self) -> dict[str, int]:
        try:
            files = self.index.lake_state().files  # the listing the plan used (lake_listing="once")
        except LakeseekError:
            files = list_data_files(self.index.storage, self.index.lake_root, self.index.location.home)
        return {path: stamp[0] for path, stamp in files.items()}


def plan_scan(index: Index, predicates: Sequence[Predicate]) -> Plan:
    """The files a scan with the AND of ``predicates`` reads: the index's plan, or every file
    of the lake when the index cannot plan (it only accelerates; it never decides rows)."""
    where = _conjunction(predicates) or Constant(True)
    try:
        plan = index.plan(where)
    except LakeseekError as error:
        log.warning("lakeseek could not plan with the index (%s): every file of the lake is read", error)
        plan = full_scan(
            list_data_files(index.storage, index.lake_root, index.location.home), f"planning failed: {error}"
        )
    log.info(
        "lakeseek: %d of %d files to read%s",
        len(plan.files),
        plan.total_files,
        "" if plan.index_used else f" ({plan.reason})",
    )
    return plan


def dataset_schema(arrow_schema: pa.Schema, schema: StructType) -> pa.Schema:
    """The schema to read the files with: the index's (the files' own Arrow types, which the
    predicate is bound to), plus Spark's type for any column it leaves out (nested ones)."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = list(arrow_schema)
    for spark_field in schema.fields:
        if spark_field.name not in arrow_schema.names:
            fields.append(pa.field(spark_field.name, to_arrow_type(spark_field.dataType, timezone="UTC")))
    return pa.schema(fields, metadata=arrow_schema.metadata)  # with the columns' other spellings


def output_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark requires of the batches a Python data source returns."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def read_partition(spec: ScanSpec, partition: LakeseekPartition, schema: StructType) -> Iterator[pa.RecordBatch]:
    """The rows of the partition's files that pass the pushed filters, in Spark's Arrow types.

    Runs on an executor: no index is opened, only the data files.
    """
    storage, lake_root = storage_for(spec.location)
    dataset = open_files(
        storage,
        lake_root,
        list(partition.files),
        spec.dataset_schema,
        spec.partition_columns,
        partition.row_groups or None,
        time_zone=session_time_zone() or spec.time_zone,  # partition timestamps, as Spark reads them
    )
    arrow_filter = None if spec.predicate is None else to_arrow(spec.predicate, spec.dataset_schema)
    target = output_schema(schema)
    with reading_data_files(storage, lake_root, partition.files):  # a damaged or vanished file, named
        for batch in dataset.to_batches(columns=list(spec.columns), filter=arrow_filter):
            if batch.num_rows:
                yield batch if batch.schema.equals(target) else batch.cast(target)


def session_time_zone() -> str | None:
    """The session time zone of the query the running task belongs to, or None (not in a task,
    or the zone is not set: then it is the JVM's default). Spark SQL hands a query's session
    settings to its tasks as local properties (SQLExecution.withSQLConfPropagated)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.getLocalProperty(TIME_ZONE_CONF) if context is not None else None


def pack(files: Sequence[tuple[str, int]], settings: ScanSettings) -> list[list[str]]:
    """Group ``(path, size)`` into partitions as Spark's FilePartition does: a target of
    ``min(maxPartitionBytes, max(openCost, total / parallelism))`` bytes, each file costing
    its size plus the open cost, biggest files first. Small scans thus still spread over
    every core, big ones get ~128 MB tasks, and no partition is empty. A file is never split."""
    if not files:
        return []
    cost = settings.open_cost_bytes
    total = sum(size + cost for _, size in files)
    target = min(settings.max_partition_bytes, max(cost, total // settings.parallelism))
    groups: list[list[str]] = []
    current: list[str] = []
    current_size = 0
    for path, size in sorted(files, key=lambda item: (-item[1], item[0])):
        if current and current_size + size > target:
            groups.append(current)
            current, current_size = [], 0
        current.append(path)
        current_size += size + cost
    groups.append(current)
    return groups


__all__ = [
    "FORMAT",
    "LakeseekDataSource",
    "LakeseekPartition",
    "LakeseekReader",
    "ScanSettings",
    "ScanSpec",
    "pack",
    "parse_bytes",
    "plan_scan",
    "read_partition",
    "register",
    "spark_literal",
    "to_predicate",
    "usable",
]
