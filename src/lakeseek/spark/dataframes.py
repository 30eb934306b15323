"""An index's answers as Spark DataFrames: the rows of a predicate over the candidate files
(:func:`to_spark`), the lake's rows from a covering index's own files (:func:`covering_frame`),
and batch lookups, a DataFrame of keys in and ``(key, file)`` pairs out (:func:`locate_spark`)."""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from lakeseek.exceptions import LakeseekError, PredicateTypeError, UnsupportedLakeError
from lakeseek.expressions import Predicate, literals_of
from lakeseek.expressions.sql import to_spark_sql
from lakeseek.index import selected_columns
from lakeseek.io.hadoop import literal_path
from lakeseek.kinds.base import FILE_ID, KEY, ROW_FILE
from lakeseek.lake.formats import PARQUET
from lakeseek.lake.schemas import MAX_DECIMAL_PRECISION, column_ids
from lakeseek.lake.state import LakeState
from lakeseek.locate import FILE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from lakeseek.index import Index
    from lakeseek.io import Stamp
    from lakeseek.sources.base import LakeSource


def spark_schema(index: Index, state: LakeState | None = None) -> StructType:
    """The lake's schema as Spark reads it now (partition columns last): the index's ``schema`` in
    Spark's types, as ``spark.read.option("mergeSchema", "true").parquet(SOURCE)`` infers it."""
    from pyspark.sql.types import DecimalType, StructType

    schema = StructType.fromJson(json.loads(index.spark_schema_json(state)))
    for field in schema.fields:
        if isinstance(field.dataType, DecimalType) and field.dataType.precision > MAX_DECIMAL_PRECISION:
            raise UnsupportedLakeError(
                f"Spark cannot read the lake's columns: '{field.name}' is {field.dataType.simpleString()}, "
                f"and Spark reads no decimal of more than {MAX_DECIMAL_PRECISION} digits"
            )
    return schema


def arrow_frame(spark: SparkSession, table: pa.Table, schema=None) -> DataFrame:
    """``table`` as a DataFrame, without its empty record batches: PySpark (4.3) ends its read
    of the Arrow stream at the first one, and every later batch's rows were lost."""
    table = pa.Table.from_batches([batch for batch in table.to_batches() if batch.num_rows], schema=table.schema)
    return spark.createDataFrame(table, schema)


def to_spark(index: Index, spark: SparkSession, where: str, columns: list[str] | str | None = None) -> DataFrame:
    """A Spark DataFrame of the rows matching ``where`` (``columns`` of them; None: all), over
    the index's candidate files only, or from a covering index's own rows when it carries
    every column the query needs (then no data file it covers is opened).

    Same rows as ``spark.read.parquet(SOURCE).where(where)`` when Spark reads the predicate
    as lakeseek does (see :func:`lakeseek.expressions.sql.to_spark_sql`); a CSV or JSON lake's
    files are read by Spark's reader of that format with the index's schema.
    """
    from pyspark.sql.types import StructType

    state = index.lake_state()
    schema = spark_schema(index, state)
    predicate = index.bind(where, state)
    _refuse_zoned_timestamps(spark, predicate.columns(), index.schema_of(state))
    covered = index.covered_read(predicate, columns, state)
    if covered is not None:
        rows = covered[0]
        return arrow_frame(spark, rows, StructType([schema[name] for name in rows.column_names]))
    chosen = index.plan(where, state=state)
    if not chosen.files:
        frame = spark.createDataFrame([], schema)
    else:
        unsafe = _statistics_mislead(predicate, index.schema_of(state))
        frame = read_files(spark, index.lake, schema, chosen.files, state.files, statistics_unsafe=unsafe)
        frame = frame.where(to_spark_sql(where))
    if columns is None:
        return frame
    names = selected_columns(columns, index.schema_of(state))
    return frame.select(*(frame[_quoted(name)] for name in names))


# Spark hands a date or timestamp literal to Parquet and to data sources through Java's hybrid
# (Julian before 1582-10-15) calendar, where the data's days are proleptic Gregorian: DATE
# '1582-10-10' skipped the row group holding it. With a margin for time zones.
GREGORIAN_SAFE = dt.date(1583, 1, 1)


def _statistics_mislead(predicate: Predicate, lake_schema: pa.Schema) -> bool:
    """Whether Spark's Parquet reader, skipping row groups by their statistics, may skip rows
    ``predicate`` keeps: when it filters a floating-point column (see ``SPARK_FLOAT_SAFE_OPTIONS``)
    or compares with a date or timestamp before the Gregorian calendar's start."""
    if any(pa.types.is_floating(field.type) for field in lake_schema if field.name in predicate.columns()):
        return True
    for literal in literals_of(predicate):
        value = literal.value
        if isinstance(value, pa.Scalar) and pa.types.is_temporal(value.type):
            return True  # past the years Python holds: before 1 or after 9999
        if isinstance(value, dt.datetime):
            value = (value.astimezone(dt.timezone.utc) if value.tzinfo else value).date()
        if isinstance(value, dt.date) and value < GREGORIAN_SAFE:
            return True
    return False


_UTC_NAMES = {"UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00", "UCT", "Universal", "Zulu"}


def _refuse_zoned_timestamps(spark: SparkSession, columns: set[str], lake_schema: pa.Schema) -> None:
    """lakeseek chooses the files for a timestamp comparison in UTC; Spark then filters them in
    its session time zone: outside UTC the two read a literal as other instants, and rows of
    neither answer would come back. Refused instead (the ``lakeseek`` format has no such limit)."""
    zone = spark.conf.get("spark.sql.session.timeZone")
    zoned = [
        name for name in columns if name in lake_schema.names and pa.types.is_timestamp(lake_schema.field(name).type)
    ]
    if zoned and zone not in _UTC_NAMES:
        raise LakeseekError(
            f"to_spark reads the predicate's timestamps in UTC, Spark in the session time zone ({zone}): set "
            f"spark.sql.session.timeZone to UTC, or read with format 'lakeseek' (column {sorted(zoned)[0]!r})"
        )


def covering_frame(index: Index, spark: SparkSession, column: str | None = None) -> DataFrame:
    """Every row of the lake, with the columns a covering index carries, as Spark reads them
    from the index's own Parquet row files (Hyperspace's covering scan) and, for the lake's
    files the index does not cover yet, from the lake (its hybrid scan); rows of files removed
    or rewritten since indexing are left out. Registered as a view, it is a SQL table whose
    queries open no data file the index covers; the row files are sorted by ``column`` (an
    indexed column; None: the index's only one), so Spark's Parquet reader skips the row
    groups a filter on it excludes. A carried column the lake widened since indexing (an int
    now a bigint) is cast; one whose type changed otherwise (a number now text) is left out
    until a refresh. The row files are checked to be the index's when the frame is made
    (IndexCorruptError); Spark, which reads them when the frame is queried, checks only their
    pages' checksums."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType, IntegerType, StructField, StructType

    state = index.lake_state()
    column = index.locate_column(column, state)
    found = index.kind_reader.row_files(column) if index.root.is_active else None
    if found is None:
        raise LakeseekError(
            f"index '{index.name}' ({index.root.kind}) carries no rows: covering_frame needs a covering index"
        )
    paths, carried = found
    schema = spark_schema(index, state)
    recorded = StructType.fromJson(json.loads(index.root.spark_schema))
    # A carried column the lake dropped since, or whose name is another column's now (an
    # Iceberg table dropped it and added another: its field ids differ), is left out.
    recorded_arrow, now_arrow = index.root.schema, index.schema_of(state)
    kept = [
        name
        for name in carried
        if name in now_arrow.names and column_ids(recorded_arrow.field(name)) == column_ids(now_arrow.field(name))
    ]
    # The row files hold a carried column in its type when indexed; one the lake widened since
    # (an int now a bigint) is cast, which keeps every value. Any other change leaves it out.
    stored = {
        name: recorded[name] if name in recorded.fieldNames() and not index.serves(name, state) else schema[name]
        for name in kept
    }
    carried_schema = StructType([schema[n] for n in kept if _widens(stored[n].dataType, schema[n].dataType)])
    unsafe = any(isinstance(field.dataType, FloatType | DoubleType) for field in carried_schema.fields)
    parts = []
    if paths:
        uris = [literal_path(index.storage.uri(f"{index.index_dir}/{path}")) for path in paths]
        row_fields = [stored[field.name] for field in carried_schema.fields]
        with_file = StructType([*row_fields, StructField(ROW_FILE, IntegerType())])
        # parquet-mr checks the pages' checksums only when asked: a damaged row file fails the
        # query instead of answering from what it now says.
        checked = spark.read.schema(with_file).option("parquet.page.verify-checksum.enabled", "true")
        rows = PARQUET.spark_read(checked, uris, statistics_unsafe=unsafe)
        widened = [field for old, field in zip(row_fields, carried_schema.fields, strict=True) if old != field]
        for field in widened:
            rows = rows.withColumn(field.name, rows[_quoted(field.name)].cast(field.dataType))
        if index.root.lineage.removed or state.removed or state.changed:
            # Rows of files removed or rewritten since (kept by the row files until a full optimize).
            live = arrow_frame(spark, pa.table({ROW_FILE: pa.array(list(state.indexed), pa.int32())}))
            rows = rows.join(F.broadcast(live), ROW_FILE, "left_semi")
        parts.append(rows.drop(ROW_FILE))
    if state.unindexed:
        frame = read_files(spark, index.lake, schema, sorted(state.unindexed), state.files, statistics_unsafe=unsafe)
        parts.append(frame.select(*carried_schema.fieldNames()))
    if not parts:
        return spark.createDataFrame([], carried_schema)
    return functools.reduce(lambda a, b: a.unionByName(b), parts)


def _quoted(name: str) -> str:
    """``name`` as a Spark column reference (a name may hold '.' or '`')."""
    return f"`{name.replace('`', '``')}`"


def _widens(old, new) -> bool:
    """Whether Spark's cast of every value of type ``old`` to ``new`` is that value exactly: the
    same type, or one the lake's schema widens it to (lakeseek.lake.schemas) other than text."""
    from pyspark.sql.types import (
        ByteType,
        DateType,
        DecimalType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        ShortType,
        TimestampNTZType,
    )

    if old == new:
        return True
    integers = (ByteType, ShortType, IntegerType, LongType)
    rank = {ByteType: 0, ShortType: 1, IntegerType: 2, LongType: 3}
    if isinstance(old, integers) and isinstance(new, integers):
        return rank[type(old)] <= rank[type(new)]
    if isinstance(old, ByteType | ShortType | IntegerType | FloatType) and isinstance(new, DoubleType):
        return True
    if isinstance(old, integers) and isinstance(new, DecimalType):
        digits = {ByteType: 3, ShortType: 5, IntegerType: 10, LongType: 19}[type(old)]
        return new.precision - new.scale >= digits
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    return isinstance(old, DateType) and isinstance(new, TimestampNTZType)


def read_files(
    spark: SparkSession,
    lake: LakeSource,
    schema: StructType,
    files: list[str],
    stamps: Mapping[str, Stamp],
    *,
    statistics_unsafe: bool = True,
) -> DataFrame:
    """Spark's reader of the lake's format over these files of the lake, with the lake's
    ``schema`` (partition values taken below the lake's root), without the rows the lake
    deleted from them (see :meth:`lakeseek.sources.base.LakeSource.deleted_rows`): those are
    told apart by the row's position in its Parquet file (``_metadata.row_index``).
    ``statistics_unsafe``: whether Parquet's statistics may mislead a filter of the query (see
    DataFormat.spark_read)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NullType

    misread = lake.spark_misread_partitions(files)
    if misread is not None:
        raise UnsupportedLakeError(misread)
    lake.check_columns(files, stamps)
    read_as = lake.data_format.spark_reading_schema(schema)
    # basePath is taken as it is, never as a glob pattern.
    listing = spark.read.schema(read_as).option("basePath", lake.uri).options(**lake.spark_listing_options)

    def spark_read(uris: list[str]) -> DataFrame:
        return lake.data_format.spark_read(listing, uris, statistics_unsafe=statistics_unsafe)

    deleted = {path: rows for path in files if (rows := lake.deleted_rows(path, stamps.get(path))) is not None}
    whole = [literal_path(lake.file_uri(path)) for path in files if path not in deleted]
    frames = [spark_read(whole)] if whole else []
    for path, rows in deleted.items():
        frame = spark_read([literal_path(lake.file_uri(path))])
        positions = arrow_frame(spark, pa.table({_ROW: pa.array(rows, pa.int64())}))
        with_positions = frame.withColumn(_ROW, F.col("_metadata.row_index"))
        frames.append(with_positions.join(F.broadcast(positions), _ROW, "left_anti").drop(_ROW))
    frame = functools.reduce(lambda a, b: a.unionByName(b), frames)
    for field, read in zip(schema.fields, read_as.fields, strict=True):
        if field.dataType != read.dataType:  # read as another type by the format's reader
            # Spark casts nothing to NULL's type (VOID): such a column holds NULL in every file.
            value = F.lit(None) if isinstance(field.dataType, NullType) else frame[_quoted(field.name)]
            frame = frame.withColumn(field.name, value.cast(field.dataType))
    return frame


_ROW = "__lakeseek_row_index"


def locate_spark(index: Index, keys: DataFrame, column: str | None = None, key_column: str | None = None) -> DataFrame:
    """:meth:`lakeseek.Index.locate` on Spark: a DataFrame of keys in (its ``key_column``, or
    its only column), a DataFrame of ``(key, file)`` pairs out, for key sets too large for
    one machine. Files are URIs.

    The index's entry files are Parquet (where its kind has them), so Spark reads the column's
    entries directly and joins them with the keys (a broadcast or shuffle join, Spark's
    choice) and with the live lineage.
    Files the index does not cover are read (the one column) and joined too, so the pairs
    are exact, as ``locate``'s. A key pairs as Spark compares the column with it.
    """
    from pyspark.sql import functions as F

    column = index.locate_column(column)

    spark = keys.sparkSession
    if key_column is None:
        if len(keys.columns) != 1:
            raise ValueError(f"the keys DataFrame has several columns ({', '.join(keys.columns)}): name key_column")
        key_column = keys.columns[0]
    state = index.lake_state()
    lake = index.lake
    wanted = keys.select(F.col(key_column).alias(KEY)).where(F.col(KEY).isNotNull()).distinct()
    entry_files = index.kind_reader.entry_files(column)
    uris = [index.storage.uri(f"{index.index_dir}/{path}") for path in entry_files or []]
    lineage = pa.table(
        {
            FILE_ID: pa.array(list(state.indexed), pa.int32()),
            FILE: pa.array([lake.file_uri(p) for p in state.indexed.values()], pa.string()),
        }
    )
    parts = []
    unindexed = state.unindexed
    if not index.root.is_active or not index.serves(column, state) or entry_files is None:
        # A deleted or unreadable index is not used, nor one whose column changed type since, nor one of a
        # kind without entry files: every file is read.
        uris, unindexed = [], list(state.files)
    if uris and len(lineage):
        entries = spark.read.parquet(*[literal_path(uri) for uri in uris]).select(KEY, FILE_ID)
        live = arrow_frame(spark, lineage)
        # distinct: with row-group precision a key has one entry per row group of a file.
        parts.append(_matching(entries, wanted).join(F.broadcast(live), FILE_ID).select(KEY, FILE).distinct())
    schema = spark_schema(index) if unindexed else None
    for path in unindexed:
        uri = lake.file_uri(path)
        rows = read_files(spark, lake, schema, [path], state.files, statistics_unsafe=False)  # joined, not filtered
        values = rows.select(F.col(column).alias(KEY)).distinct()
        held = _matching(values, wanted).withColumn(FILE, F.lit(uri))
        parts.append(held)
    if not parts:
        return spark.createDataFrame([], f"{KEY} string, {FILE} string").limit(0)
    return functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)


def _matching(values: DataFrame, keys: DataFrame) -> DataFrame:
    """The rows of ``values`` whose key some key equals, as ``locate`` pairs them: as Spark
    compares the column with the key (a string cast to the column's family, so ``' 5'`` is 5; a
    double the column is cast to, so a double beyond 2**53 equals every bigint rounding to it;
    numbers widened to a common type, so a bigint beyond an int column's range equals none)."""
    from pyspark.errors import AnalysisException

    key_type, value_type = keys.schema[KEY].dataType, values.schema[KEY].dataType
    if key_type == value_type:
        return values.join(keys, KEY)
    other = keys.withColumnRenamed(KEY, _OTHER_KEY)
    try:
        # distinct: several keys equal one value ('5' and ' 5' are 5).
        return values.join(other, values[KEY] == other[_OTHER_KEY]).drop(_OTHER_KEY).distinct()
    except AnalysisException as error:  # Spark does not compare the two types (a timestamp with a bigint)
        raise PredicateTypeError(
            f"keys of type {key_type.simpleString()} cannot be compared with the column's "
            f"{value_type.simpleString()} values (Spark: {error.getCondition()})"
        ) from None


_OTHER_KEY = "_lakeseek_key"
