"""Apache Iceberg tables (written by pyiceberg) and Apache Hudi copy-on-write tables (written by
hand as Hudi lays them out: nothing on PyPI writes Hudi without Spark's Hudi bundle) as lake
sources. Every answer is compared with the table as its own library reads it (DuckDB over that
Arrow table), before and after the table changes under the index."""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
import zlib

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeseek
from lakeseek.io import counting
from tests.lakes import forget_old_schemas

WHERES = ["id = 7", "id = 1234", "id IN (3, 40, 77)", "name = 'n-3'", "name IS NULL", "id >= 30 AND id < 45"]


def _rows(first: int, count: int) -> pa.Table:
    numbers = range(first, first + count)
    return pa.table(
        {
            "id": pa.array(numbers, pa.int64()),
            "name": pa.array([None if n % 11 == 0 else f"n-{n % 17}" for n in numbers], pa.string()),
            "region": pa.array([["eu", "us", "ap"][n % 3] for n in numbers], pa.string()),
        }
    )


def _assert_exact(index: lakeseek.Index, table: pa.Table) -> None:
    rows = table  # noqa: F841  (DuckDB reads it by name)
    for where in WHERES:
        expected = sorted(row[0] for row in duckdb.sql(f"SELECT id FROM rows WHERE {where}").fetchall())
        assert sorted(index.read(where).column("id").to_pylist()) == expected, where
    pairs = index.locate([7, 40, 1234], column="id")
    assert sorted(pairs.column("key").to_pylist()) == sorted(
        n for n in table.column("id").to_pylist() if n in (7, 40, 1234)
    )


# -- Iceberg -------------------------------------------------------------------------------------------
@pytest.fixture()
def iceberg(tmp_path):
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse")
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.events", schema=_rows(0, 1).schema)
    table.append(_rows(0, 60))
    table.append(_rows(60, 30))
    table.delete("id < 10")  # copy-on-write: the old file stays in the directory
    return catalog


def test_an_iceberg_table_is_its_current_snapshot(iceberg):
    table = iceberg.load_table("ns.events")
    location = table.location().removeprefix("file://")
    index = lakeseek.create_index(location, ["id", "name"], engine="local", chunk_rows=16)
    assert index.lake.name == "iceberg" and index.root.source_version.endswith(".metadata.json")
    on_disk = [name for _, _, names in os.walk(f"{location}/data") for name in names]
    assert len(index.lake_state().files) < len(on_disk)  # the removed file stays, outside the lake
    _assert_exact(index, table.scan().to_arrow())

    table.append(_rows(1000, 300))
    table.delete("id >= 40 AND id < 50")
    stale = lakeseek.open_index(location)
    assert stale.lake_state().new and stale.lake_state().removed
    _assert_exact(stale, iceberg.load_table("ns.events").scan().to_arrow())
    refreshed = lakeseek.refresh_index(location, "incremental", engine="local")
    assert refreshed.lake_state().is_fresh
    opened = lakeseek.open_index(location)
    opened.files("id = 33")
    with counting() as io:
        opened.files("id = 33")
    assert (io.lists, io.heads, io.reads) == (1, 0, 0), io  # one listing of metadata/ checks the version
    _assert_exact(refreshed, iceberg.load_table("ns.events").scan().to_arrow())


def test_an_iceberg_table_with_renamed_columns_is_refused(iceberg):
    table = iceberg.load_table("ns.events")
    with table.update_schema() as update:
        update.rename_column("name", "label")
    with pytest.raises(lakeseek.UnsupportedLakeError, match="renamed column 'name' to 'label'"):
        lakeseek.create_index(table.location().removeprefix("file://"), ["id"], engine="local")


def test_a_column_the_iceberg_table_dropped_is_not_the_lakes(iceberg):
    """Older files still hold it: it is not read, nor can a predicate name it; added again
    under its name (a new column, NULL in older files), the table is refused."""
    from pyiceberg.types import StringType

    table = iceberg.load_table("ns.events")
    location = table.location().removeprefix("file://")
    lakeseek.create_index(location, ["id"], engine="local")
    with table.update_schema() as update:
        update.delete_column("region")
    for index in (lakeseek.open_index(location), lakeseek.refresh_index(location, "full", engine="local")):
        assert "region" not in index.schema.names and "region" not in index.read("id = 12").column_names
        with pytest.raises(lakeseek.UnknownColumnError, match="unknown column 'region'"):
            index.read("region = 'eu'")
        _assert_exact(index, iceberg.load_table("ns.events").scan().to_arrow())
    with iceberg.load_table("ns.events").update_schema() as update:
        update.add_column("region", StringType())
    iceberg.load_table("ns.events").append(_rows(500, 5))
    for attempt in (
        lambda: lakeseek.open_index(location).read("region = 'eu'"),
        lambda: lakeseek.refresh_index(location, engine="local"),
    ):
        with pytest.raises(lakeseek.UnsupportedLakeError, match="dropped column 'region' and added another"):
            attempt()


def test_renamed_and_re_added_nested_fields_are_refused(tmp_path):
    """A struct's field renamed was read as NULL; dropped and added again, its old values came
    back (Iceberg matches fields by id, nested ones too)."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.types import StringType

    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse")
    catalog.create_namespace("ns")
    nested = pa.struct([("inner", pa.string())])
    rows = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "st": pa.array([{"inner": "x"}, {"inner": "y"}], nested),
            "pairs": pa.array([[("a", 1)], []], pa.map_(pa.string(), pa.int64())),
            "items": pa.array([[{"q": 1}], None], pa.list_(pa.struct([("q", pa.int64())]))),
        }
    )
    for name, change, refusal in [
        ("renamed", lambda update: update.rename_column("st.inner", "deep"), "renamed column 'st.inner' to 'st.deep'"),
        ("readded", None, "dropped column 'st.inner' and added another"),
    ]:
        table = catalog.create_table(f"ns.{name}", schema=rows.schema)
        table.append(rows)
        location = table.location().removeprefix("file://")
        lakeseek.create_index(location, ["id"], engine="local")
        assert lakeseek.open_index(location).read("id = 1").to_pylist() == rows.slice(0, 1).to_pylist()
        with table.update_schema() as update:
            (change or (lambda update: update.delete_column("st.inner")))(update)
        if change is None:
            with catalog.load_table(f"ns.{name}").update_schema() as update:
                update.add_column(("st", "inner"), StringType())
        with pytest.raises(lakeseek.UnsupportedLakeError, match=re.escape(refusal)):
            lakeseek.open_index(location).read("id = 1")


@pytest.mark.spark
@pytest.mark.parametrize("change", ["rename", "drop and add again"])
def test_a_column_changed_before_the_old_schemas_were_removed_is_refused_by_the_files_field_ids(
    iceberg, spark, jvm_source, change
):
    """With the older schemas gone from the metadata, only the data files' field ids tell
    that their 'name' is the table's 'label' now, or no column of the table: read by name,
    a query for a renamed column's value found no row, and one for NULLs of a column added
    again found none in older files (its index said they held values)."""
    from pyiceberg.types import StringType

    import lakeseek.spark

    table = iceberg.load_table("ns.events")
    location = table.location().removeprefix("file://")
    lakeseek.create_index(location, ["name"], engine="local", name="sorted")
    lakeseek.create_index(location, ["id"], engine="local", name="covering", kind="covering", include=["name"])
    new_name = "label" if change == "rename" else "name"
    with table.update_schema() as update:
        update.rename_column("name", "label") if change == "rename" else update.delete_column("name")
    if change != "rename":
        with iceberg.load_table("ns.events").update_schema() as update:
            update.add_column("name", StringType())
    iceberg.load_table("ns.events").append(_rows(500, 5).rename_columns(["id", new_name, "region"]))
    forget_old_schemas(iceberg, "ns.events")
    refusal = "holds column 'name' \\(field id 2\\), and the table since "
    attempts = {
        "sorted": lambda: lakeseek.open_index(location, name="sorted").read(f"{new_name} IS NULL"),
        "covering": lambda: lakeseek.open_index(location, name="covering").read("id = 12", columns=["id", new_name]),
        "open_indexes": lambda: lakeseek.open_indexes(location).read(f"{new_name} = 'n-3'"),
        "create": lambda: lakeseek.create_index(location, ["id", new_name], engine="local", name="after"),
        "to_spark": lambda: lakeseek.spark.to_spark(lakeseek.open_index(location, name="covering"), spark, "id = 12"),
    }
    for name, attempt in attempts.items():
        with pytest.raises(lakeseek.UnsupportedLakeError, match=refusal):
            attempt()
            pytest.fail(name)
    # The covering index's rows of the old column are not the table's: covering_frame leaves it out.
    frame = lakeseek.spark.covering_frame(lakeseek.open_index(location, name="covering"), spark, "id")
    assert "name" not in frame.columns and "label" not in frame.columns
    if jvm_source:  # Spark's own Parquet scan, given the files by the index
        with pytest.raises(Exception, match=refusal):
            spark.read.format("lakeseek").option("name", "sorted").load(location).where("id = 12").collect()


def test_files_added_without_field_ids_are_checked_by_the_tables_name_mapping(tmp_path):
    """Files added from elsewhere (``add_files``) carry no field ids: Iceberg reads them by its
    name mapping, which follows a rename. With the older schemas removed, lakeseek read them
    by name and answered NULL for the renamed column (0 rows for a value 29 rows hold)."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse")
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.events", schema=_rows(0, 1).schema)
    location = table.location().removeprefix("file://")
    os.makedirs(f"{location}/data")
    for number in range(2):
        pq.write_table(_rows(number * 100, 100), f"{location}/data/added-{number}.parquet")
    table.add_files([f"file://{location}/data/added-{number}.parquet" for number in range(2)])
    index = lakeseek.create_index(location, ["id"], engine="local")
    _assert_exact(index, catalog.load_table("ns.events").scan().to_arrow())  # read by the mapping's names
    with catalog.load_table("ns.events").update_schema() as update:
        update.rename_column("name", "label")
    forget_old_schemas(catalog, "ns.events")
    with pytest.raises(lakeseek.UnsupportedLakeError, match="holds column 'name' \\(field id 2\\)"):
        lakeseek.open_index(location).read("label = 'n-3'")


@pytest.fixture()
def catalog_config(iceberg, tmp_path, monkeypatch):
    """The fixture's catalog in pyiceberg's own configuration, as ``test``."""
    import pyiceberg.catalog
    from pyiceberg.utils.config import Config

    monkeypatch.setenv("PYICEBERG_CATALOG__TEST__URI", f"sqlite:///{tmp_path}/catalog.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__TEST__WAREHOUSE", f"file://{tmp_path}/warehouse")
    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())  # read when pyiceberg was imported


def test_an_iceberg_table_through_its_catalog(iceberg, catalog_config):
    uri = "iceberg://test/ns.events"
    index = lakeseek.create_index(uri, ["id", "name"], engine="local", chunk_rows=16)
    table = iceberg.load_table("ns.events")
    assert index.source == uri and table.metadata_location.endswith(f"/metadata/{index.root.source_version}")
    _assert_exact(index, table.scan().to_arrow())

    table.append(_rows(2000, 50))
    stale = lakeseek.open_index(uri)
    assert stale.lake_state().new and not stale.lake_state().is_fresh
    _assert_exact(stale, iceberg.load_table("ns.events").scan().to_arrow())
    refreshed = lakeseek.refresh_index(uri, "incremental", engine="local")
    assert refreshed.lake_state().is_fresh

    # A second metadata file of the current number (a writer that lost the catalog's race):
    # by its location alone the table is ambiguous; through the catalog it is not.
    current = iceberg.load_table("ns.events").metadata_location.removeprefix("file://")
    number = os.path.basename(current).split("-", 1)[0]
    # Named to sort before the current one: a listing that starts after it would miss it.
    shutil.copy(current, f"{os.path.dirname(current)}/{number}-{uuid.UUID(int=0)}.metadata.json")
    _assert_exact(lakeseek.open_index(uri), iceberg.load_table("ns.events").scan().to_arrow())
    location = iceberg.load_table("ns.events").location().removeprefix("file://")
    with pytest.raises(lakeseek.UnsupportedLakeError, match="open it through its catalog"):
        lakeseek.open_index(location).files("id = 3")
    with pytest.raises(lakeseek.LakeseekError, match="is a iceberg table, not a delta lake"):
        lakeseek.open_lake(uri, source_format="delta")


@pytest.mark.parametrize(
    "hint", [None, b"abc", b"", b"\xff\xfe", "²".encode()], ids=["behind", "word", "empty", "bytes", "superscript"]
)
def test_a_hadoop_table_is_read_past_a_version_hint_left_behind_or_garbled(iceberg, hint):
    """A writer writes ``v<N+1>.metadata.json``, then moves ``version-hint.text``; a crash or a
    reader between sees the hint behind. Iceberg's Hadoop tables read on past it; lakeseek read
    the hinted version (a row deleted since was answered). A hint that is not a number makes
    them list the metadata files; lakeseek said "no metadata file"."""
    table = iceberg.load_table("ns.events")
    location = table.location().removeprefix("file://")
    metadata = f"{location}/metadata"
    numbered = sorted(name for name in os.listdir(metadata) if name.endswith(".metadata.json"))
    for name in numbered:  # the catalog's names as a Hadoop table names them
        os.rename(f"{metadata}/{name}", f"{metadata}/v{int(name.split('-')[0]) + 1}.metadata.json")
    newest = len(numbered)
    with open(f"{metadata}/version-hint.text", "wb") as out:
        out.write(str(newest - 2).encode() if hint is None else hint)  # behind: an append and a delete ago
    index = lakeseek.create_index(location, ["id", "name"], engine="local")
    assert index.root.source_version == f"v{newest}.metadata.json"
    _assert_exact(index, table.scan().to_arrow())
    assert index.read("id = 5").num_rows == 0  # deleted by the newest version


def test_a_metadata_listing_starts_where_no_later_number_is_missed():
    from lakeseek.sources.iceberg import _listing_start

    assert _listing_start("00012-5f0c.metadata.json") == "00012-"
    assert _listing_start("09999-5f0c.metadata.json") == "09999-"
    assert _listing_start("10000-5f0c.metadata.json") is None  # 100000-... sorts before it
    assert _listing_start("v7.metadata.json") is None and _listing_start(None) is None


def test_damaged_table_metadata_is_a_clear_error(iceberg):
    location = iceberg.load_table("ns.events").location().removeprefix("file://")
    lakeseek.create_index(location, ["id"], engine="local")
    with open(f"{location}/metadata/99999-{uuid.uuid4()}.metadata.json", "w") as out:
        out.write("{not json")
    with pytest.raises(lakeseek.LakeMetadataError, match=r"cannot read the iceberg table .*events"):
        lakeseek.open_index(location).files("id = 3")


# -- Hudi ----------------------------------------------------------------------------------------------
class HudiTable:
    """A copy-on-write Hudi table laid out as Hudi writes one: base files with the ``_hoodie_*``
    meta columns, and a timeline of commits naming the files they wrote. Table version 6 keeps
    its timeline in ``.hoodie/`` with JSON commits; version 8 (Hudi 1.x, timeline layout 2) in
    ``.hoodie/timeline/``, each completed instant named ``<requested>_<completed>.commit`` and
    holding Avro commit metadata."""

    def __init__(self, root: str, table_type: str = "COPY_ON_WRITE", table_version: int = 6) -> None:
        self.root = root
        os.makedirs(f"{root}/.hoodie")
        self.groups: dict[str, str] = {}  # partition -> its one file group's id
        self.rows: dict[str, pa.Table] = {}  # partition -> the rows of its latest base file
        self.instant = 20240101000000000
        self.completed = self.instant  # the latest completion time (layout 2)
        self.upgrade(table_version, table_type)

    def upgrade(self, table_version: int, table_type: str = "COPY_ON_WRITE") -> None:
        """Write the table's properties for ``table_version``; to 8 from 6, move the timeline as
        Hudi's upgrade does (its completed instants renamed with their completion times)."""
        layout = 2 if table_version >= 8 else 1
        with open(f"{self.root}/.hoodie/hoodie.properties", "w") as out:
            out.write(
                f"hoodie.table.name=events\nhoodie.table.type={table_type}\nhoodie.table.version={table_version}\n"
                f"hoodie.timeline.layout.version={layout}\nhoodie.table.base.file.format=PARQUET\n"
                "hoodie.table.partition.fields=region\nhoodie.datasource.write.hive_style_partitioning=true\n"
                "hoodie.table.recordkey.fields=id\nhoodie.populate.meta.fields=true\n"
                + ("hoodie.timeline.path=timeline\n" if layout == 2 else "")
            )
        self.layout = layout
        if layout == 2 and not os.path.isdir(f"{self.root}/.hoodie/timeline"):
            os.makedirs(f"{self.root}/.hoodie/timeline")
            for name in sorted(os.listdir(f"{self.root}/.hoodie")):
                if name.endswith(".commit"):
                    instant = name.removesuffix(".commit")
                    with open(f"{self.root}/.hoodie/{name}") as old:
                        stats = json.load(old)["partitionToWriteStats"]
                    self._complete(instant, str(int(instant) + 1), stats)
                    os.remove(f"{self.root}/.hoodie/{name}")

    def commit(self, rows: pa.Table) -> None:
        """An upsert: each partition's rows are merged by id into a new base file of its file group."""
        self.instant += 1
        instant = str(self.instant)
        stats: dict[str, list] = {}
        for region in sorted(set(rows.column("region").to_pylist())):
            part = f"region={region}"
            new = rows.filter(pa.compute.equal(rows.column("region"), region))
            old = self.rows.get(part)
            if old is not None:
                kept = old.filter(pa.compute.invert(pa.compute.is_in(old.column("id"), value_set=new.column("id"))))
                new = pa.concat_tables([kept.select(new.column_names), new])
            self.rows[part] = new
            group = self.groups.setdefault(part, str(uuid.uuid4()))
            name = f"{group}_0-1-0_{instant}.parquet"
            count = new.num_rows
            meta = {
                "_hoodie_commit_time": [instant] * count,
                "_hoodie_commit_seqno": [f"{instant}_{n}" for n in range(count)],
                "_hoodie_record_key": [str(n) for n in new.column("id").to_pylist()],
                "_hoodie_partition_path": [part] * count,
                "_hoodie_file_name": [name] * count,
            }
            os.makedirs(f"{self.root}/{part}", exist_ok=True)
            pq.write_table(
                pa.table({**meta, **{c: new.column(c) for c in new.column_names}}), f"{self.root}/{part}/{name}"
            )
            size = os.path.getsize(f"{self.root}/{part}/{name}")
            stats[part] = [{"fileId": group, "path": f"{part}/{name}", "numWrites": count, "totalWriteBytes": size}]
        self.completed = max(self.completed, self.instant) + 3
        self._complete(instant, str(self.completed), stats)

    def _complete(self, instant: str, completed: str, stats: dict[str, list]) -> None:
        timeline = f"{self.root}/.hoodie" + ("/timeline" if self.layout == 2 else "")
        for suffix in (".commit.requested", ".inflight"):
            open(f"{timeline}/{instant}{suffix}", "w").close()
        if self.layout == 2:
            with open(f"{timeline}/{instant}_{completed}.commit", "wb") as out:
                out.write(_avro_commit_metadata(stats))
        else:
            # The writer's schema, as Hudi records it: without the meta columns its files hold.
            fields = [
                {"name": name, "type": ["null", {"id": "long"}.get(name, "string")]}
                for name in ("id", "name", "region")
            ]
            schema = json.dumps({"type": "record", "name": "events_record", "fields": fields})
            commit = {"partitionToWriteStats": stats, "compacted": False, "operationType": "UPSERT"}
            with open(f"{timeline}/{instant}.commit", "w") as out:
                json.dump({**commit, "extraMetadata": {"schema": schema}}, out)

    @property
    def version(self) -> str:
        """The table's version as lakeseek records it: the latest instant (layout 2: completion)
        time, then the crc32 of the completed instants' names."""
        timeline = f"{self.root}/.hoodie" + ("/timeline" if self.layout == 2 else "")
        done = sorted(name for name in os.listdir(timeline) if re.fullmatch(r"[0-9_]+\.[a-z]+", name))
        done = [name for name in done if not name.endswith(".inflight")]
        latest = max(name.split(".")[0].split("_")[-1] for name in done)
        return f"{latest}.{zlib.crc32(chr(10).join(done).encode()):08x}"

    def table(self) -> pa.Table:
        return pa.concat_tables(self.rows.values())


_WRITE_STAT = {
    "type": "record",
    "name": "HoodieWriteStat",
    "fields": [
        {"name": "fileId", "type": ["null", "string"], "default": None},
        {"name": "path", "type": ["null", "string"], "default": None},
        {"name": "numWrites", "type": ["null", "long"], "default": None},
        {"name": "totalWriteBytes", "type": ["null", "long"], "default": None},
    ],
}
_COMMIT_METADATA = {
    "type": "record",
    "name": "HoodieCommitMetadata",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {
            "name": "partitionToWriteStats",
            "type": ["null", {"type": "map", "values": {"type": "array", "items": _WRITE_STAT}}],
            "default": None,
        },
        {"name": "operationType", "type": ["null", "string"], "default": None},
    ],
}


def _avro_commit_metadata(stats: dict[str, list]) -> bytes:
    """Hudi 1.x commit metadata: one record of (a subset of) HoodieCommitMetadata in an Avro
    object container file, encoded by the Avro specification (no Avro library is installed)."""

    def number(n: int) -> bytes:  # zig-zag varint
        n = (n << 1) ^ (n >> 63)
        out = bytearray()
        while n & ~0x7F:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        return bytes([*out, n])

    def text(value: str) -> bytes:
        return number(len(value.encode())) + value.encode()

    def optional(encoded: bytes) -> bytes:  # the union's second branch
        return number(1) + encoded

    body = number(1) + number(len(stats))
    for partition, writes in stats.items():
        body += text(partition) + number(len(writes))
        for w in writes:
            body += optional(text(w["fileId"])) + optional(text(w["path"]))
            body += optional(number(w["numWrites"])) + optional(number(w["totalWriteBytes"]))
        body += number(0)
    body += number(0) + optional(text("UPSERT"))
    sync = uuid.uuid4().bytes
    header = b"Obj\x01" + number(1) + text("avro.schema") + text(json.dumps(_COMMIT_METADATA)) + number(0) + sync
    return header + number(1) + number(len(body)) + body + sync


@pytest.mark.parametrize("table_version", [6, 8])
def test_a_hudi_table_is_its_latest_file_slices(tmp_path, table_version):
    pytest.importorskip("hudi")
    hudi = HudiTable(str(tmp_path / "events"), table_version=table_version)
    hudi.commit(_rows(0, 60))
    hudi.commit(_rows(50, 40))  # rewrites every partition's file group: the old base files stay
    index = lakeseek.create_index(hudi.root, ["id", "name"], engine="local", chunk_rows=16)
    assert index.lake.name == "hudi" and index.root.source_version == hudi.version
    assert "_hoodie_record_key" in index.schema.names
    # hudi-rs would read a top-level _lakeseek directory as a partition: the home is under .hoodie.
    assert os.path.isdir(f"{hudi.root}/.hoodie/lakeseek/default/log") and not os.path.exists(f"{hudi.root}/_lakeseek")
    assert len(index.lake_state().files) == 3
    _assert_exact(index, hudi.table())

    hudi.commit(_rows(1000, 20))
    stale = lakeseek.open_index(hudi.root)
    assert stale.lake_state().new and stale.lake_state().removed
    _assert_exact(stale, hudi.table())
    # The meta columns whatever the index's freshness (they were the recorded commit schema's
    # columns only, when a commit recorded one, until a commit made the index stale).
    assert stale.read("id = 5").column_names == index.read("id = 5").column_names == index.schema.names
    refreshed = lakeseek.refresh_index(hudi.root, "incremental", engine="local")
    assert refreshed.lake_state().is_fresh and refreshed.root.source_version == hudi.version
    _assert_exact(refreshed, hudi.table())


def test_a_hudi_commit_that_completes_after_a_later_one_is_read(tmp_path):
    """In timeline layout 1 an instant is named by its start: a writer that started before the
    indexed version and finished after it adds an older instant, and its rows (new ones and
    new values of old ones) must be read by a handle held from before and by a new one."""
    pytest.importorskip("hudi")

    def region(rows: pa.Table, name: str) -> pa.Table:
        return rows.filter(pa.compute.equal(rows.column("region"), name))

    hudi = HudiTable(str(tmp_path / "events"))
    hudi.commit(_rows(0, 30))
    hudi.instant += 1  # a second writer holds this instant time, still writing
    hudi.commit(region(_rows(200, 10), "us"))
    held = lakeseek.create_index(hudi.root, ["id", "name"], engine="local", chunk_rows=16)
    hudi.instant -= 2  # the second writer completes the older instant: new rows, and new values of old ones
    late = region(_rows(0, 60), "eu")
    hudi.commit(late.set_column(1, "name", pa.array([f"late-{n}" for n in late.column("id").to_pylist()])))
    assert hudi.instant < int(held.root.source_version.split(".")[0])
    for index in (held, lakeseek.open_index(hudi.root)):
        assert not index.lake_state().is_fresh
        _assert_exact(index, hudi.table())
        assert index.read("name = 'late-3' OR name = 'late-42'").column("id").to_pylist() == [3, 42]
    refreshed = lakeseek.refresh_index(hudi.root, "incremental", engine="local")
    assert refreshed.lake_state().is_fresh and refreshed.root.source_version == hudi.version
    _assert_exact(refreshed, hudi.table())


def test_a_hudi_table_upgraded_to_1x_under_the_index_stays_exact(tmp_path):
    """Hudi's upgrade to table version 8 moves the timeline to .hoodie/timeline/: commits after
    it are seen by a handle held from before and by a new one."""
    pytest.importorskip("hudi")
    hudi = HudiTable(str(tmp_path / "events"))
    hudi.commit(_rows(0, 60))
    held = lakeseek.create_index(hudi.root, ["id", "name"], engine="local", chunk_rows=16)
    hudi.upgrade(8)
    hudi.commit(_rows(50, 40))
    for index in (held, lakeseek.open_index(hudi.root)):
        assert index.lake_state().new
        _assert_exact(index, hudi.table())
    refreshed = lakeseek.refresh_index(hudi.root, "incremental", engine="local")
    assert refreshed.lake_state().is_fresh and refreshed.root.source_version == hudi.version
    _assert_exact(refreshed, hudi.table())


def test_a_merge_on_read_hudi_table_with_log_files_is_refused(tmp_path):
    pytest.importorskip("hudi")
    hudi = HudiTable(str(tmp_path / "events"), "MERGE_ON_READ")
    hudi.commit(_rows(0, 30))
    group = hudi.groups["region=eu"]
    assert lakeseek.create_index(hudi.root, ["id"], engine="local").lake.name == "hudi"  # no log file yet
    log = f".{group}_{hudi.instant}.log.1_0-1-0"
    open(f"{hudi.root}/region=eu/{log}", "wb").close()
    with open(f"{hudi.root}/.hoodie/{hudi.instant + 1}.deltacommit", "w") as out:  # the commit that wrote it
        stats = [{"fileId": group, "path": f"region=eu/{log}", "numWrites": 0, "totalWriteBytes": 0}]
        fields = [{"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"]}]
        fields.append({"name": "region", "type": "string"})
        schema = json.dumps({"type": "record", "name": "events", "fields": fields})
        json.dump(
            {
                "partitionToWriteStats": {"region=eu": stats},
                "operationType": "UPSERT",
                "extraMetadata": {"schema": schema},
            },
            out,
        )
    with pytest.raises(lakeseek.UnsupportedLakeError, match="has log files"):
        lakeseek.open_index(hudi.root).files("id = 3")
