"""A Delta Lake table (a location holding ``_delta_log/``) as a lake source.

The lake is the table's active files at its latest version, not a listing of its directory
(which also holds files the table removed): the snapshot comes from the ``deltalake`` package
(delta-rs), which replays the log and its checkpoints. The version is the table's version
number with its commit file's size and time (a table deleted and written again restarts its
numbers). Checking it costs one LIST of ``_delta_log/`` from the version an index recorded (no
data file is listed), and what changed since is read from the JSON commits in between
(``add`` and ``remove`` actions); when the log no longer holds them (cleaned up after a
checkpoint), the files' stamps are compared instead.

Deletion vectors (rows a file keeps that the table deleted, so that a delete rewrites no file)
are read by deltalake, once per table version, and every read of such a file leaves those rows
out (:meth:`LakeSource.deleted_rows`). A file's stamp names its deletion vector: a file that
loses more rows (or gets rows back, by a restore) is a changed file, read without the index
until a refresh indexes its rows now.

Not read yet, and refused rather than read wrong: column mapping (physical column names other
than the table's).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from lakeseek.engine.runner import Runner
from lakeseek.exceptions import (
    DataFileChangedError,
    LakeMetadataError,
    LakeNotFoundError,
    UnsupportedLakeError,
)
from lakeseek.io import FileStatus, Stamp, Storage
from lakeseek.lake.files import plain_schema
from lakeseek.lake.formats.base import ColumnStatistics
from lakeseek.lake.state import Changes
from lakeseek.sources.base import (
    LakeSchema,
    LakeSource,
    Snapshot,
    bounded_by_metadata,
    table_errors,
    table_library,
)
from lakeseek.sources.partitions import (
    DEFAULT_PARTITION_NAME,
    partition_value,
    raw_partition_values,
    unescape_path_name,
    values_expression,
)

LOG = "_delta_log"
_VECTOR = "dv:"  # a stamp's version naming a deletion vector: dv:<rows deleted>-<their digest>
_COMMIT = re.compile(r"([0-9]{20})\.json")
_CHECKPOINT = re.compile(r"([0-9]{20})\.checkpoint(?:\.[0-9]+\.[0-9]+)?\.parquet")
# Delta's statistics keep timestamps in milliseconds (cut, not rounded), strings to a prefix
# of this many characters unless the table says otherwise, and decimals as JSON numbers,
# which hold this many digits exactly.
_TIMESTAMP_STEP = datetime.timedelta(milliseconds=1)
_STRING_PREFIX = 32
_EXACT_DECIMAL_DIGITS = 15


def _stamped(version: int, commit: FileStatus | None) -> str:
    """A version's name: ``<number>@<size>.<time>`` of its commit file (a table deleted and
    written again restarts its numbers, not its files' times)."""
    return f"{version}@" if commit is None else f"{version}@{commit.size}.{commit.mtime_ns}"


def _number(version: str) -> int | None:
    """The version number of a name :func:`_stamped` gave (None: not one)."""
    text = version.partition("@")[0]
    return int(text) if text.isdigit() else None


def is_delta(storage: Storage, root: str) -> bool:
    return storage.is_dir(f"{root}/{LOG}")


class DeltaSource(LakeSource):
    name = "delta"

    def __init__(self, storage: Storage, root: str) -> None:
        super().__init__(storage, root)
        self._partitions: dict[str, dict[str, object]] = {}  # path -> raw partition values, per snapshot
        # (path, the stamp's name of its deletion vector) -> the rows it deletes, of every version read.
        self._deleted: dict[tuple[str, str], np.ndarray] = {}
        # The snapshot's add actions (their statistics), their row by path, the string prefix length.
        self._actions: tuple[pa.Table, dict[str, int], int] | None = None

    # -- the table ----------------------------------------------------------------------------
    def _table(self):
        deltalake = table_library(self, "deltalake", "a Delta Lake")
        location = self.root if self.storage.is_local else self.uri
        options = dict(getattr(self.storage, "object_store_config", {}))
        try:
            return deltalake.DeltaTable(location, storage_options=options or None)
        except deltalake.exceptions.TableNotFoundError as error:
            raise LakeNotFoundError(f"no Delta table at {self.shown_root}: {error}") from error

    def _reading(self):
        return table_errors(self, table_library(self, "deltalake.exceptions", "a Delta Lake").DeltaError, OSError)

    def snapshot(self, *, exclude: str | None = None) -> Snapshot:
        with self._reading():
            table = self._table()
            self._refuse_what_is_not_read(table)
            actions = pa.table(table.get_add_actions(flatten=True))
            version = self._token(table.version())
            vectors = self._read_deletion_vectors(table)
            configuration = table.metadata().configuration or {}
            declared = _declared(table)
        paths = [self._relative(path) for path in actions.column("path").to_pylist()]
        prefix = configuration.get("delta.dataSkippingStringPrefixLength", str(_STRING_PREFIX))
        self._actions = (actions, {path: row for row, path in enumerate(paths)}, int(prefix))
        sizes = actions.column("size_bytes").to_pylist()
        mtimes = actions.column("modification_time").to_pylist()  # milliseconds
        # Delta never rewrites a data file in place: path, size and time are its identity, with
        # its deletion vector's rows.
        files = {
            path: Stamp(size, mtime * 1_000_000, vectors.get(path, ""))
            for path, size, mtime in zip(paths, sizes, mtimes, strict=True)
        }
        columns = [name for name in actions.column_names if name.startswith("partition.")]
        raw = {name.removeprefix("partition."): actions.column(name).to_pylist() for name in columns}
        self._partitions = {path: {name: values[n] for name, values in raw.items()} for n, path in enumerate(paths)}
        return Snapshot(files, version, declared.schema)

    def _relative(self, path: str) -> str:
        """A data file's path below the root, from the log's form of it: a URI reference,
        percent-encoded (over a Hive partition path that escapes its values once already)."""
        if "://" in path or path.startswith("/"):
            raise UnsupportedLakeError(
                f"Delta table {self.shown_root} names data file {path} by an absolute path (a shallow clone?): "
                "lakeseek reads only tables whose files are below their root"
            )
        return unquote(path)

    def _refuse_what_is_not_read(self, table) -> None:
        mode = (table.metadata().configuration or {}).get("delta.columnMapping.mode", "none")
        if mode not in ("none", None):
            raise UnsupportedLakeError(
                f"Delta table {self.shown_root} uses column mapping (mode {mode}): lakeseek does not read it yet"
            )

    # -- deletion vectors --------------------------------------------------------------------------
    def _read_deletion_vectors(self, table) -> dict[str, str]:
        """The table's deletion vectors, kept by the name a file's stamp gives its vector: path
        -> that name, for the files that have one. Only a table whose protocol allows them is asked."""
        if "deletionVectors" not in (table.protocol().reader_features or []):
            return {}
        vectors = pa.table(table.deletion_vectors())
        prefix = table.table_uri.rstrip("/") + "/"
        names = {}
        for uri, keep in zip(vectors.column("filepath").to_pylist(), vectors.column("selection_vector"), strict=True):
            if not uri.startswith(prefix):
                raise UnsupportedLakeError(
                    f"Delta table {self.shown_root} deletes rows of {uri}, a file outside its root"
                )
            path = unquote(uri[len(prefix) :])
            deleted = np.flatnonzero(~keep.values.to_numpy(zero_copy_only=False)).astype(np.int64)
            digest = hashlib.blake2b(deleted.tobytes(), digest_size=8).hexdigest()
            names[path] = name = f"{_VECTOR}{len(deleted)}-{digest}"
            self._deleted[(path, name)] = deleted
        return names

    def deleted_rows(self, file: str, stamp: Stamp | None) -> np.ndarray | None:
        if stamp is not None and not stamp.version.startswith(_VECTOR):
            return None
        if stamp is None or (file, stamp.version) not in self._deleted:
            # A process (a task) that has not read the table's vectors, or a table that moved on.
            current = self.snapshot().files.get(file)
            if stamp is None:
                return None if current is None else self._deleted.get((file, current.version))
            if (file, stamp.version) not in self._deleted:
                raise DataFileChangedError(
                    f"data file {self.shown(file)} changed while it was read (the table deleted rows of it "
                    "since): run it again"
                )
        return self._deleted[(file, stamp.version)]

    # -- versions ------------------------------------------------------------------------------
    def version(self, known: str | None = None) -> str | None:
        """The table's latest version: one LIST of the log from ``known``'s commit on (that
        commit must still be the one ``known`` names, or the table is another one now)."""
        number = None if known is None else _number(known)
        start_after = None if number is None or number == 0 else f"{self.root}/{LOG}/{number - 1:020d}.json"
        commits, latest = self._listed(start_after)
        if latest is None and start_after is not None:
            commits, latest = self._listed(None)  # fewer commits than known: another table now
        if latest is None:
            raise LakeNotFoundError(f"no Delta table at {self.shown_root}: its log holds no commit")
        # Known's own commit is listed too: a table written again with as many commits differs
        # in that file's size or time, so its name differs from ``known``.
        return _stamped(latest, commits.get(latest))

    def _listed(self, start_after: str | None) -> tuple[dict[int, FileStatus], int | None]:
        """The log's commits (by version) listed after ``start_after``, and its latest version."""
        commits: dict[int, FileStatus] = {}
        latest = None
        for status in self.storage.list_files(f"{self.root}/{LOG}", recursive=False, start_after=start_after):
            name = status.path.rsplit("/", 1)[-1]
            found = _COMMIT.fullmatch(name) or _CHECKPOINT.fullmatch(name)
            if found:
                latest = max(latest or 0, int(found[1]))
                if _COMMIT.fullmatch(name):
                    commits[int(found[1])] = status
        return commits, latest

    def _token(self, version: int) -> str:
        """``version`` as the source names it: its number and its commit file's size and time."""
        start_after = None if version == 0 else f"{self.root}/{LOG}/{version - 1:020d}.json"
        commits, _ = self._listed(start_after)
        return _stamped(version, commits.get(version))

    def changes(self, since: str, snapshot: Snapshot) -> Changes | None:
        added: set[str] = set()
        removed: set[str] = set()
        first, last = _number(since), _number(snapshot.version)
        if first is None or last is None:
            return None
        for version in range(first + 1, last + 1):
            try:
                commit = self.storage.read(f"{self.root}/{LOG}/{version:020d}.json")
            except FileNotFoundError:
                return None  # cleaned up after a checkpoint: the stamps tell
            for line in commit.splitlines():
                try:
                    action = json.loads(line) if line.strip() else {}
                except (ValueError, RecursionError) as error:
                    raise LakeMetadataError(
                        f"cannot read the delta table {self.shown_root}: commit {version} is not JSON lines"
                    ) from error
                if "add" in action:
                    added.add(self._relative(action["add"]["path"]))
                elif "remove" in action:
                    removed.add(self._relative(action["remove"]["path"]))
        return Changes(frozenset(added), frozenset(removed))

    # -- what the files hold -----------------------------------------------------------------------
    def recorded_statistics(self, files: Sequence[str], schema: pa.Schema) -> dict[str, dict[str, ColumnStatistics]]:
        """The ``add`` actions' statistics (``numRecords``, ``nullCount``, ``minValues``,
        ``maxValues``), where they bound the values: timestamps widened by the millisecond they
        are cut to, a string maximum only when shorter than the prefix Delta cuts strings to."""
        if self._actions is None or any(file not in self._actions[1] for file in files):
            self.snapshot()  # a process (a task) that has not read the table's files yet
        actions, rows, prefix = self._actions
        positions = pa.array([rows[file] for file in files if file in rows], pa.int64())
        records = actions.column("num_records").take(positions).to_pylist()
        found: dict[str, dict[str, ColumnStatistics]] = {file: {} for file in files if file in rows}
        for field in schema:
            parts = [f"{part}.{field.name}" for part in ("min", "max", "null_count")]
            if "." in field.name or not _bounded(field.type) or not set(parts) <= set(actions.column_names):
                continue
            lows, highs, nulls = (actions.column(part).take(positions).to_pylist() for part in parts)
            for file, count, low, high, null in zip(found, records, lows, highs, nulls, strict=True):
                if count is None or null is None:
                    continue
                if low is None or high is None:
                    if low is None and high is None and null == count:
                        found[file][field.name] = ColumnStatistics(None, None, null, 0)
                    continue
                if isinstance(high, str) and len(high) >= prefix:
                    continue  # perhaps cut, and then perhaps below the file's highest value
                if isinstance(low, datetime.datetime):
                    try:
                        low, high = low - _TIMESTAMP_STEP, high + _TIMESTAMP_STEP
                    except OverflowError:
                        continue
                found[file][field.name] = ColumnStatistics(low, high, null, count - null)
        return found

    def partition_values(self, file: str, fields: pa.Schema, time_zone: str) -> dict[str, object]:
        if file not in self._partitions:
            self.snapshot()  # a process (a task) that has not read the table's files yet
        raw = self._partitions.get(file, {})
        return {field.name: _typed(raw.get(field.name), field.type) for field in fields}

    def spark_misread_partitions(self, files: Iterable[str]) -> str | None:
        """delta-rs writes a partition value's non-ASCII characters percent-encoded as UTF-8 in
        the directory name (and an empty string as ``p=``); Spark decodes each ``%XX`` as one
        character, so it would read ``é`` as ``Ã©``. The log's text, not the name, is the value."""
        for file in files:
            if file not in self._partitions:
                self.snapshot()
            named = raw_partition_values(file)
            for column, value in self._partitions.get(file, {}).items():
                found = named.get(column)
                seen = None if found in (None, DEFAULT_PARTITION_NAME) else unescape_path_name(found)
                # Numbers, dates and times are ASCII text, which Spark casts to the table's type.
                text = value if isinstance(value, str) else seen if value is not None else None
                if found is None or found == "" or seen != text:
                    return (
                        f"Spark would read partition column '{column}' of data file {file} from its directory name "
                        f"as {seen!r}, but the Delta table holds {value!r}: read the table with the lakeseek_python "
                        "format or lakeseek.Index.read"
                    )
        return None

    def partition_expression(self, file: str, fields: pa.Schema, time_zone: str) -> ds.Expression:
        return values_expression(self.partition_values(file, fields, time_zone), fields)

    def partition_types(self, files: Iterable[str], partition_columns: Sequence[str]) -> dict[str, pa.DataType]:
        return {}  # the table's schema types them, whatever the files

    def discover(self, files: Mapping[str, Stamp], runner: Callable[[], Runner]) -> LakeSchema:
        with self._reading():
            return _declared(self._table())


def _declared(table) -> LakeSchema:
    """The table's schema, its partition columns last (as Spark reads a Delta table)."""
    schema = plain_schema(pa.schema(table.schema().to_arrow()))
    partition_columns = tuple(table.metadata().partition_columns)
    data = [field for field in schema if field.name not in partition_columns]
    return LakeSchema.of(pa.schema(data + [schema.field(name) for name in partition_columns]), partition_columns)


def _bounded(arrow_type: pa.DataType) -> bool:
    if pa.types.is_decimal(arrow_type) and arrow_type.precision > _EXACT_DECIMAL_DIGITS:
        return False
    return bounded_by_metadata(arrow_type)


@lru_cache(maxsize=4096)
def _typed(raw: object, arrow_type: pa.DataType) -> object:
    """A partition value as deltalake gives it (a value of the column's type, or the log's text
    of it; None for NULL), as a value of its type."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        return pa.scalar(raw).cast(arrow_type).as_py()
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return raw
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return raw.encode("utf-8")
    return partition_value(raw, arrow_type, "UTC")
