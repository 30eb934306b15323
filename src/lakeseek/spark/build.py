"""Create an index with Spark (the paper's Algorithm 1).

Spark schedules two stages of Arrow-native Python tasks (pyarrow does the per-row work;
Spark's row-based sort and its JVM-to-Python transfer would cost several times more):

0. the driver samples keys from a few files and picks range boundaries per column;
1. *scan*: each task reads a group of lake files once, for all columns, and emits each
   file's distinct ``(value, file_id)`` pairs, split by key range into spill files;
2. *write*: each task takes one key range of one column, sorts its pairs and writes one
   index file of bounded chunks (so index files cover disjoint, ordered key ranges).

The driver then writes the lineage and commits the root as log version 0. Spill files
live under ``<index>/_tmp/<build id>/`` and are removed once the index is committed.
"""

from __future__ import annotations

import itertools
import json
import math
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from lakeseek.exceptions import (
    CommitFailedError,
    IndexAlreadyExistsError,
    LakeNotFoundError,
    LakeseekError,
    SparkJobError,
    UnsupportedColumnError,
)
from lakeseek.expressions.binding import resolve_column
from lakeseek.format import values
from lakeseek.format.index_file import DEFAULT_CHUNK_ROWS, KEY, IndexFileInfo, entry_schema, write_index_file
from lakeseek.format.lineage import Lineage, write_lineage
from lakeseek.format.root import ColumnIndex, LineageRef, Root
from lakeseek.format.values import sort_key
from lakeseek.index import Index, locate
from lakeseek.io import Storage, storage_for
from lakeseek.lake import Stamp, list_data_files, partition_fields
from lakeseek.log import IndexLog
from lakeseek.spark.progress import ProgressCallback, tracked
from lakeseek.spark.schema import lake_schema
from lakeseek.spark.session import default_session

TMP_DIR = "_tmp"
# Index entries per index file (one write task each); fewer files when the lake is small.
ENTRIES_PER_INDEX_FILE = 4_000_000
# Lake bytes per scan task.
BYTES_PER_SCAN_TASK = 64 * 2**20
SAMPLE_FILES = 24
# Up to this many files the lineage lives inside the root, so a cold lookup needs no extra read.
INLINE_LINEAGE_MAX_FILES = 20_000


def create_index(
    source: str,
    columns: list[str] | str,
    index: str | None = None,
    spark: SparkSession | None = None,
    *,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    entries_per_index_file: int = ENTRIES_PER_INDEX_FILE,
    progress: ProgressCallback | None = None,
) -> Index:
    """Index ``columns`` of the Parquet lake at ``source`` and return the new index.

    The index goes to ``SOURCE/_lakeseek`` unless ``index`` names another directory.
    ``spark`` defaults to a local session. ``chunk_rows`` bounds a chunk (the unit a
    lookup reads); ``entries_per_index_file`` sets how many index files (and write tasks)
    a column gets. ``progress`` receives (label, done, total) task counts while Spark runs.
    """
    storage, lake_root, index_dir = locate(source, index)
    names = _column_list(columns)
    log = IndexLog(storage, index_dir)
    if log.versions():
        raise IndexAlreadyExistsError(f"an index already exists at {index_dir}")
    files = dict(sorted(list_data_files(storage, lake_root, index_dir).items()))
    if not files:
        raise LakeNotFoundError(f"no data files in {lake_root}")
    spark = spark or default_session()
    build = _Build(storage, lake_root, index_dir, uuid.uuid4().hex, chunk_rows, entries_per_index_file)
    try:
        root = build.run(spark, names, files, progress)
    except (PySparkException, Py4JError) as error:
        raise SparkJobError(_spark_message(error)) from error
    finally:
        build.clean_up()
    try:
        log.commit(root)
    except CommitFailedError as error:
        raise IndexAlreadyExistsError(f"another writer created an index at {index_dir} first") from error
    return Index(storage, lake_root, index_dir, root)


def _column_list(columns: list[str] | str) -> list[str]:
    names = [c.strip() for c in columns.split(",")] if isinstance(columns, str) else list(columns)
    names = list(dict.fromkeys(n for n in names if n))
    if not names:
        raise UnsupportedColumnError("no columns to index")
    return names


@dataclass(frozen=True)
class _Column:
    """An indexed column as the tasks need it (plain data: it is pickled to executors)."""

    name: str
    position: int
    key_type_text: str
    is_partition: bool

    @property
    def key_type(self) -> pa.DataType:
        return values.deserialize_type(self.key_type_text)


class _Build:
    def __init__(
        self, storage: Storage, lake_root: str, index_dir: str, build_id: str, chunk_rows: int, entries_per_file: int
    ) -> None:
        self.storage = storage
        self.lake_root = lake_root
        self.index_dir = index_dir
        self.build_id = build_id
        self.chunk_rows = chunk_rows
        self.entries_per_file = entries_per_file
        self.tmp_dir = f"{index_dir}/{TMP_DIR}/{build_id}"

    def run(
        self, spark: SparkSession, names: list[str], files: dict[str, Stamp], progress: ProgressCallback | None
    ) -> Root:
        started_ms = int(time.time() * 1000)
        lineage = Lineage(
            ids=list(range(len(files))),
            paths=list(files),
            sizes=[size for size, _ in files.values()],
            mtimes=[mtime for _, mtime in files.values()],
        )
        # Spark's own view of the lake: its schema (partition types included) is what to_spark uses.
        spark_schema = spark.read.parquet(self.storage.uri(self.lake_root)).schema
        first = next(iter(files))
        partition_columns = _partition_columns(spark_schema.names, first)
        schema = lake_schema(
            spark_schema, pq.read_schema(f"{self.lake_root}/{first}", filesystem=self.storage.fs), partition_columns
        )
        columns = [
            _Column(
                field.name,
                i,
                values.serialize_type(values.key_type_for(field.type, field.name)),
                field.name in partition_columns,
            )
            for i, field in enumerate(resolve_column(name, schema) for name in names)
        ]
        boundaries = self._boundaries(columns, lineage, schema, partition_columns)
        scan = _ScanSpec(
            self.storage.uri(self.lake_root),
            self.storage.uri(self.tmp_dir),
            values.serialize_schema(schema),
            tuple(partition_columns),
            tuple(columns),
            {c.name: [values.encode(b, c.key_type) for b in boundaries[c.name]] for c in columns},
        )
        groups = _groups(lineage, spark.sparkContext.defaultParallelism)
        with tracked(spark, "scanning the lake", progress):
            spills = _run_tasks(spark, [(scan, group) for group in groups], _scan_task)
        by_range: dict[tuple[int, int], list[str]] = defaultdict(list)
        for spill in spills:
            by_range[(spill["column"], spill["range"])].append(spill["path"])
        write_tasks = [
            (
                _WriteSpec(
                    self.storage.uri(self.index_dir),
                    f"data/{self.build_id}/c{position}",
                    columns[position],
                    self.chunk_rows,
                ),
                paths,
            )
            for (position, _), paths in sorted(by_range.items())
        ]
        with tracked(spark, "writing index files", progress):
            written = _run_tasks(spark, write_tasks, _write_task)
        index_columns = {}
        for column in columns:
            infos = sorted(
                (
                    IndexFileInfo.from_json(w["info"], column.key_type)
                    for w in written
                    if w["column"] == column.position
                ),
                key=lambda info: sort_key(info.min),
            )
            for before, after in itertools.pairwise(infos):
                if not sort_key(before.max) < sort_key(after.min):
                    raise LakeseekError(f"index files of '{column.name}' overlap; index not committed")
            index_columns[column.name] = ColumnIndex(column.name, column.key_type, tuple(infos))
        return Root(
            version=0,
            operation="create",
            timestamp_ms=started_ms,
            schema=schema,
            spark_schema=spark_schema.json(),
            partition_columns=tuple(partition_columns),
            columns=index_columns,
            lineage=self._lineage_ref(lineage),
        )

    def _lineage_ref(self, lineage: Lineage) -> LineageRef:
        if len(lineage) <= INLINE_LINEAGE_MAX_FILES:
            return LineageRef(len(lineage), sum(lineage.sizes), 0, inline=lineage)
        path = f"lineage/{self.build_id}.parquet"
        size = write_lineage(self.storage, f"{self.index_dir}/{path}", lineage)
        return LineageRef(len(lineage), sum(lineage.sizes), size, path=path)

    def _boundaries(
        self, columns: list[_Column], lineage: Lineage, schema: pa.Schema, partition_columns: list[str]
    ) -> dict[str, list]:
        """Range boundaries per column, from the distinct keys of a few evenly spread files."""
        step = max(1, len(lineage) // SAMPLE_FILES)
        sampled = list(zip(lineage.ids[::step], lineage.paths[::step], strict=True))
        reader = _FileReader(self.storage, self.lake_root, schema, tuple(partition_columns))
        keys: dict[str, list[pa.Array]] = defaultdict(list)
        for _, path in sampled:
            for column, distinct in reader.distinct_keys(path, columns).items():
                keys[column].append(distinct)
        scale = len(lineage) / len(sampled)
        boundaries = {}
        for column in columns:
            sample = pa.concat_arrays(keys[column.name]) if keys[column.name] else pa.array([], column.key_type)
            ranges = max(1, math.ceil(len(sample) * scale / self.entries_per_file))
            boundaries[column.name] = _quantiles(sample, ranges)
        return boundaries

    def clean_up(self) -> None:
        if self.storage.is_dir(self.tmp_dir):
            self.storage.delete_dir(self.tmp_dir)


def _partition_columns(names: list[str], first_file: str) -> list[str]:
    keys = [part.split("=", 1)[0] for part in first_file.split("/")[:-1] if "=" in part]
    return [name for name in names if name in keys]


def _quantiles(sample: pa.Array, ranges: int) -> list:
    """``ranges - 1`` increasing keys splitting the sample's non-null distinct keys evenly."""
    distinct = pc.unique(sample.drop_null())
    if ranges <= 1 or len(distinct) < 2:
        return []
    ordered = distinct.take(pc.sort_indices(distinct))
    picks = [ordered[len(ordered) * i // ranges].as_py() for i in range(1, ranges)]
    return [p for i, p in enumerate(picks) if i == 0 or sort_key(picks[i - 1]) < sort_key(p)]


def _groups(lineage: Lineage, parallelism: int) -> list[list[tuple[int, str]]]:
    """Files split into scan tasks of about BYTES_PER_SCAN_TASK, at least two per core."""
    total = sum(lineage.sizes)
    count = max(1, min(len(lineage), max(2 * parallelism, math.ceil(total / BYTES_PER_SCAN_TASK))))
    target = total / count
    groups: list[list[tuple[int, str]]] = [[]]
    filled = 0
    for file_id, path, size in zip(lineage.ids, lineage.paths, lineage.sizes, strict=True):
        if groups[-1] and filled >= target:
            groups.append([])
            filled = 0
        groups[-1].append((file_id, path))
        filled += size
    return groups


# -- tasks (run on Spark executors) -------------------------------------------------------
def _run_tasks(spark: SparkSession, tasks: list, function: Callable) -> list[dict]:
    """Run ``function(*task)`` for every task, one Spark partition each; gather their JSON results."""
    if not tasks:
        return []

    def run_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for task_number in batch.column(0).to_pylist():
                results = function(*tasks[task_number])
                yield pa.RecordBatch.from_pydict({"result": [json.dumps(r) for r in results]})

    numbered = spark.range(0, len(tasks), 1, numPartitions=len(tasks))
    rows = numbered.mapInArrow(run_partition, "result string").collect()
    return [json.loads(row["result"]) for row in rows]


@dataclass(frozen=True)
class _ScanSpec:
    lake_uri: str
    tmp_uri: str
    schema_text: str
    partition_columns: tuple[str, ...]
    columns: tuple[_Column, ...]
    boundaries: dict[str, list]


class _FileReader:
    """Reads the distinct keys of indexed columns, file by file."""

    def __init__(self, storage: Storage, lake_root: str, schema: pa.Schema, partition_columns: tuple[str, ...]) -> None:
        self.storage = storage
        self.lake_root = lake_root
        self.partitioning = ds.HivePartitioning(partition_fields(schema, partition_columns), segment_encoding="uri")

    def distinct_keys(self, path: str, columns: tuple[_Column, ...] | list[_Column]) -> dict[str, pa.Array]:
        file = pq.ParquetFile(f"{self.lake_root}/{path}", filesystem=self.storage.fs)
        physical = {name.lower(): name for name in file.schema_arrow.names}
        wanted = [physical[c.name.lower()] for c in columns if not c.is_partition and c.name.lower() in physical]
        table = file.read(columns=wanted, use_threads=False) if wanted else None
        partition_values = (
            ds.get_partition_keys(self.partitioning.parse(path)) if any(c.is_partition for c in columns) else {}
        )
        found = {}
        for column in columns:
            if column.is_partition:
                raw = pa.array([partition_values.get(column.name)])
            elif column.name.lower() in physical:
                raw = table.column(physical[column.name.lower()])
                raw = raw.dictionary_decode() if pa.types.is_dictionary(raw.type) else raw
            else:  # the file lacks the column: every row holds NULL
                raw = pa.array([None], pa.null())
            if isinstance(raw, pa.ChunkedArray):
                raw = raw.combine_chunks()
            found[column.name] = pc.unique(raw.cast(column.key_type, safe=False))
        return found


def _scan_task(spec: _ScanSpec, files: list[tuple[int, str]]) -> list[dict]:
    storage, lake_root = storage_for(spec.lake_uri)
    _, tmp_dir = storage_for(spec.tmp_uri)
    schema = values.deserialize_schema(spec.schema_text)
    reader = _FileReader(storage, lake_root, schema, spec.partition_columns)
    keys: dict[str, list[pa.Array]] = defaultdict(list)
    ids: dict[str, list[pa.Array]] = defaultdict(list)
    for file_id, path in files:
        for column, distinct in reader.distinct_keys(path, spec.columns).items():
            keys[column].append(distinct)
            ids[column].append(pa.array([file_id] * len(distinct), pa.int32()))
    task = uuid.uuid4().hex
    spills = []
    for column in spec.columns:
        key_type = column.key_type
        entries = pa.table(
            [pa.concat_arrays(keys[column.name]), pa.concat_arrays(ids[column.name])], schema=entry_schema(key_type)
        )
        ranges = _range_numbers(entries.column(KEY), [values.decode(b, key_type) for b in spec.boundaries[column.name]])
        for number in pc.unique(ranges).to_pylist():
            part = entries.filter(pc.equal(ranges, number))
            path = f"{tmp_dir}/c{column.position}-r{number}-{task}.arrow"
            sink = pa.BufferOutputStream()
            with pa.ipc.new_file(sink, part.schema) as writer:
                writer.write_table(part)
            storage.write(path, sink.getvalue().to_pybytes())
            spills.append({"column": column.position, "range": number, "path": path})
    return spills


def _range_numbers(keys: pa.ChunkedArray, boundaries: list) -> pa.Array:
    """For each key, the number of boundaries <= it: its key range (NULL goes to range 0)."""
    numbers = pa.array([0] * len(keys), pa.int32())
    for boundary in boundaries:
        above = pc.fill_null(pc.greater_equal(keys, pa.scalar(boundary, keys.type)), False).cast(pa.int32())
        numbers = pc.add(numbers, above)
    return numbers.combine_chunks() if isinstance(numbers, pa.ChunkedArray) else numbers


@dataclass(frozen=True)
class _WriteSpec:
    index_uri: str
    prefix: str
    column: _Column
    chunk_rows: int


def _write_task(spec: _WriteSpec, spill_paths: list[str]) -> list[dict]:
    storage, index_dir = storage_for(spec.index_uri)
    tables = [pa.ipc.open_file(pa.py_buffer(storage.read(path))).read_all() for path in spill_paths]
    entries = pa.concat_tables(tables)
    # Each file's pairs are distinct (scan tasks dedupe per file), so sorting by key alone suffices.
    order = pc.sort_indices(entries, sort_keys=[(KEY, "ascending", "at_start")])
    result = write_index_file(
        entries.take(order).to_batches(max_chunksize=spec.chunk_rows), spec.column.key_type, spec.chunk_rows
    )
    if result is None:
        return []
    data, info = result
    path = f"{spec.prefix}-{uuid.uuid4().hex}.parquet"
    storage.write(f"{index_dir}/{path}", data)
    return [{"column": spec.column.position, "info": {"path": path, **info}}]


def _spark_message(error: Exception) -> str:
    text = str(error)
    for line in reversed(text.splitlines()):
        if "lakeseek" in line and "Error" in line:
            return line.strip()
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return f"Spark job failed: {first}"
