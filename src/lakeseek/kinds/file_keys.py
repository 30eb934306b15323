"""What every kind's build reads from the lake: each data file's keys of the indexed columns.

:class:`FileKeyReader` reads one file's distinct keys per column (as the lake keeps them:
the rows a source deleted without rewriting the file are left out, partition values and
missing columns included), and :func:`file_groups` splits files into scan tasks. Tasks hand
their results to the driver as Arrow spills in the operation's scratch directory
(:mod:`lakeseek.io.spills`), cleared when the build ends (:func:`scratch_cleared`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.exceptions import IncompatibleSchemaError
from lakeseek.expressions.binding import resolve_column, value_type
from lakeseek.format import values
from lakeseek.format.lineage import Lineage
from lakeseek.io import Address, Stamp, Storage
from lakeseek.io.spills import scratch_removed
from lakeseek.kinds.base import KEY, ROW_GROUP, Job
from lakeseek.lake.files import kept_rows, open_data_file, partition_fields, plain_schema
from lakeseek.lake.formats.base import ColumnStatistics
from lakeseek.lake.schemas import match_columns
from lakeseek.sources.base import LakeAddress, LakeSource

# Lake bytes per scan task.
BYTES_PER_SCAN_TASK = 64 * 2**20
SCAN_TASKS_PER_CORE = 2


@dataclass(frozen=True)
class IndexedColumn:
    """An indexed column as the tasks need it (plain data: it is pickled to executors)."""

    name: str
    position: int
    key_type_text: str
    is_partition: bool

    @property
    def key_type(self) -> pa.DataType:
        return values.deserialize_type(self.key_type_text)


def indexed_columns(names: list[str], schema: pa.Schema, partition_columns: tuple[str, ...]) -> list[IndexedColumn]:
    """The lake columns behind ``names`` (case-insensitive), checked to be indexable."""
    fields = [resolve_column(name, schema) for name in names]
    return [
        IndexedColumn(
            field.name,
            schema.get_field_index(field.name),
            values.serialize_type(values.key_type_for(field.type, field.name)),
            field.name in partition_columns,
        )
        for field in fields
    ]


def file_groups(lineage: Lineage, parallelism: int) -> list[list[tuple[int, str, Stamp]]]:
    """Files split into scan tasks of about BYTES_PER_SCAN_TASK, at least two per core."""
    total = sum(lineage.sizes)
    least = SCAN_TASKS_PER_CORE * parallelism
    count = max(1, min(len(lineage), max(least, math.ceil(total / BYTES_PER_SCAN_TASK))))
    target = total / count
    groups: list[list[tuple[int, str, Stamp]]] = [[]]
    filled = 0
    for file_id, path, stamp in zip(lineage.ids, lineage.paths, lineage.stamps(), strict=True):
        if groups[-1] and filled >= target:
            groups.append([])
            filled = 0
        groups[-1].append((file_id, path, stamp))
        filled += stamp.size
    return groups


@dataclass(frozen=True)
class LakeScan:
    """What a build task needs to read lake files' keys wherever it runs (plain data: it is
    pickled to executors): the lake, the index directory, the schema and the columns."""

    lake: LakeAddress
    index: Address
    scratch_dir: str  # relative to the index directory
    schema_text: str
    partition_columns: tuple[str, ...]
    columns: tuple[IndexedColumn, ...]

    @classmethod
    def of(cls, job: Job, columns: list[IndexedColumn]) -> LakeScan:
        return cls(
            job.source.address,
            job.files.index,
            job.files.scratch_dir,
            values.serialize_schema(job.schema),
            job.partition_columns,
            tuple(columns),
        )

    def open(self) -> tuple[FileKeyReader, Storage, str]:
        """In the task: a reader of the lake's files, the index storage and its scratch directory."""
        source = self.lake.open()
        storage, index_dir = self.index.open()
        reader = FileKeyReader(source, values.deserialize_schema(self.schema_text), self.partition_columns)
        return reader, storage, f"{index_dir}/{self.scratch_dir}"


class FileKeyReader:
    """Reads the distinct keys (or distinct (key, row group) pairs) of indexed columns, file by file."""

    def __init__(self, source: LakeSource, schema: pa.Schema, partition_columns: tuple[str, ...]) -> None:
        self.source = source
        self.schema = schema
        self.partitioning = partition_fields(schema, partition_columns)  # values parsed as Spark does, in UTC
        self.data_columns = [name for name in schema.names if name not in partition_columns]

    def distinct_keys(
        self,
        path: str,
        stamp: Stamp,
        columns: tuple[IndexedColumn, ...] | list[IndexedColumn],
        row_groups: bool = False,
    ) -> dict[str, pa.Table]:
        """Per column, a table of its distinct keys (``key``), with ``row_group`` when asked, in
        the rows the lake keeps of the file (``stamp``: the lake's stamp of it)."""
        self.source.check_columns([path], {path: stamp})
        file = open_data_file(self.source, path, stamp.size)
        # Each column under its own spelling, else the file's other spelling of it (lakeseek.lake.schemas),
        # matched among all the lake's columns as reads match them: a file's 'Name' is the lake's
        # 'name' only where the lake has no 'Name' of its own.
        matched = match_columns(self.data_columns, file.schema.names)
        physical = {c.name: matched[c.name] for c in columns if not c.is_partition and c.name in matched}
        wanted = list(dict.fromkeys(physical.values()))
        lake_types = {physical[c.name]: self.schema.field(c.name).type for c in columns if c.name in physical}
        table = file.read(wanted, lake_types) if wanted else None
        partition_values = (
            self.source.partition_values(path, self.partitioning, "UTC") if any(c.is_partition for c in columns) else {}
        )
        groups = None
        if row_groups:
            group_rows = file.row_group_rows
            groups = pa.array(np.repeat(np.arange(len(group_rows), dtype=np.int32), group_rows))
        deleted = self.source.deleted_rows(path, stamp)
        kept = None if deleted is None else kept_rows(file.num_rows, deleted, path)
        if kept is not None:
            # Arrow's filter takes no view type (string_view, ...): the plain types hold the same values.
            table = None if table is None else table.cast(plain_schema(table.schema)).filter(kept)
            groups = None if groups is None else groups.filter(kept)
        kept_count = file.num_rows if kept is None else kept.true_count
        # Without row groups, one value stands for a whole file (a partition value, or NULL),
        # unless the lake deleted every row of it.
        rows = kept_count if row_groups else min(1, kept_count)
        found = {}
        for column in columns:
            if column.is_partition:
                raw = pa.array([partition_values.get(column.name)] * rows)
            elif column.name in physical:
                raw = table.column(physical[column.name])
                raw = raw.cast(raw.type.value_type) if pa.types.is_dictionary(raw.type) else raw
            else:  # the file lacks the column: every row holds NULL
                raw = pa.nulls(rows)
            if isinstance(raw, pa.ChunkedArray):
                raw = raw.combine_chunks()
            keys = self.keys(raw, column, path)
            if groups is None:
                found[column.name] = pa.table({KEY: pc.unique(keys)})
            else:
                found[column.name] = pa.table({KEY: keys, ROW_GROUP: groups}).group_by([KEY, ROW_GROUP]).aggregate([])
        return found

    def recorded_bounds(
        self, path: str, recorded: dict[str, ColumnStatistics], columns: list[IndexedColumn]
    ) -> dict[str, tuple[pa.Array, bool]] | None:
        """Per column, keys bounding the file's (its lowest and highest; empty when it holds
        none) and whether it holds NULL, from what the lake's metadata ``recorded`` of the file
        (:meth:`LakeSource.recorded_statistics`) and its partition values, without opening it;
        None when the metadata leaves a column out."""
        if any(not c.is_partition and c.name not in recorded for c in columns):
            return None
        partition_values = (
            self.source.partition_values(path, self.partitioning, "UTC") if any(c.is_partition for c in columns) else {}
        )
        found = {}
        for column in columns:
            if column.is_partition:
                value = partition_values.get(column.name)
                low, high, nulls = value, value, value is None
            else:
                statistics = recorded[column.name]
                low, high, nulls = statistics.min, statistics.max, bool(statistics.nulls)
            column_type = value_type(self.schema.field(column.name).type)
            bounds = pa.array([] if low is None else [low, high], column_type)
            found[column.name] = (self.keys(bounds, column, path), nulls)
        return found

    def keys(self, raw: pa.Array, column: IndexedColumn, path: str) -> pa.Array:
        """A file's values of ``column`` as index keys, never changed: cast to the lake's type of
        the column (which holds every file's values exactly: see lakeseek.lake.schemas), then to the
        key type (which drops only the nanoseconds of a nanosecond column, by design)."""
        column_type = value_type(self.schema.field(column.name).type)
        try:
            values = raw if raw.type.equals(column_type) else raw.cast(column_type)
            lossy = pa.types.is_timestamp(column_type) and column_type.unit == "ns"
            return values.cast(column.key_type, safe=not lossy)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            raise IncompatibleSchemaError(
                f"data file {path} holds column '{column.name}' as {raw.type}, which does not read exactly "
                f"as the lake's {column_type} ({error})"
            ) from error


def scratch_cleared(job: Job):
    """The operation's scratch directory deleted when the build's stages end, however they end."""
    return scratch_removed(job.storage, f"{job.files.index_dir}/{job.files.scratch_dir}")
