"""Reading a lake's data files as Spark reads them: datasets over chosen files (with their
partition values, dates and timestamps as Spark reads them, columns spelled in another case),
their schemas, and errors that name the file a read failed on.

Which files make the lake, and their partition values, are the lake source's
(:mod:`lakeseek.sources`); this module only reads them.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from lakeseek.exceptions import (
    DataFileChangedError,
    DataFileError,
    IncompatibleSchemaError,
    LakeMetadataError,
    one_line,
)
from lakeseek.io import Stamp
from lakeseek.lake.datetimes import RebasedDataset
from lakeseek.lake.formats import DataFile
from lakeseek.lake.rows import concat_rows
from lakeseek.lake.schemas import match_columns, spellings, without_spellings
from lakeseek.lru import LRU, named

if TYPE_CHECKING:
    from lakeseek.sources.base import LakeSource

T = TypeVar("T")


def partition_fields(schema: pa.Schema, partition_columns: Sequence[str]) -> pa.Schema:
    return pa.schema([schema.field(name) for name in partition_columns])


def open_dataset(
    source: LakeSource,
    paths: list[str],
    schema: pa.Schema,
    partition_columns: Sequence[str],
    row_groups: Mapping[str, Sequence[int]] | None = None,
    time_zone: str = "UTC",
    stamps: Mapping[str, Stamp] | None = None,
) -> ds.FileSystemDataset | RebasedDataset | _Files:
    """A pyarrow dataset over exactly these data files, with their partition values, without
    the rows the source deleted from them (:meth:`LakeSource.deleted_rows`).

    ``row_groups`` limits a file to some of its row groups (files absent from it are read whole).
    ``stamps``, the lake's stamps of the files: their sizes spare an object store a HEAD request
    per file, and they name the content whose deleted rows are left out.
    Files read in the source's format (:mod:`lakeseek.lake.formats`): Parquet's dates and
    timestamps as Spark reads them (:mod:`lakeseek.lake.datetimes`). Partition values of
    timestamps are in ``time_zone``, as Spark's session reads them.
    """
    known = stamps or {}
    deleted = {path: rows for path in paths if (rows := source.deleted_rows(path, known.get(path))) is not None}
    whole = [path for path in paths if path not in deleted]
    dataset = _dataset(source, whole, schema, partition_columns, row_groups or {}, time_zone, known)
    if not deleted:
        return dataset
    # A file that lost rows is read whole, so that its rows keep their positions.
    parts = [_WithoutRows(_dataset(source, [path], schema, partition_columns, {}, time_zone, known), rows, path)
             for path, rows in deleted.items()]  # fmt: skip
    return _Files(schema, [dataset, *parts] if whole else parts)


def _dataset(
    source: LakeSource,
    paths: list[str],
    schema: pa.Schema,
    partition_columns: Sequence[str],
    row_groups: Mapping[str, Sequence[int]],
    time_zone: str,
    stamps: Mapping[str, Stamp],
) -> ds.FileSystemDataset | RebasedDataset:
    fields = partition_fields(schema, partition_columns)
    data_format = source.data_format
    file_format = data_format.dataset_format(
        pa.schema([f for f in schema if f.name not in partition_columns]), local=source.storage.is_local
    )
    fs = source.storage.fs
    fragments: list[ds.Fragment] = []
    subsets: list[tuple[int, _Kept, Sequence[int]]] = []
    for path in paths:
        partition = source.partition_expression(path, fields, time_zone) if partition_columns else ds.scalar(True)
        stamp, chosen = stamps.get(path), row_groups.get(path)
        if stamp is None or not data_format.keeps_footers:
            fragments.append(
                data_format.fragment(file_format, source.path(path), fs, partition, stamp and stamp.size, chosen)
            )
            continue
        key = (id(fs), id(file_format), source.path(path), tuple(stamp), str(partition))
        kept = _FRAGMENTS.get(key)
        if kept is None:
            kept = _Kept(data_format.fragment(file_format, source.path(path), fs, partition, stamp.size, None))
            if settled(stamp):
                _FRAGMENTS.put(key, kept)
        if chosen is not None:
            subsets.append((len(fragments), kept, chosen))
        fragments.append(kept.fragment)
    if subsets:
        # A subset is made from the footer: those not read yet are read at once, not one by one.
        _read_footers([kept for _, kept, _ in subsets if not kept.footer_read])
        for i, kept, chosen in subsets:
            fragments[i] = data_format.subset(kept.fragment, chosen)
    return data_format.view(ds.FileSystemDataset(fragments, schema, file_format, fs))


_FOOTER_READERS = 16

# How long after its last modification a file's stamp is trusted to name its content for
# good. A write updates the modification time when it starts: a stamp taken while one write
# call copies data is already the final stamp, with the old bytes still in the file (seen
# here: a footer read during one 64 MB write, kept under the final stamp, read new data with
# old statistics for the rest of the process). What is kept per stamp is kept only once the
# file has been left alone this long; younger files are read afresh by every query.
SETTLE_NS = 2_000_000_000


def settled(stamp: Stamp) -> bool:
    """Whether a file of this stamp was last modified long enough ago to keep what is read of it."""
    return stamp.mtime_ns <= time.time_ns() - SETTLE_NS


def _read_footers(kept: list[_Kept]) -> None:
    def read(one: _Kept) -> None:
        one.fragment.ensure_complete_metadata()
        one.footer_read = True

    if len(kept) <= 1:
        for one in kept:
            read(one)
        return
    with ThreadPoolExecutor(min(_FOOTER_READERS, len(kept))) as pool:
        list(pool.map(read, kept))


@dataclass
class _Kept:
    fragment: ds.Fragment
    footer_read: bool = False


# Whole-file fragments of data files read in this process, by file system, format, path, stamp
# (which changes with the content: see Storage.walk_files) and partition values. A Parquet
# fragment keeps the footer its first scan read, so a file read again (a query repeated, or
# another on the same files) is opened without reading it again.
_FRAGMENTS: LRU[_Kept] = named("data file footers", 20_000)


def kept_rows(num_rows: int, deleted: np.ndarray, path: str) -> pa.BooleanArray:
    """Which of a file's ``num_rows`` rows are the lake's, given the positions of those deleted."""
    if len(deleted) and deleted[-1] >= num_rows:
        raise LakeMetadataError(
            f"the lake deletes row {deleted[-1]} of data file {path}, which has {num_rows} rows: "
            "its deletion vector does not belong to this file"
        )
    keep = np.ones(num_rows, dtype=bool)
    keep[deleted] = False
    return pa.array(keep)


def open_files(
    source: LakeSource,
    paths: list[str],
    schema: pa.Schema,
    partition_columns: tuple[str, ...],
    row_groups: Mapping[str, Sequence[int]] | None = None,
    **options: Any,
):
    """:func:`open_dataset` (``options`` are its own), where files that spell a column in
    another case (see :data:`lakeseek.lake.schemas.SPELLINGS`) are read under the schema's spelling."""
    other = spellings(schema)
    schema = without_spellings(schema)
    if not other or not paths:
        return open_dataset(source, paths, schema, partition_columns, row_groups, **options)
    data = [name for name in schema.names if name not in partition_columns]
    renamed: dict[str, dict[str, str]] = {}
    stamps = options.get("stamps") or {}
    sizes = {path: stamp.size for path, stamp in stamps.items()}
    for path, found in zip(paths, file_schemas(source, paths, sizes), strict=True):
        names = {name: file_name for name, file_name in match_columns(data, found.names).items() if name != file_name}
        if names:
            renamed[path] = names
    if not renamed:
        return open_dataset(source, paths, schema, partition_columns, row_groups, **options)
    selected = row_groups or {}
    same = [path for path in paths if path not in renamed]
    parts = [open_dataset(source, same, schema, partition_columns, row_groups, **options)] if same else []
    for path, names in renamed.items():
        spelled = pa.schema([field.with_name(names.get(field.name, field.name)) for field in schema])
        groups = {path: selected[path]} if path in selected else None
        table = open_dataset(source, [path], spelled, partition_columns, groups, **options).to_table()
        parts.append(ds.dataset(table.rename_columns(schema.names)))
    return _Files(schema, parts)


class _Files:
    """The part of a pyarrow dataset lakeseek uses (``schema``, ``to_table``, ``to_batches``,
    ``get_fragments``) over datasets of the same schema: its files, some read renamed, or
    without rows the lake deleted."""

    def __init__(self, schema: pa.Schema, parts: list) -> None:
        self.schema = schema
        self.parts = parts

    def get_fragments(self, filter=None):
        for part in self.parts:
            yield from part.get_fragments()

    def to_batches(self, columns=None, filter=None, **kwargs):
        for part in self.parts:
            yield from part.to_batches(columns=columns, filter=filter, **kwargs)

    def to_table(self, columns=None, filter=None, **kwargs) -> pa.Table:
        tables = [part.to_table(columns=columns, filter=filter, **kwargs) for part in self.parts]
        return concat_rows(tables)

    def count_rows(self, filter=None) -> int:
        return sum(part.count_rows(filter=filter) for part in self.parts)


class _WithoutRows:
    """One data file's dataset without the rows at ``deleted`` (positions in the file): read
    whole when asked for rows, the deleted ones removed, then filtered and projected."""

    def __init__(self, dataset: ds.FileSystemDataset | RebasedDataset, deleted: np.ndarray, path: str) -> None:
        self.dataset = dataset
        self.schema = dataset.schema
        self.deleted = deleted
        self.path = path

    def get_fragments(self, filter=None):
        return self.dataset.get_fragments()

    def to_table(self, columns=None, filter=None, **kwargs) -> pa.Table:
        table = self.dataset.to_table()  # in the file's order: the positions are of its rows
        table = table.filter(kept_rows(table.num_rows, self.deleted, self.path))
        if filter is not None:
            table = table.filter(filter)
        return table if columns is None else table.select(list(columns))

    def to_batches(self, columns=None, filter=None, **kwargs):
        yield from self.to_table(columns=columns, filter=filter).to_batches()

    def count_rows(self, filter=None) -> int:
        return self.to_table(filter=filter).num_rows


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """A file's schema as lakeseek reads it: without the metadata that differs from file to
    file, and with Arrow's view types as their plain ones (:func:`without_views`)."""
    return pa.schema([pa.field(f.name, without_views(f.type)) for f in schema])


def without_views(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with its view types (``string_view``, ``binary_view``, ``list_view``, ...,
    which Arrow-Rust writers such as DataFusion, Polars and delta-rs record in a file's Arrow
    schema) as the plain types holding the same values, which every Arrow kernel takes: the
    Parquet data is the same, and a dataset read with the plain type converts as it reads.
    A type with no view inside is returned as it is."""
    t = arrow_type
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_list_view(t):
        return pa.list_(_field_without_views(t.value_field))
    if pa.types.is_large_list_view(t):
        return pa.large_list(_field_without_views(t.value_field))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        value = _field_without_views(t.value_field)
        if value.equals(t.value_field):
            return t
        if pa.types.is_fixed_size_list(t):
            return pa.list_(value, t.list_size)
        return pa.list_(value) if pa.types.is_list(t) else pa.large_list(value)
    if pa.types.is_map(t):
        key, item = _field_without_views(t.key_field), _field_without_views(t.item_field)
        return t if key.equals(t.key_field) and item.equals(t.item_field) else pa.map_(key, item, t.keys_sorted)
    if pa.types.is_struct(t):
        fields = [_field_without_views(t.field(i)) for i in range(t.num_fields)]
        return t if all(f.equals(t.field(i)) for i, f in enumerate(fields)) else pa.struct(fields)
    if pa.types.is_dictionary(t):
        value = without_views(t.value_type)
        return t if value.equals(t.value_type) else pa.dictionary(t.index_type, value, t.ordered)
    return t


def _field_without_views(field: pa.Field) -> pa.Field:
    return field.with_type(without_views(field.type))


def open_data_file(source: LakeSource, path: str, size: int | None = None) -> DataFile:
    """One data file of the lake, opened in the source's format (a Parquet file: its footer
    read); ``size``, when known, spares an object store a HEAD request."""
    return source.data_format.open(source.storage.open_input(source.path(path), size), path)


def file_schema(source: LakeSource, path: str, size: int | None = None) -> pa.Schema:
    """The Arrow schema lakeseek reads a data file with (Parquet's INT96 as Spark types it)."""
    return plain_schema(open_data_file(source, path, size).schema)


def file_schemas(
    source: LakeSource,
    paths: Sequence[str],
    sizes: Mapping[str, int] | None = None,
    stamps: Mapping[str, Stamp] | None = None,
    *,
    plain: bool = True,
) -> list[pa.Schema]:
    """The schemas of ``paths`` (footers read in parallel), as lakeseek reads the files
    (:func:`file_schema`), or with ``plain=False`` as they are written (with their fields'
    metadata, Parquet's field ids); a damaged or vanished file is a DataFileError naming it
    (with the listing's ``stamps``, a DataFileChangedError when the file changed since: see
    :func:`reading_data_files`)."""
    known = sizes or {}

    def read(path: str) -> pa.Schema:
        size = known.get(path)
        return file_schema(source, path, size) if plain else open_data_file(source, path, size).schema

    with reading_data_files(source, paths, stamps):
        if len(paths) <= 1:
            return [read(path) for path in paths]
        with ThreadPoolExecutor(min(16, len(paths))) as pool:
            return list(pool.map(read, paths))


def distinct_schemas(
    source: LakeSource, paths: Sequence[str], sizes: Mapping[str, int] | None = None
) -> list[tuple[str, pa.Schema]]:
    """Each distinct schema among the files ``paths`` (in order), with the first file holding it."""
    seen: dict[bytes, tuple[str, pa.Schema]] = {}
    for path, schema in zip(paths, file_schemas(source, paths, sizes), strict=True):
        seen.setdefault(schema.serialize().to_pybytes(), (path, schema))
    return list(seen.values())


# What pyarrow raises for a data file it cannot read (a text file's header not UTF-8: the last).
# ArrowIndexError: row groups an index names that the file (replaced since) no longer has.
_UNREADABLE = (pa.ArrowInvalid, pa.ArrowIndexError, OSError, UnicodeDecodeError)


@contextmanager
def reading_data_files(
    source: LakeSource, paths: Sequence[str], stamps: Mapping[str, Stamp] | None = None
) -> Iterator[None]:
    """pyarrow's failures to read some of these data files as a one-line DataFileError naming the file.

    Spark fails a query over a file that is not Parquet (FAILED_READ_FILE) or that vanished
    after the listing (FILE_NOT_EXIST); so does lakeseek, saying which file. Errors that no
    data file explains (a bad filter, say) are left as they are.

    ``stamps``, the listing's stamps of the files read: a file whose stamp changed by the end of
    the read (however it ended) is a DataFileChangedError, for the read may hold rows of two
    states of the lake (:meth:`LakeSource.check_unchanged`).
    """
    try:
        yield
    except _UNREADABLE as error:
        if stamps:
            source.check_unchanged(stamps)  # a file replaced under the read explains any failure
        culprit = _unreadable_file(source, paths, error)
        reason = one_line(error)
        # Every path was listed, so one not found vanished after the listing (and may be back).
        vanished = isinstance(error, FileNotFoundError)
        if culprit is None and reason.startswith("Casting from"):  # a value the lake's type lacks
            named = f"data file {source.shown(paths[0])}" if len(paths) == 1 else f"one of {len(paths):,} data files"
            raise IncompatibleSchemaError(
                f"{named} holds a value the lake's type of its column cannot hold ({reason}); "
                "the lake's files disagree on the column's type"
            ) from error
        if culprit is None and (vanished or any(sign in reason for sign in _PARQUET_DAMAGE)):
            # Every file reads whole again: one was rewritten in place while the query read it.
            changed = f"a data file changed while it was read ({reason}): run it again"
            raise DataFileChangedError(changed) from error
        if culprit is None and isinstance(error, OSError) and len(paths) == 1:
            culprit = paths[0]  # the one file read (pyarrow cannot decode an encoding of it, say)
        if culprit is None:
            raise
        location = source.shown(culprit)
        present = source.storage.is_file(source.path(culprit))
        if vanished or not present:
            if not present and _still_named(source, culprit):  # running again reads the same file list
                missing = f"data file {location} is missing: the lake names it, its storage lacks it"
                raise DataFileError(missing) from error
            raise DataFileChangedError(f"data file {location} was removed while it was read: run it again") from error
        if source.path(culprit) in reason:
            reason = reason.split(source.path(culprit), 1)[-1].lstrip("': ") or reason
        raise DataFileError(
            f"cannot read data file {location} (not {source.data_format.title}, or damaged): {reason}"
            f"{_format_hint(source, culprit)}"
        ) from error
    if stamps:
        source.check_unchanged(stamps)


# Runs of a read, in all, when data files change under it (each run lists the lake anew).
READ_ATTEMPTS = 3


def again_when_files_change(read: Callable[..., T]) -> Callable[..., T]:
    """``read``, a method of a reader of the lake (with ``forget_listing``), run again (up to
    READ_ATTEMPTS runs) when a data file changed or vanished while it read: each run takes the
    lake's files anew, so a lake under a writer is answered as it was at one moment rather than
    refused."""

    @functools.wraps(read)
    def run(reader: Any, *args: Any, **kwargs: Any) -> T:
        # A listing kept once (or a while) cannot be read any more: forgotten before a run again.
        return run_again_when_files_change(lambda: read(reader, *args, **kwargs), reader.forget_listing)

    return run


def run_again_when_files_change(work: Callable[[], T], before_again: Callable[[], None] = lambda: None) -> T:
    """``work()``, run again (up to READ_ATTEMPTS runs, ``before_again()`` before each) when a
    data file changed or vanished while it read the lake; the last run's error is the caller's."""
    for _ in range(READ_ATTEMPTS - 1):
        try:
            return work()
        except DataFileChangedError:
            before_again()
    return work()


# What pyarrow says of bytes that are not (or no longer) a whole Parquet file.
_PARQUET_DAMAGE = (
    "Parquet magic bytes",
    "File too short",
    "Couldn't deserialize thrift",
    "Invalid IO range",
    "Unexpected end of stream",
)


# File name endings of the text formats a directory lake may be read as.
_TEXT_ENDINGS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json"}


def _format_hint(source: LakeSource, file: str) -> str:
    """What to do when a Parquet lake's file is named as another format's: open the lake so."""
    name = file.lower().removesuffix(".gz").removesuffix(".bz2")
    format_name = next((f for ending, f in _TEXT_ENDINGS.items() if name.endswith(ending)), None)
    if format_name is None or format_name == source.data_format.name:
        return ""
    return (
        f" Its name says {format_name}: open the lake as {format_name} "
        f"(--source-format {format_name}, source_format={format_name!r})."
    )


def _still_named(source: LakeSource, file: str) -> bool:
    """Whether the lake as it is now still names ``file`` (a table's log that names a file
    removed from under it); False when that cannot be told."""
    try:
        return file in source.snapshot().files
    except Exception:  # already answering a failure: one the listing meets is not the point
        return False


def _unreadable_file(source: LakeSource, paths: Sequence[str], error: Exception) -> str | None:
    """The file behind a read error: the one its message names, else the first that does not open."""
    text = str(error)
    named = [path for path in paths if source.path(path) in text]
    if named:
        return max(named, key=len)  # 'a/b.parquet' also contains 'b.parquet' of another directory
    for path in paths:
        try:
            open_data_file(source, path).schema  # noqa: B018  (a text file's types are inferred when asked)
        except _UNREADABLE:
            return path
    return None
