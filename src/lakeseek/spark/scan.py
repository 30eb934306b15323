"""One scan of the Spark data sources: its files (the index's plan), packed into Spark
partitions as Spark packs a Parquet scan's, and read on executors with pyarrow."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from lakeseek.exceptions import LakeseekError
from lakeseek.expressions import Constant, Predicate
from lakeseek.expressions.arrow import matching_batches
from lakeseek.index import Index
from lakeseek.io import Stamp
from lakeseek.lake.files import reading_data_files
from lakeseek.planning import Fallback, Plan, full_scan
from lakeseek.sources.base import LakeAddress
from lakeseek.spark.filters import conjunction

TIME_ZONE_CONF = "spark.sql.session.timeZone"
log = logging.getLogger("lakeseek")


def read_option(options: Mapping[str, str], key: str) -> str | None:
    """A read option by its name in any case: Spark passes a case-insensitive dict; plain
    dicts (tests, direct use) are matched the same way."""
    if key in options:
        return options[key]
    lowered = key.lower()
    return next((value for name, value in options.items() if name.lower() == lowered), None)


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
        max_bytes = read_option(options, "maxPartitionBytes")
        open_cost = read_option(options, "openCostInBytes")
        parallelism = read_option(options, "parallelism")
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


@dataclass(frozen=True)
class ScanSpec:
    """What every task of one scan shares: where the lake is, how to read it, what to keep.

    Held by the reader, which Spark pickles into the read function it ships to executors,
    so it travels once per task rather than once per partition, and no task opens the index.
    """

    lake: LakeAddress
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
    # As the plan saw them: read with no HEAD request, and without the rows the lake deleted.
    stamps: dict[str, Stamp] = field(default_factory=dict)


def plan_scan(index: Index, predicates: Sequence[Predicate]) -> Plan:
    """The files a scan with the AND of ``predicates`` reads: the index's plan, or every file
    of the lake when the index cannot plan (it only accelerates; it never decides rows)."""
    where = conjunction(predicates) or Constant(True)
    try:
        plan = index.plan(where)
    except LakeseekError as error:
        log.warning("lakeseek could not plan with the index (%s): every file of the lake is read", error)
        files = index.lake.snapshot(exclude=index.location.home).files
        plan = full_scan(files, f"planning failed: {error}", Fallback.PLANNING_FAILED)
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
    source = spec.lake.open()
    time_zone = session_time_zone() or spec.time_zone  # partition timestamps, as Spark reads them
    target = output_schema(schema)
    with reading_data_files(source, partition.files):  # a damaged or vanished file, named
        # File by file: a file whose statistics the filter cannot use is read again guarded
        # before any of its rows are out (see lakeseek.expressions.arrow).
        for path in partition.files:
            dataset = source.dataset(
                [path],
                spec.dataset_schema,
                spec.partition_columns,
                {path: partition.row_groups[path]} if path in partition.row_groups else None,
                time_zone=time_zone,
                stamps={path: partition.stamps[path]} if path in partition.stamps else None,
            )
            for batch in matching_batches(dataset, list(spec.columns), spec.predicate, spec.dataset_schema):
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
