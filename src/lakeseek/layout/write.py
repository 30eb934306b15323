"""Writing, converting and optimizing OTree lakes (seed 002).

A write takes a Spark DataFrame (the work runs on Spark) or an Arrow table (in this
process). It gives every row a weight once, stored in ``_lakeseek_weight``: Murmur3 of the
layout columns *and the row's position* (so duplicate keys get distinct weights, unlike
qbeast's hash of the keys alone), kept as written ever after. Then: one pass for the count
and the linear columns' ranges; one for the sample (the rows of weight below a threshold);
the revision (reused when the values fit it); the tree and roll-up from the sample; and the
files, each written by one task. Finally the commit: put-if-absent of the next log entry,
rebased and retried when another writer got there first, and an error (never silence) when
it cannot be.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from lakeseek.exceptions import (
    CommitFailedError,
    IncompatibleSchemaError,
    InvalidArgumentError,
    UnknownColumnError,
    UnsupportedLakeError,
)
from lakeseek.format.hashing import hash64, mix64
from lakeseek.io import storage_for
from lakeseek.io.hadoop import literal_path
from lakeseek.io.spills import scratch_removed
from lakeseek.lake.files import reading_data_files
from lakeseek.layout.table import SCRATCH_DIR, LayoutFile, LayoutLog, LayoutState, Revision, now_ms
from lakeseek.layout.tasks import CUBE, FILE, WritePlan, route_task, write_spilled, write_task
from lakeseek.layout.transforms import (
    LINEAR,
    QUANTILES,
    Transformation,
    check_kind,
    default_kind,
    linear,
    numbers,
    quantiles,
)
from lakeseek.layout.tree import OFFSET, SPAN, WEIGHT, estimate, roll_up, unsigned

DEFAULT_CUBE_SIZE = 100_000
SAMPLE_ROWS = 500_000  # rows the tree is estimated from (all of them below this)
COMMIT_ATTEMPTS = 20
ARROW_BATCH_ROWS = 100_000
ROWS_PER_WRITE_TASK = 1_000_000  # rows a Spark task sorts and writes in memory
ROW_GROUP_ROWS = 131_072  # most row groups end sooner, at a sample fraction (see layout.tasks)
SPILL_BYTES = 256 << 20  # rows a Spark task routing rows to the write tasks holds before it spills them
MODES = ("append", "overwrite")


# Cubes are numbered in 64-bit integers, a level's child index taking one bit per column; past
# a few dozen columns a cube holds almost no row anyway.
MAX_LAYOUT_COLUMNS = 32


@dataclass(frozen=True)
class ColumnSpec:
    column: str
    kind: str


def parse_columns(columns: Sequence[str], schema: pa.Schema, current: Revision | None = None) -> list[ColumnSpec]:
    """``["a:linear", "b:hash", "c"]`` against the data's schema (a bare name: its
    transformation in the ``current`` revision, an append's, else its type's default)."""
    kept = {} if current is None else {t.column: t.kind for t in current.transformations}
    if isinstance(columns, str):
        columns = [part.strip() for part in columns.split(",") if part.strip()]
    if not columns:
        raise InvalidArgumentError("a layout needs at least one column (columns=['a:linear', ...])")
    found = []
    for spec in columns:
        name, _, kind = spec.partition(":")
        if name == WEIGHT or name not in schema.names:
            known = ", ".join(n for n in schema.names if n != WEIGHT)
            raise UnknownColumnError(f"unknown layout column '{name}' (columns: {known})")
        arrow_type = schema.field(name).type
        kind = kind or kept.get(name) or default_kind(arrow_type)
        check_kind(name, kind, arrow_type)
        found.append(ColumnSpec(name, kind))
    if len({spec.column for spec in found}) < len(found):
        raise InvalidArgumentError("a layout column is named twice")
    if len(found) > MAX_LAYOUT_COLUMNS:
        raise InvalidArgumentError(f"a layout has at most {MAX_LAYOUT_COLUMNS} columns, not {len(found)}")
    return found


def check_names(schema: pa.Schema) -> None:
    """The rows must not hold columns named like those a write adds for itself."""
    taken = [name for name in schema.names if name in (FILE, CUBE)]
    if taken:
        raise InvalidArgumentError(f"column '{taken[0]}' is a name lakeseek's layout writer uses: rename it")


# -- the input: an Arrow table here, or a Spark DataFrame ------------------------------------------
class ArrowInput:
    """Rows already in this process."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def with_weights(self, columns: Sequence[str]) -> None:
        kept = self.table.column(WEIGHT) if WEIGHT in self.table.column_names else None
        if kept is not None and kept.type == pa.int32() and not kept.null_count:
            return  # rows of an OTree lake keep their weights (optimize, convert)
        mixed = np.arange(self.table.num_rows, dtype=np.uint64)
        for name in columns:
            mixed = mix64(mixed ^ _value_hashes(self.table.column(name)))
        weights = ((mixed >> np.uint64(32)).astype(np.int64) - OFFSET).astype(np.int32)
        if kept is not None:
            self.table = self.table.drop_columns([WEIGHT])
        self.table = self.table.append_column(WEIGHT, pa.array(weights, pa.int32()))

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema

    def ranges(self, columns: Sequence[str]) -> tuple[int, dict[str, tuple[float | None, float | None]]]:
        return self.table.num_rows, {name: finite_range(numbers(self.table.column(name))) for name in columns}

    def sample(self, columns: Sequence[str], below: int) -> pa.Table:
        import pyarrow.compute as pc

        keep = pc.less(self.table.column(WEIGHT), below - OFFSET) if below < SPAN else None
        table = self.table.select([*columns, WEIGHT])
        return table if keep is None else table.filter(keep)

    def write(self, plan: WritePlan) -> list[dict]:
        return write_task(self.table.to_batches(max_chunksize=1 << 18), plan)


def _value_hashes(column: pa.ChunkedArray) -> np.ndarray:
    """64-bit hashes of a column's values (floating point by its bits)."""
    if pa.types.is_floating(column.type):
        return mix64(numbers(column.cast(pa.float64())).view(np.uint64))
    return hash64(column)


class SparkInput:
    """Rows of a Spark DataFrame: every pass is a Spark job."""

    def __init__(self, frame) -> None:
        self.frame = frame
        self._schema: pa.Schema | None = None

    def with_weights(self, columns: Sequence[str]) -> None:
        from pyspark.sql import functions as F

        weight = F.hash(*[F.col(f"`{name}`") for name in columns], F.monotonically_increasing_id())
        if WEIGHT in self.frame.columns:  # rows of an OTree lake keep their weights (optimize, convert)
            weight = F.coalesce(F.col(WEIGHT).cast("int"), weight)
        self.frame = self.frame.withColumn(WEIGHT, weight)
        self._schema = None

    @property
    def schema(self) -> pa.Schema:
        """The frame's schema as Arrow types (Spark's own conversion), asked once per frame."""
        if self._schema is None:
            self._schema = self.frame.limit(0).toArrow().schema
        return self._schema

    def ranges(self, columns: Sequence[str]) -> tuple[int, dict[str, tuple[float | None, float | None]]]:
        from pyspark.sql import functions as F
        from pyspark.sql.types import DoubleType, FloatType

        aggregates = [F.count(F.lit(1))]
        types = {f.name: f.dataType for f in self.frame.schema.fields}
        for name in columns:
            column = F.col(f"`{name}`")
            if isinstance(types[name], DoubleType | FloatType):
                column = F.when(~F.isnan(column) & (F.abs(column) != float("inf")), column)
            aggregates += [F.min(column), F.max(column)]
        # Through Arrow, not Row objects: PySpark makes a timestamp a local datetime, which
        # fails for the first and last years Spark holds.
        row = self.frame.agg(*aggregates).toArrow()
        found = {}
        for i, name in enumerate(columns):
            low, high = row.column(1 + 2 * i), row.column(2 + 2 * i)
            found[name] = finite_range(numbers(pa.concat_arrays([*low.chunks, *high.chunks])))
        return int(row.column(0)[0].as_py()), found

    def sample(self, columns: Sequence[str], below: int) -> pa.Table:
        from pyspark.sql import functions as F

        frame = self.frame.select(*[F.col(f"`{name}`") for name in [*columns, WEIGHT]])
        if below < SPAN:
            frame = frame.where(F.col(WEIGHT) < below - OFFSET)
        return frame.toArrow()

    def write(self, plan: WritePlan) -> list[dict]:
        """Rows routed to their files' write tasks by one pass of Python tasks over the frame,
        then written by those tasks (see layout.tasks)."""
        from collections import defaultdict

        from lakeseek.engine.runner import SparkRunner, spark_errors

        storage, root = storage_for(plan.location, plan.storage_options)
        scratch = f"{root}/{SCRATCH_DIR}/{plan.write_id}"

        def route(batches):
            for spill in route_task(batches, plan, scratch):
                yield pa.RecordBatch.from_pylist([{"spill": json.dumps(spill)}])

        spark = self.frame.sparkSession
        with scratch_removed(storage, scratch):
            with _arrow_batches(spark, ARROW_BATCH_ROWS), spark_errors():
                rows = self.frame.mapInArrow(route, "spill string").collect()
            spills: dict[int, list[str]] = defaultdict(list)
            for row in rows:
                spill = json.loads(row["spill"])
                spills[spill["task"]].append(spill["path"])
            tasks = [(plan, paths) for _, paths in sorted(spills.items())]
            return SparkRunner(spark).run("writing the layout's files", tasks, write_spilled)


@contextmanager
def _arrow_batches(spark, rows: int):
    """Spark's Arrow batches of ``rows`` rows while the write runs, unless the session sets its
    own: the Python side of a write is per batch, and Spark's default of 10,000 rows makes the
    per-batch costs dominate."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    if spark.conf.get(key, None) not in (None, "10000"):
        yield
        return
    previous = spark.conf.get(key, None)
    spark.conf.set(key, str(rows))
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


def finite_range(values: np.ndarray) -> tuple[float | None, float | None]:
    finite = values[np.isfinite(values)]
    return (float(finite.min()), float(finite.max())) if len(finite) else (None, None)


def _input(data) -> ArrowInput | SparkInput:
    if isinstance(data, pa.Table):
        return ArrowInput(data)
    if hasattr(data, "sparkSession") and hasattr(data, "mapInArrow"):
        return SparkInput(data)
    raise InvalidArgumentError(f"a layout writes a Spark DataFrame or a pyarrow Table, not {type(data).__name__}")


# -- writing ----------------------------------------------------------------------------------------
def write(
    data,
    location: str,
    columns: Sequence[str],
    *,
    cube_size: int | None = None,
    mode: str = "append",
    max_file_rows: int | None = None,
    headroom: float = 0.0,
    storage_options: Mapping[str, object] | None = None,
) -> LayoutState:
    """Write ``data`` (a Spark DataFrame, or a pyarrow Table written in this process) to the
    OTree lake at ``location`` laid out by ``columns`` (``"name:linear"``, ``"name:hash"``,
    ``"name:quantiles"``, or a bare name: as the newest revision lays it out, for an append,
    else its type's default) in cubes of about ``cube_size`` rows (default: the newest
    revision's, for an append, else DEFAULT_CUBE_SIZE), files of at most ``max_file_rows``
    (default 4 cubes). ``mode``:
    ``append`` (a new revision only when a linear column's values leave the revision's range,
    or the columns or cube size change) or ``overwrite``. ``headroom``: when a new revision
    opens because values left a range, widen the range by this share of its width on that side
    (1.0 doubles it), so that a column growing with every append (a timestamp) opens a revision
    per doubling, not per append. Returns the committed state."""
    if mode not in MODES:
        raise InvalidArgumentError(f"unknown write mode {mode!r} (use {' or '.join(MODES)})")
    positive = [size for size in (cube_size, max_file_rows) if size is not None]
    if any(size < 1 for size in positive) or not 0 <= headroom < math.inf:
        raise InvalidArgumentError("cube_size and max_file_rows are positive, headroom a finite number at least 0")
    source = _input(data)
    check_names(source.schema)
    storage, root = storage_for(location, storage_options)
    log = LayoutLog(storage, root)
    base = log.latest() if log.exists() else None
    newest = base.revisions[-1] if base is not None and base.revisions and mode == "append" else None
    specs = parse_columns(columns, source.schema, newest)
    if cube_size is None:
        cube_size = DEFAULT_CUBE_SIZE if newest is None else newest.cube_size
    if base is None:
        _refuse_other_files(storage, root, location)
    source.with_weights([spec.column for spec in specs])
    schema = source.schema
    if base is not None and mode == "append" and base.files and not _same_schema(base.schema, schema):
        raise IncompatibleSchemaError(
            f"the rows' schema differs from the layout's at {location}: append rows of its schema, or overwrite"
        )
    linear_columns = [spec.column for spec in specs if spec.kind == LINEAR]
    rows, ranges = source.ranges(linear_columns)
    if rows == 0 and mode == "append":
        return base if base is not None else _commit(log, None, None, [], mode, schema, location)
    below = SPAN if rows <= SAMPLE_ROWS else math.ceil(SAMPLE_ROWS / rows * SPAN)
    sample = source.sample([spec.column for spec in specs], below)
    current = base if mode == "append" else None
    revision = _revision(current, specs, ranges, sample, cube_size, headroom)
    plan = _plan(location, storage_options, schema, revision, sample, rows, below, max_file_rows)
    written = source.write(plan)
    return _commit(log, base, revision, written, mode, schema, location)


def _refuse_other_files(storage, root: str, location: str) -> None:
    """A layout is written into an empty location (or one holding only hidden files): files of
    another lake there would be left out of every read once the layout's log exists."""
    from lakeseek.sources.directory import is_hidden

    found = storage.walk_files(root, skip_dir=lambda name: is_hidden(name, directory=True), skip_file=is_hidden)
    if found:
        first = sorted(found)[0]
        raise InvalidArgumentError(
            f"{location} holds files that are not an OTree lake's ({first}, ...): write the layout to an empty "
            "location, or convert that lake into one (lakeseek.layout.convert)"
        )


def _plan(
    location, storage_options, schema, revision: Revision, sample: pa.Table, rows: int, below: int, max_file_rows
):
    points = np.column_stack([t.positions(sample.column(t.column)) for t in revision.transformations])
    weights = unsigned(sample.column(WEIGHT).to_numpy(zero_copy_only=False))
    tree = estimate(points, weights, rows, below, revision.cube_size)
    rollup = roll_up(tree, max_file_rows or 4 * revision.cube_size)
    row_groups = ROW_GROUP_ROWS
    write_tasks = max(1, min(rollup.files, math.ceil(rows / ROWS_PER_WRITE_TASK)))
    return WritePlan(
        location,
        schema,
        revision,
        tree,
        rollup,
        row_groups,
        dict(storage_options or {}),
        write_tasks=write_tasks,
        spill_bytes=SPILL_BYTES,
    )


def _same_schema(a: pa.Schema, b: pa.Schema) -> bool:
    return a.names == b.names and all(x.type.equals(y.type) for x, y in zip(a, b, strict=True))


def _revision(
    base: LayoutState | None,
    specs: list[ColumnSpec],
    ranges: dict[str, tuple[float | None, float | None]],
    sample: pa.Table,
    cube_size: int,
    headroom: float,
) -> Revision:
    """The newest matching revision when the values fit it, else a new one."""
    wanted = [(spec.column, spec.kind) for spec in specs]
    previous = None
    if base is not None:
        for revision in reversed(base.revisions):
            if [(t.column, t.kind) for t in revision.transformations] == wanted and revision.cube_size == cube_size:
                previous = revision
                break
    if previous is not None and all(t.covers(*ranges.get(t.column, (None, None))) for t in previous.transformations):
        return previous
    transformations = []
    for spec in specs:
        old = None if previous is None else next(t for t in previous.transformations if t.column == spec.column)
        if spec.kind == LINEAR:
            low, high = ranges[spec.column]
            low, high = (0.0, 0.0) if low is None else (low, high)
            if old is not None:
                width = max(max(high, old.high) - min(low, old.low), 0.0)
                low = min(low, old.low) - (headroom * width if low < old.low else 0.0)
                high = max(high, old.high) + (headroom * width if high > old.high else 0.0)
            transformations.append(linear(spec.column, low, high))
        elif spec.kind == QUANTILES:
            transformations.append(old if old is not None else quantiles(spec.column, sample.column(spec.column)))
        else:
            transformations.append(Transformation(spec.column, spec.kind))
    number = max((r.id for r in base.revisions), default=0) + 1 if base is not None else 1
    return Revision(number, cube_size, tuple(transformations))


def _commit(
    log: LayoutLog,
    base: LayoutState | None,
    revision: Revision | None,
    written: list[dict],
    mode: str,
    schema: pa.Schema,
    location: str,
    removed: Sequence[str] = (),
    operation: str | None = None,
) -> LayoutState:
    """Commit the written files: on the latest version, rebased while other writers commit
    first (an append keeps theirs; an overwrite replaces them; an optimize fails when one of
    the files it rewrote is gone). CommitFailedError names the case it cannot resolve."""
    added = [LayoutFile.from_json(entry) for entry in written]
    for _ in range(COMMIT_ATTEMPTS):
        latest = log.latest() if log.exists() else None
        files = dict(latest.files) if latest is not None and mode == "append" else {}
        gone = [path for path in removed if path not in files]
        if gone:
            raise CommitFailedError(
                f"another writer removed {gone[0]} from the layout at {location} meanwhile: optimize again"
            )
        if latest is not None and mode == "append" and files and not _same_schema(latest.schema, schema):
            raise CommitFailedError(f"another writer changed the layout's schema at {location} meanwhile")
        for path in removed:
            del files[path]
        revisions = list(latest.revisions) if latest is not None else []
        ours = revision
        if revision is not None and all(r != revision for r in revisions):
            taken = {r.id for r in revisions}
            if revision.id in taken:  # another writer opened a revision of this number first
                ours = replace(revision, id=max(taken) + 1)
            revisions.append(ours)
        for entry in added:
            files[entry.path] = replace(entry, revision=ours.id) if ours is not None else entry
        live = {entry.revision for entry in files.values()}
        state = LayoutState(
            0 if latest is None else latest.version + 1,
            schema,
            tuple(r for r in revisions if r.id in live),
            files,
            operation or mode,
            now_ms(),
        )
        try:
            log.commit(state)
            return state
        except CommitFailedError:
            continue
    raise CommitFailedError(
        f"the layout at {location} changed under {COMMIT_ATTEMPTS} attempts to commit: the write's "
        f"{len(added)} files are not part of it; write again"
    )


# -- converting, optimizing, describing ------------------------------------------------------------
def _frame(lake, stamps, files: list[str], schema: pa.Schema, partition_columns, spark):
    """The rows of ``files`` of ``lake`` (``stamps``: its snapshot's): a Spark DataFrame (Spark's
    Parquet reader, the lake's root as the base of its partition directories) or, without
    ``spark``, an Arrow table."""
    from lakeseek.lake.formats import PARQUET

    if any(lake.deleted_rows(path, stamps.get(path)) is not None for path in files) or spark is None:
        with reading_data_files(lake, files):  # a damaged or missing file: an error naming it
            table = lake.dataset(files, schema, partition_columns, stamps={p: stamps[p] for p in files}).to_table()
        return table if spark is None else spark.createDataFrame(table.to_pandas())
    if lake.data_format is not PARQUET:
        raise InvalidArgumentError(f"converting a {lake.data_format.name} lake with Spark: convert it without Spark")
    # basePath is taken as it is; the files' paths would be glob patterns but for the escapes.
    base = lake.storage.uri(lake.root)
    misread = lake.spark_misread_partitions(files)
    if misread is not None:
        raise UnsupportedLakeError(f"{misread}; or convert without Spark")
    reader = spark.read.options(**lake.spark_listing_options).option("basePath", base)
    return reader.parquet(*[literal_path(lake.file_uri(p)) for p in files])


def convert(
    source: str,
    location: str,
    columns: Sequence[str],
    *,
    spark=None,
    source_format: str | None = None,
    storage_options: Mapping[str, object] | None = None,
    **options,
) -> LayoutState:
    """Rewrite the lake at ``source`` (a directory of Parquet files, a Delta, Iceberg or Hudi
    table: its live rows) as an OTree lake at ``location`` (see :func:`write` for ``options``);
    with ``spark``, on Spark, else in this process. The source is left as it was."""
    from lakeseek.engine.runner import LocalRunner
    from lakeseek.sources import open_lake

    lake = open_lake(source, storage_options, source_format=source_format)
    stamps = lake.snapshot().files
    schema = lake.discover(stamps, LocalRunner)
    data = _frame(lake, stamps, sorted(stamps), schema.schema, schema.partition_columns, spark)
    return write(data, location, columns, storage_options=storage_options, **options)


def optimize(location: str, *, spark=None, storage_options: Mapping[str, object] | None = None) -> LayoutState:
    """Rewrite each revision whose files came from more than one write (appends) as one write:
    blocks of a cube merged, overflow pushed down to child cubes, small files rolled up; rows
    and their weights unchanged. With ``spark`` on Spark, else in this process."""
    from lakeseek.layout.source import NAME
    from lakeseek.sources import open_lake

    lake = open_lake(location, storage_options, source_format=NAME)
    state = lake.state()
    stamps = lake.snapshot().files
    written: list[dict] = []
    removed: list[str] = []
    for revision in state.revisions:
        paths = sorted(path for path, f in state.files.items() if f.revision == revision.id)
        if len({_write_of(path) for path in paths}) < 2:
            continue
        source = _input(_frame(lake, stamps, paths, state.schema, (), spark))
        rows, _ = source.ranges([])
        below = SPAN if rows <= SAMPLE_ROWS else math.ceil(SAMPLE_ROWS / rows * SPAN)
        sample = source.sample(list(revision.columns), below)
        plan = _plan(location, storage_options, state.schema, revision, sample, rows, below, None)
        written += source.write(plan)
        removed += paths
    if not removed:
        return state
    log = LayoutLog(lake.storage, lake.root)
    return _commit(log, state, None, written, "append", state.schema, location, removed, "optimize")


def _write_of(path: str) -> str:
    """The write a data file came from (its name's second part; see layout.tasks)."""
    return path.rsplit("/", 1)[-1].split("-")[1]


def describe(location: str, *, storage_options: Mapping[str, object] | None = None) -> dict:
    """The layout as plain data: version, rows, files, revisions, and per cube its blocks'
    rows, files and weights (in qbeast's cube ids)."""
    storage, root = storage_for(location, storage_options)
    state = LayoutLog(storage, root).latest()
    cubes: dict[tuple[int, str], dict] = {}
    for file in state.files.values():
        for block in file.blocks:
            found = cubes.setdefault(
                (file.revision, block.cube),
                {
                    "revision": file.revision,
                    "cube": block.cube,
                    "rows": 0,
                    "files": 0,
                    "min_weight": block.min_weight,
                    "max_weight": block.max_weight,
                },
            )
            found["rows"] += block.rows
            found["files"] += 1
            found["min_weight"] = min(found["min_weight"], block.min_weight)
            found["max_weight"] = min(found["max_weight"], block.max_weight)
    return {
        "location": location,
        "version": state.version,
        "rows": state.rows,
        "files": len(state.files),
        "bytes": sum(f.size for f in state.files.values()),
        "revisions": [r.to_json() for r in state.revisions],
        "cubes": sorted(cubes.values(), key=lambda c: (c["revision"], len(c["cube"]), c["cube"])),
    }
