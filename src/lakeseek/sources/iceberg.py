"""An Apache Iceberg table (a location holding ``metadata/*.metadata.json``) as a lake source.

The lake is the data files of the table's current snapshot, planned by ``pyiceberg`` from the
newest metadata file, not a listing of the location (which also holds files the table
removed). The version is the newest metadata file's name: checking it costs one small read
(``metadata/version-hint.text``, where a Hadoop-style table keeps one) and a HEAD of the
metadata file numbered after it, or one LIST of ``metadata/`` after the name an index
recorded. Iceberg writes every column, partition source columns included, into its data
files, so the lake has no partition columns of its own.

Not read yet, and refused rather than read wrong: delete files (merge-on-read deletes), and
columns renamed, or dropped and added again under their name, since files were written
(Iceberg matches columns by id, Parquet readers by name), nested fields included. The
table's schemas say so while its metadata keeps them; once old schemas are removed
(``remove-schemas``), the field ids in each data file read say so (the table's name mapping,
for a file added without ids). A dropped column is not
one of the lake's, though older files hold it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

import pyarrow as pa

from lakeseek.engine.runner import Runner
from lakeseek.exceptions import LakeNotFoundError, LakeseekError, UnsupportedLakeError
from lakeseek.io import Stamp, Storage, storage_for
from lakeseek.lake.files import file_schemas, plain_schema
from lakeseek.lake.formats.base import ColumnStatistics
from lakeseek.lake.schemas import COLUMN_ID
from lakeseek.lru import LRU, named
from lakeseek.sources.base import (
    LakeSchema,
    LakeSource,
    Snapshot,
    TableName,
    bounded_by_metadata,
    table_errors,
    table_library,
)

CATALOG_SCHEME = "iceberg"
METADATA = "metadata"
HINT = "version-hint.text"
# pyiceberg's errors have no common base (a damaged metadata file raises its ValidationError).
_LIBRARY_ERRORS = (Exception,)
_NUMBERED = re.compile(r"(?:v([0-9]+)|([0-9]+)-[0-9a-fA-F-]+)\.metadata\.json")


def is_iceberg(storage: Storage, root: str) -> bool:
    return any(_NUMBERED.fullmatch(status.path.rsplit("/", 1)[-1]) for status in _metadata_files(storage, root))


def _metadata_files(storage: Storage, root: str, start_after: str | None = None):
    return storage.list_files(f"{root}/{METADATA}", recursive=False, start_after=start_after)


def _number(name: str) -> int:
    found = _NUMBERED.fullmatch(name)
    return int(found[1] or found[2]) if found else -1


class IcebergSource(LakeSource):
    """An Iceberg table by its location, or through its catalog (``catalog``: the catalog's
    name in pyiceberg's configuration and the table's ``namespace.table``)."""

    # Data files lie under data/, partition columns inside them: Spark infers no partition from
    # the directory names (pyiceberg escapes values in them its own way, 'a b' as 'a+b').
    spark_listing_options: ClassVar[Mapping[str, str]] = {"recursiveFileLookup": "true"}

    name = "iceberg"

    def __init__(self, storage: Storage, root: str, catalog: tuple[str, str] | None = None) -> None:
        super().__init__(storage, root)
        self.catalog = catalog
        self._loaded_catalog = None
        # The snapshot's data files (their metrics) by path, and the table's columns by name.
        self._data_files: dict[str, object] | None = None
        self._fields: dict[str, object] = {}
        # The current schema's columns, nested ones too, by field id: their names as ``a.b``;
        # and the field ids the table's name mapping gives the names in files written without ids.
        # Both for the version ``_names_version``, which a check of files compares with the
        # newest this source saw (``_seen_version``): a handle may read a state another took.
        self._names_by_id: dict[int, str] | None = None
        self._mapped_ids: dict[str, int] = {}
        self._names_version: str | None = None
        self._seen_version: str | None = None

    @property
    def uri(self) -> str:
        if self.catalog is None:
            return super().uri
        return f"{CATALOG_SCHEME}://{self.catalog[0]}/{self.catalog[1]}"

    @property
    def shown_root(self) -> str:
        return super().shown_root if self.catalog is None else self.uri

    # -- the table ----------------------------------------------------------------------------
    def version(self, known: str | None = None) -> str | None:
        """The current metadata file: as the catalog names it (its URI), else the newest in
        ``metadata/`` (its name; ``version-hint.text`` names it where the table keeps one)."""
        self._seen_version = self._current_version(known)
        return self._seen_version

    def _current_version(self, known: str | None) -> str:
        if self.catalog is not None:
            with table_errors(self, *_LIBRARY_ERRORS):
                current = self._catalog_table().metadata_location
            # Named as by the table's location where it is there, so that either way of opening
            # the table gives one token per version.
            inside = f"{self.storage.uri(f'{self.root}/{METADATA}')}/"
            return current[len(inside) :] if current.startswith(inside) else current
        try:
            hint = self.storage.read(f"{self.root}/{METADATA}/{HINT}").decode(errors="replace").strip()
        except FileNotFoundError:
            hint = ""
        if hint.isascii() and hint.isdigit():
            names = [self._past_the_hint(int(hint))]
        else:  # no hint, or not a number: Iceberg's Hadoop tables then list their metadata files
            start = _listing_start(known)
            start = None if start is None else f"{self.root}/{METADATA}/{start}"
            names = [status.path.rsplit("/", 1)[-1] for status in _metadata_files(self.storage, self.root, start)]
            names = [name for name in names if _NUMBERED.fullmatch(name)] + ([known] if known else [])
        if not names:
            raise LakeNotFoundError(f"no Iceberg table at {self.shown_root}: no metadata file")
        newest = max(names, key=_number)
        rivals = {name for name in names if _number(name) == _number(newest)}
        if len(rivals) > 1:
            # Writers that raced for one sequence number: only the table's catalog knows which won.
            raise UnsupportedLakeError(
                f"Iceberg table {self.shown_root} has {len(rivals)} metadata files numbered {_number(newest)} "
                f"({', '.join(sorted(rivals))}): open it through its catalog, "
                f"as {CATALOG_SCHEME}://CATALOG/NAMESPACE.TABLE"
            )
        return newest

    def _past_the_hint(self, hinted: int) -> str:
        """The newest of the metadata files numbered from ``hinted`` on: a writer writes the next
        one before it moves the hint (and a crash between leaves the hint behind), so readers
        look for later numbers, as Iceberg's Hadoop tables do."""
        number = hinted
        while self.storage.is_file(f"{self.root}/{METADATA}/v{number + 1}.metadata.json"):
            number += 1
        return f"v{number}.metadata.json"

    def _catalog_table(self):
        if self._loaded_catalog is None:
            catalogs = table_library(self, "pyiceberg.catalog", "an Apache Iceberg")
            self._loaded_catalog = catalogs.load_catalog(self.catalog[0], **_io_properties(self))
        return self._loaded_catalog.load_table(self.catalog[1])

    def _table(self, metadata: str):
        tables = table_library(self, "pyiceberg.table", "an Apache Iceberg")
        uri = metadata if "://" in metadata else self.storage.uri(f"{self.root}/{METADATA}/{metadata}")
        return tables.StaticTable.from_metadata(uri, _io_properties(self))

    def snapshot(self, *, exclude: str | None = None) -> Snapshot:
        metadata = self.version()
        with table_errors(self, *_LIBRARY_ERRORS):
            table = self._table(metadata)
            names_by_id = self._refuse_renamed_columns(table)
            self._mapped_ids = _mapped_ids(table)
            tasks = list(table.scan().plan_files())
        location = table.location().rstrip("/")
        files = {}
        self._fields = {field.name: field for field in table.schema().fields}
        self._names_by_id, self._names_version = names_by_id, metadata
        self._data_files = {}
        for task in tasks:
            if task.delete_files:
                raise UnsupportedLakeError(
                    f"Iceberg table {self.shown_root} has delete files (merge-on-read deletes): lakeseek does not "
                    "read them yet (rewriting the data files, e.g. with Spark's rewrite_data_files, removes them)"
                )
            path = task.file.file_path
            if not path.startswith(f"{location}/"):
                raise UnsupportedLakeError(
                    f"Iceberg table {self.shown_root} holds data file {path} outside its location"
                )
            # Iceberg never rewrites a data file in place: path and size are its identity.
            files[path[len(location) + 1 :]] = Stamp(task.file.file_size_in_bytes, 0, "")
            self._data_files[path[len(location) + 1 :]] = task.file
        return Snapshot(files, metadata, _declared(table))

    def recorded_statistics(self, files: Sequence[str], schema: pa.Schema) -> dict[str, dict[str, ColumnStatistics]]:
        """The manifests' column metrics (record count, NULL counts, lower and upper bounds),
        strings' bounds left out: pyiceberg (0.12 at least) takes a file's bounds from its
        row groups' Parquet statistics, and a row group with a string too long for them (over
        4 KiB) has none, so its values can lie outside the bounds it writes."""
        if self._data_files is None or any(file not in self._data_files for file in files):
            self.snapshot()  # a process (a task) that has not planned the table yet
        self._know_columns()
        conversions = table_library(self, "pyiceberg.conversions", "an Apache Iceberg")
        found: dict[str, dict[str, ColumnStatistics]] = {}
        for file in files:
            data_file = self._data_files.get(file)
            if data_file is None:
                continue
            found[file] = recorded = {}
            for field in schema:
                column = self._fields.get(field.name)
                nanoseconds = pa.types.is_timestamp(field.type) and field.type.unit == "ns"
                text = pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
                if column is None or nanoseconds or text or not bounded_by_metadata(field.type):
                    continue
                nulls = (data_file.null_value_counts or {}).get(column.field_id)
                low = (data_file.lower_bounds or {}).get(column.field_id)
                high = (data_file.upper_bounds or {}).get(column.field_id)
                if nulls is None:
                    continue
                if low is None or high is None:
                    if low is None and high is None and nulls == data_file.record_count:
                        recorded[field.name] = ColumnStatistics(None, None, nulls, 0)
                    continue
                bounds = [_value(conversions.from_bytes(column.field_type, raw), field.type) for raw in (low, high)]
                recorded[field.name] = ColumnStatistics(*bounds, nulls, data_file.record_count - nulls)
        return found

    def _refuse_renamed_columns(self, table) -> dict[int, str]:
        """Iceberg matches a file's columns with the table's by id, lakeseek by name: a column
        renamed, or dropped and added again (a new id under an old name, NULL in older files),
        nested fields included, would be read wrong, so the table is refused. The current
        schema's names by field id are returned."""
        schemas = table_library(self, "pyiceberg.schema", "an Apache Iceberg")
        current = schemas.index_name_by_id(table.schema())
        names = set(current.values())
        for schema in table.metadata.schemas:
            for field_id, name in schemas.index_name_by_id(schema).items():
                if (why := _misnamed(current, names, field_id, name)) is not None:
                    raise UnsupportedLakeError(f"Iceberg table {self.shown_root} {why}")
        return current

    def _know_columns(self) -> None:
        """The table's columns (names by field id, mapped ids, fields by name) as of the newest
        version this source saw: a process (a task) that has not planned the table yet, or a
        handle reading a state another handle took, has not read them for it."""
        if self._names_by_id is not None and self._names_version == self._seen_version:
            return
        version = self._seen_version or self.version()
        with table_errors(self, *_LIBRARY_ERRORS):
            table = self._table(version)
            self._names_by_id, self._mapped_ids = self._refuse_renamed_columns(table), _mapped_ids(table)
        self._fields = {field.name: field for field in table.schema().fields}
        self._names_version = version

    def check_columns(self, files: Sequence[str], stamps: Mapping[str, Stamp] | None = None) -> None:
        """Each file's columns by the field ids its Parquet schema gives them (read once per
        file and process: Iceberg never rewrites a file), against the table's: the table's
        schemas tell a rename only while its metadata keeps the older ones."""
        if not files:
            return
        self._know_columns()
        wanted = set(files)
        sizes = {path: stamp.size for path, stamp in (stamps or {}).items() if path in wanted}
        keys = {path: (self.storage.uri(self.path(path)), sizes.get(path)) for path in files}
        missing = [path for path in files if _FILE_FIELD_IDS.get(keys[path]) is None]
        names = set(self._names_by_id.values())
        for path, schema in zip(missing, file_schemas(self, missing, sizes, stamps, plain=False), strict=True):
            _FILE_FIELD_IDS.put(keys[path], _file_columns(schema))
        for path in files:
            for name, written_id in _FILE_FIELD_IDS.get(keys[path]):
                field_id = self._mapped_ids.get(name) if written_id is None else written_id
                if field_id is None:
                    continue  # neither written nor mapped: pyiceberg reads it by name too
                if (why := _misnamed(self._names_by_id, names, field_id, name)) is not None:
                    raise UnsupportedLakeError(
                        f"Iceberg table {self.shown_root}: data file {self.shown(path)} holds column {name!r} "
                        f"(field id {field_id}), and the table since {why}"
                    )

    def discover(self, files: Mapping[str, Stamp], runner: Callable[[], Runner]) -> LakeSchema:
        metadata = self.version()
        with table_errors(self, *_LIBRARY_ERRORS):
            return LakeSchema.of(_declared(self._table(metadata)))


def _misnamed(current: Mapping[int, str], names: set[str], field_id: int, name: str) -> str | None:
    """Why the column of ``field_id`` named ``name`` (in an older schema, or a data file) is
    not the table's column of that name, given the table's names by field id now (and the
    set of them, ``names``: asked for every column of every file read)."""
    now = current.get(field_id)
    if now is not None and now != name:
        return f"renamed column {name!r} to {now!r}: lakeseek reads columns by name and does not follow renames yet"
    if now is None and name in names:
        return (
            f"dropped column {name!r} and added another of that name: lakeseek reads columns by name and "
            "cannot tell the two apart in older files yet"
        )
    return None


# Data files' columns with their Parquet field ids (see IcebergSource.check_columns), by URI and size.
_FILE_FIELD_IDS: LRU[tuple[tuple[str, int | None], ...]] = named("Iceberg data files' field ids", 100_000)


_LISTS = (pa.ListType, pa.LargeListType, pa.FixedSizeListType, pa.ListViewType, pa.LargeListViewType)


def _file_columns(schema: pa.Schema) -> tuple[tuple[str, int | None], ...]:
    """A file's columns, nested ones too, named as pyiceberg names them (``a.b``, ``a.element``
    of a list, ``a.key`` and ``a.value`` of a map), each with the Parquet field id written for
    it; None for a file written without ids (added to the table from elsewhere), which the
    table's name mapping names."""
    found: list[tuple[str, int | None]] = []

    def visit(field: pa.Field, name: str) -> None:
        field_id = (field.metadata or {}).get(COLUMN_ID)
        found.append((name, None if field_id is None else int(field_id)))
        t = field.type
        if pa.types.is_struct(t):
            children = [(t.field(i), t.field(i).name) for i in range(t.num_fields)]
        elif pa.types.is_map(t):
            children = [(t.key_field, "key"), (t.item_field, "value")]
        elif isinstance(t, _LISTS):
            children = [(t.value_field, "element")]
        else:
            children = []
        for child, part in children:
            visit(child, f"{name}.{part}")

    for field in schema:
        visit(field, field.name)
    return tuple(found)


def _mapped_ids(table) -> dict[str, int]:
    """The field id the table's name mapping (``schema.name-mapping.default``) gives each name
    a file written without ids may use (``a.b`` for nested ones: every alias of each level)."""
    text = table.metadata.properties.get("schema.name-mapping.default")
    if not text:
        return {}
    found: dict[str, int] = {}

    def visit(fields: list, prefixes: list[str]) -> None:
        for field in fields:
            names = [f"{prefix}{name}" for prefix in prefixes for name in field.get("names", [])]
            if "field-id" in field:
                found.update(dict.fromkeys(names, int(field["field-id"])))
            visit(field.get("fields") or [], [f"{name}." for name in names])

    visit(json.loads(text), [""])
    return found


def _declared(table) -> pa.Schema:
    """The table's schema, each column with its field ids (COLUMN_ID, nested ones too): an
    index serves a column only while its ids are those it recorded."""
    declared = table.schema().as_arrow()
    plain = plain_schema(declared)
    ids = [{COLUMN_ID: field.metadata[COLUMN_ID]} for field in declared]
    return pa.schema([field.with_metadata(found) for field, found in zip(plain, ids, strict=True)])


def _value(value: object, arrow_type: pa.DataType) -> object:
    """A bound as pyiceberg decodes it (dates and timestamps as numbers of their unit) as a
    value of the lake's type."""
    if pa.types.is_date32(arrow_type) and isinstance(value, int):
        return pa.scalar(value, pa.int32()).cast(arrow_type).as_py()
    if pa.types.is_timestamp(arrow_type) and isinstance(value, int):
        return pa.scalar(value, pa.int64()).cast(arrow_type).as_py()
    return value


def _io_properties(source: LakeSource) -> dict[str, str]:
    """pyiceberg's FileIO settings for the lake's object store: the store's own settings
    (:mod:`lakeseek.io`), under pyiceberg's names for them."""
    config = getattr(source.storage, "object_store_config", {})
    names = {
        "aws_access_key_id": "s3.access-key-id",
        "aws_secret_access_key": "s3.secret-access-key",
        "aws_session_token": "s3.session-token",
        "aws_region": "s3.region",
        "aws_endpoint": "s3.endpoint",
        "azure_storage_account_name": "adls.account-name",
        "azure_storage_account_key": "adls.account-key",
        "azure_storage_sas_token": "adls.sas-token",
    }
    return {names[key]: value for key, value in config.items() if key in names}


def open_catalog_table(location: str, storage_options: Mapping[str, object] | None) -> IcebergSource:
    """The table ``iceberg://CATALOG/NAMESPACE.TABLE``, through the catalog of that name in
    pyiceberg's own configuration (``.pyiceberg.yaml``, or ``PYICEBERG_CATALOG__...`` variables)."""
    catalog, _, identifier = location[len(f"{CATALOG_SCHEME}://") :].partition("/")
    if not catalog or "." not in identifier.strip("."):
        raise LakeseekError(f"{location} is no Iceberg catalog table: write {CATALOG_SCHEME}://CATALOG/NAMESPACE.TABLE")
    named = TableName(IcebergSource.name, location)
    catalogs = table_library(named, "pyiceberg.catalog", "an Apache Iceberg")
    with table_errors(named, *_LIBRARY_ERRORS):
        table_location = catalogs.load_catalog(catalog).load_table(identifier).location()
    # The catalog is loaded again by the source, with the object store's settings for its files.
    storage, root = storage_for(table_location, storage_options)
    return IcebergSource(storage, root, (catalog, identifier))


def _listing_start(known: str | None) -> str | None:
    """Where a listing of ``metadata/`` may start to see every file numbered as ``known`` or
    later: after its number's prefix (its rivals of the same number sort on either side of it),
    while zero-padded numbers sort in their order; from the start once a number of more digits
    could sort before it (past 09999 in the five digits pyiceberg writes)."""
    if known is None or not _NUMBERED.fullmatch(known):
        return None
    prefix = known.split("-", 1)[0]
    return f"{prefix}-" if prefix.startswith("0") else None
