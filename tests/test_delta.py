"""Delta Lake tables as lake sources, written and read back by ``deltalake`` (delta-rs): the
table's active files are the lake, whatever its directory still holds. Every answer is compared
with the table as deltalake reads it (DuckDB over that Arrow table), before and after the table
changes under the index: appends, deletes that rewrite files, overwrites."""

from __future__ import annotations

from urllib.parse import unquote

import duckdb
import pyarrow as pa
import pytest

import lakeseek
from lakeseek.io import counting

deltalake = pytest.importorskip("deltalake")

WHERES = [
    "id = 7",
    "id = 1234",
    "id IN (3, 40, 77)",
    "name = 'n-3'",
    "name IS NULL",
    "region = 'eu'",
    "id >= 30 AND id < 45",
    "name LIKE 'n-1%' OR region = 'us west'",
    "id <> 5 AND region = 'a/p=1%'",
]


def _rows(first: int, count: int) -> pa.Table:
    numbers = range(first, first + count)
    return pa.table(
        {
            "id": pa.array(numbers, pa.int64()),
            "name": [None if n % 11 == 0 else f"n-{n % 17}" for n in numbers],
            # Partition values a Hive path escapes, in paths the log escapes again.
            "region": [["eu", "us west", "a/p=1%"][n % 3] for n in numbers],
        }
    )


def _oracle(table_uri: str, where: str, storage_options: dict | None = None) -> list[int]:
    rows = deltalake.DeltaTable(table_uri, storage_options=storage_options).to_pyarrow_table()  # noqa: F841
    return sorted(row[0] for row in duckdb.sql(f"SELECT id FROM rows WHERE {where}").fetchall())


def _assert_exact(index: lakeseek.Index, table_uri: str, storage_options: dict | None = None) -> None:
    for where in WHERES:
        assert sorted(index.read(where).column("id").to_pylist()) == _oracle(table_uri, where, storage_options), where
    pairs = index.locate([7, 40, 1234], column="id")
    assert sorted(pairs.column("key").to_pylist()) == _oracle(table_uri, "id IN (7, 40, 1234)", storage_options)


@pytest.fixture()
def table(tmp_path):
    path = str(tmp_path / "table")
    deltalake.write_deltalake(path, _rows(0, 60), partition_by=["region"])
    deltalake.write_deltalake(path, _rows(60, 30), mode="append", partition_by=["region"])
    deltalake.DeltaTable(path).delete("id < 10")  # rewrites files: the old ones stay in the directory
    return path


def test_a_delta_table_is_its_active_files(table):
    index = lakeseek.create_index(table, ["id", "name", "region"], engine="local", chunk_rows=16)
    assert index.lake.name == "delta" and index.root.source_version.startswith("2@")
    assert index.root.partition_columns == ("region",)
    logged = deltalake.DeltaTable(table).get_add_actions(flatten=True).column("path").to_pylist()
    active = {unquote(path) for path in logged}  # the log's paths are percent-encoded
    assert set(index.lake_state().files) == active  # the removed files stay on disk, outside the lake
    assert index.plan("id = 7").index_used and index.read("id = 7").num_rows == 0
    _assert_exact(index, table)


def test_changes_to_the_table_under_the_index_stay_exact(table):
    lakeseek.create_index(table, ["id", "name"], engine="local", chunk_rows=16)
    deltalake.write_deltalake(table, _rows(1000, 300), mode="append", partition_by=["region"])
    deltalake.DeltaTable(table).delete("id >= 40 AND id < 50")
    stale = lakeseek.open_index(table)
    state = stale.lake_state()
    assert state.new and state.removed and not state.changed
    _assert_exact(stale, table)

    refreshed = lakeseek.refresh_index(table, "incremental", engine="local")
    assert refreshed.root.source_version.startswith("4@") and refreshed.lake_state().is_fresh
    _assert_exact(refreshed, table)

    deltalake.write_deltalake(table, _rows(5000, 40), mode="overwrite", partition_by=["region"])
    overwritten = lakeseek.open_index(table)
    assert len(overwritten.lake_state().removed) == len(refreshed.lineage())
    _assert_exact(overwritten, table)
    lakeseek.refresh_index(table, "incremental", engine="local")
    optimized = lakeseek.optimize_index(table, "full", engine="local")
    assert not optimized.root.lineage.removed and optimized.lake_state().is_fresh
    _assert_exact(optimized, table)


def test_an_unchanged_table_is_checked_with_one_listing_of_its_log(table, monkeypatch):
    from lakeseek.sources.delta import DeltaSource

    lakeseek.create_index(table, ["id"], engine="local")
    index = lakeseek.open_index(table)

    def no_snapshot(self, **kwargs):
        raise AssertionError("the table's files were read, though its version did not move")

    monkeypatch.setattr(DeltaSource, "snapshot", no_snapshot)
    with counting() as io:
        files = index.files("id = 33")
    assert io.lists == 1 and io.heads == 0 and len(files) == 1
    monkeypatch.undo()
    deltalake.write_deltalake(table, _rows(2000, 5), mode="append", partition_by=["region"])
    assert lakeseek.open_index(table).lake_state().new  # a new version: its files are read


def test_a_table_ahead_of_its_index_is_read_once_per_version(table, monkeypatch):
    """A table that moved on since indexing has its files read on the first query at each new
    version only: later queries at that version check its log (one listing) and stay exact."""
    from lakeseek.sources.delta import DeltaSource

    lakeseek.create_index(table, ["id"], engine="local")
    index = lakeseek.open_index(table)
    deltalake.write_deltalake(table, _rows(2000, 5), mode="append", partition_by=["region"])
    snapshots = []
    taken = DeltaSource.snapshot
    monkeypatch.setattr(DeltaSource, "snapshot", lambda self, **kw: snapshots.append(1) or taken(self, **kw))
    for _ in range(3):
        assert index.read("id = 2003").column("id").to_pylist() == [2003]
    assert len(snapshots) == 1
    deltalake.write_deltalake(table, _rows(3000, 5), mode="append", partition_by=["region"])
    for _ in range(3):
        assert index.read("id = 3004").column("id").to_pylist() == [3004]
        _assert_exact(index, table)
    assert len(snapshots) == 2


def test_files_deltalake_rewrites_with_view_types_are_compared(tmp_path):
    """deltalake's delete, update and merge write string columns as ``string_view`` in the
    files' Arrow schema, which pyarrow compares with no string literal: read, scan and
    files answer for every string predicate all the same."""
    path = str(tmp_path / "table")
    deltalake.write_deltalake(path, _rows(0, 60))
    index = lakeseek.create_index(path, ["id"], engine="local")
    deltalake.DeltaTable(path).delete("id = 3")
    deltalake.DeltaTable(path).update({"name": "'renamed'"}, predicate="id = 20")
    wheres = ["name = 'n-3'", "name IN ('n-1', 'renamed')", "name > 'n-5'", "name <> region", "name LIKE 'n-1%'"]
    for where in [*wheres, *WHERES]:
        expected = _oracle(path, where)
        assert sorted(index.read(where).column("id").to_pylist()) == expected, where
        assert sorted(index.scan(where).column("id").to_pylist()) == expected, where


def test_what_lakeseek_does_not_read_yet_is_refused(tmp_path):
    path = str(tmp_path / "mapped")
    deltalake.write_deltalake(path, _rows(0, 5), configuration={"delta.columnMapping.mode": "name"})
    with pytest.raises(lakeseek.UnsupportedLakeError, match="column mapping"):
        lakeseek.create_index(path, ["id"], engine="local")


def test_a_damaged_commit_is_a_clear_error(table):
    lakeseek.create_index(table, ["id"], engine="local")
    with open(f"{table}/_delta_log/{3:020d}.json", "w") as out:
        out.write("{not json\n")
    with pytest.raises(lakeseek.LakeMetadataError, match=r"cannot read the delta table .*table"):
        lakeseek.open_index(table).files("id = 3")


def test_a_delta_table_in_s3(s3_server, tmp_path):
    import uuid

    from tests.conftest import Bucket

    bucket = Bucket(s3_server, f"b{uuid.uuid4().hex[:12]}")
    uri = f"{bucket.uri}/table"
    delta_options = {**bucket.options, "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    deltalake.write_deltalake(uri, _rows(0, 80), partition_by=["region"], storage_options=delta_options)
    deltalake.DeltaTable(uri, storage_options=delta_options).delete("id < 10")
    index = lakeseek.create_index(uri, ["id", "name"], engine="local", storage_options=bucket.options)
    assert index.lake.name == "delta"
    _assert_exact(index, uri, delta_options)
    deltalake.write_deltalake(
        uri, _rows(500, 20), mode="append", partition_by=["region"], storage_options=delta_options
    )
    _assert_exact(lakeseek.open_index(uri, storage_options=bucket.options), uri, delta_options)


@pytest.mark.spark
def test_spark_reads_only_the_tables_active_files(table, jvm_spark):
    from lakeseek.spark import to_spark

    index = lakeseek.create_index(table, ["id", "name"], engine="local", chunk_rows=16)
    for where in WHERES:
        got = sorted(row["id"] for row in to_spark(index, jvm_spark, where).select("id").collect())
        assert got == _oracle(table, where), where
    frame = jvm_spark.read.format("lakeseek").load(table)
    assert frame.count() == len(_oracle(table, "true"))  # no filter: still only the table's files
    assert jvm_spark.read.parquet(table).count() > frame.count()  # as a directory: the removed files' rows too
    for where in WHERES:
        got = sorted(row["id"] for row in frame.where(where).select("id").collect())
        assert got == _oracle(table, where), where


def test_the_source_format_can_be_forced(table, tmp_path):
    """``source_format`` (``--source-format``) overrides what the location looks like."""
    from click.testing import CliRunner

    from lakeseek.cli.main import main

    as_directory = lakeseek.open_lake(table, source_format="directory")
    index = lakeseek.create_index(as_directory, ["id"], engine="local")
    assert index.lake.name == "directory"  # every Parquet file of the directory, removed ones too
    assert len(index.lake_state().files) > len(deltalake.DeltaTable(table).file_uris())
    # The index covers the directory's files: the table it also is must be asked for as that.
    with pytest.raises(lakeseek.LakeseekError, match="created on the lake as a directory lake, not a delta one"):
        lakeseek.open_index(table)
    with pytest.raises(lakeseek.LakeseekError, match="give storage_options to open_lake"):
        lakeseek.open_index(as_directory, storage_options={"AWS_REGION": "x"})

    plain = tmp_path / "plain"
    plain.mkdir()
    result = CliRunner().invoke(main, ["status", str(plain), "--source-format", "delta"])
    assert result.exit_code == 1 and "no delta table" in result.stderr and len(result.stderr.splitlines()) == 1
    result = CliRunner().invoke(main, ["status", table, "--source-format", "orc"])
    assert result.exit_code == 1 and "unknown lake source format 'orc'" in result.stderr


@pytest.mark.spark
def test_spark_reads_only_the_tables_active_files_when_its_index_is_gone(table, jvm_spark):
    """The index cannot narrow the scan any more: the table's files are still named, never the
    directory Spark lists (which holds the files the table removed)."""
    import shutil
    from pathlib import Path

    lakeseek.create_index(table, ["id"], engine="local")
    frame = jvm_spark.read.format("lakeseek").load(table)
    shutil.rmtree(Path(table) / "_lakeseek")
    for where in ("id = 7", "id > 40", "true"):
        assert sorted(row["id"] for row in frame.where(where).select("id").collect()) == _oracle(table, where), where


def test_partition_columns_of_every_type(tmp_path):
    """deltalake gives partition values typed (not as the log's text): each type reads as its values."""
    import datetime as dt
    from decimal import Decimal

    path = str(tmp_path / "typed")
    count = 24
    rows = pa.table(
        {
            "id": pa.array(range(count), pa.int64()),
            "number": pa.array([None if n % 5 == 0 else n % 3 for n in range(count)], pa.int32()),
            "day": [dt.date(2024, 1, 1 + n % 2) for n in range(count)],
            "moment": [dt.datetime(2024, 1, 1, n % 2, 30) for n in range(count)],
            "flag": [n % 2 == 0 for n in range(count)],
            "amount": pa.array(
                [Decimal("1.50") if n % 2 else Decimal("2.25") for n in range(count)], pa.decimal128(5, 2)
            ),
        }
    )
    deltalake.write_deltalake(path, rows, partition_by=["number", "day", "moment", "flag", "amount"])
    index = lakeseek.create_index(path, ["id", "number"], engine="local")
    for where in (
        "id = 7",
        "number = 2",
        "number IS NULL",
        "day = DATE '2024-01-02'",
        "moment = TIMESTAMP '2024-01-01 01:30:00'",
        "flag AND amount = 1.50",
        "true",
    ):
        assert sorted(index.read(where).column("id").to_pylist()) == _oracle(path, where), where
    expected = index.read("id = 7").to_pylist()[0]
    assert expected["number"] == 1 and expected["day"] == dt.date(2024, 1, 2) and expected["amount"] == Decimal("1.50")
    assert sorted(set(index.locate([1, 2], column="number").column("key").to_pylist())) == [1, 2]


def test_a_table_deleted_and_written_again_is_not_taken_for_the_indexed_one(tmp_path):
    """Versions restart when a table is written again from nothing: the index recorded version
    2 of the old table, the new one has fewer commits (or as many), and its rows must be read."""
    import os
    import shutil

    for commits_after in (1, 3):
        table = str(tmp_path / f"table-{commits_after}")
        for i in range(3):
            deltalake.write_deltalake(table, pa.table({"id": pa.array([i], pa.int64())}), mode="append")
        lakeseek.create_index(table, ["id"], engine="local")
        held = lakeseek.open_index(table)
        for name in os.listdir(table):
            if name != "_lakeseek":
                path = os.path.join(table, name)
                shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
        for i in range(commits_after):
            deltalake.write_deltalake(table, pa.table({"id": pa.array([7 + i], pa.int64())}), mode="append")
        expected = sorted(deltalake.DeltaTable(table).to_pyarrow_table().column("id").to_pylist())
        for index in (held, lakeseek.open_index(table)):
            assert sorted(index.read("id >= 0").column("id").to_pylist()) == expected
            assert index.read("id = 7").num_rows == 1


def test_a_column_the_table_no_longer_has_is_not_the_lakes(tmp_path):
    """An overwrite that replaces the table's schema drops the indexed column: no answer holds
    it, a predicate naming it is an unknown column (not an empty answer), before and after a
    refresh, through a handle held from before and a new one."""
    path = str(tmp_path / "t")
    deltalake.write_deltalake(
        path, pa.table({"id": pa.array(range(100), pa.int64()), "s": [str(n) for n in range(100)]})
    )
    held = lakeseek.create_index(path, ["id", "s"], engine="local")
    held.read("s = '7'")
    replaced = pa.table({"x": pa.array([1, 2], pa.int64()), "s": ["7", "8"]})
    deltalake.write_deltalake(path, replaced, mode="overwrite", schema_mode="overwrite")
    for index in (held, lakeseek.open_index(path), lakeseek.refresh_index(path, "full", engine="local")):
        assert index.read("s = '7'").to_pylist() == [{"s": "7", "x": 1}]
        assert "id" not in index.schema_of(index.lake_state()).names
        with pytest.raises(lakeseek.UnknownColumnError, match="unknown column 'id'"):
            index.read("id = 5")


@pytest.mark.parametrize("refresh", [None, "quick", "incremental", "full"])
def test_the_tables_own_schema_is_the_lakes(tmp_path, refresh):
    """A column added to the table that no file holds yet is NULL in every row; an overwrite
    that gives the indexed column another type is read (the index serves it again after a
    refresh), before and after each kind of refresh, through a held handle and a new one."""
    from deltalake import Field

    path = str(tmp_path / "t")
    deltalake.write_deltalake(path, pa.table({"id": pa.array(range(50), pa.int64()), "s": [str(n) for n in range(50)]}))
    held = lakeseek.create_index(path, ["id"], engine="local")
    deltalake.DeltaTable(path).alter.add_columns([Field("extra", "long", nullable=True)])
    if refresh:
        lakeseek.refresh_index(path, refresh, engine="local")
    for index in (held, lakeseek.open_index(path)):
        assert index.read("extra IS NULL").num_rows == 50 and index.read("extra = 1").num_rows == 0
        assert index.read("id = 7").to_pylist() == [{"id": 7, "s": "7", "extra": None}]
    retyped = pa.table({"id": ["a", "b"], "s": ["250", "251"]})
    deltalake.write_deltalake(path, retyped, mode="overwrite", schema_mode="overwrite")
    if refresh:
        lakeseek.refresh_index(path, refresh, engine="local")
    for index in (held, lakeseek.open_index(path)):
        assert index.read("s = '250'").to_pylist() == [{"id": "a", "s": "250"}]
        assert index.read("id = 'b'").to_pylist() == [{"id": "b", "s": "251"}]


def test_spark_front_ends_show_only_the_tables_columns(tmp_path, jvm_spark):
    """Spark's schema of the lake kept every column Spark had recorded: after an overwrite
    that replaced the table's schema, to_spark and both formats showed the old columns, NULL."""
    from lakeseek.spark import PYTHON_FORMAT, to_spark

    path = str(tmp_path / "t")
    deltalake.write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"], "old": [1, 2]}))
    lakeseek.create_index(path, ["id"], engine="local")
    replaced = pa.table({"id": pa.array([3], pa.int64()), "q": ["z"]})
    deltalake.write_deltalake(path, replaced, mode="overwrite", schema_mode="overwrite")
    for refresh in (None, "full"):
        if refresh:
            lakeseek.refresh_index(path, refresh, engine="local")
        index = lakeseek.open_index(path)
        frames = [to_spark(index, jvm_spark, "id >= 0")]
        frames += [jvm_spark.read.format(name).load(path) for name in ("lakeseek", PYTHON_FORMAT)]
        for frame in frames:
            assert [row.asDict() for row in frame.collect()] == [{"id": 3, "q": "z"}], refresh


def test_spark_front_ends_refuse_partition_names_spark_would_misread(tmp_path, jvm_spark):
    """delta-rs writes 'é' as the directory p=%C3%A9, which Spark reads as 'Ã©' (and '01' in a
    string column was typed a double by the JVM format): a table's partition columns have the
    table's types, and a name Spark would misread is a one-line error, never other values."""
    from lakeseek.spark import PYTHON_FORMAT, to_spark

    path = str(tmp_path / "t")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["01", "1", "1.50"]})
    deltalake.write_deltalake(path, rows, partition_by=["p"])
    index = lakeseek.create_index(path, ["id"], engine="local")
    for frame in (to_spark(index, jvm_spark, "id >= 1"), jvm_spark.read.format("lakeseek").load(path)):
        assert sorted(tuple(row) for row in frame.select("id", "p").collect()) == [(1, "01"), (2, "1"), (3, "1.50")]
        assert [row["id"] for row in frame.where("p = '01'").collect()] == [1]
    deltalake.write_deltalake(path, pa.table({"id": pa.array([4], pa.int64()), "p": ["é"]}), mode="append")
    index = lakeseek.open_index(path)
    with pytest.raises(lakeseek.UnsupportedLakeError, match="as 'Ã©', but the Delta table holds 'é'"):
        to_spark(index, jvm_spark, "id = 4")
    with pytest.raises(Exception, match="as 'Ã©', but the Delta table holds 'é'"):
        jvm_spark.read.format("lakeseek").load(path).where("id = 4").collect()
    answered = jvm_spark.read.format(PYTHON_FORMAT).load(path).where("id = 4")
    assert [tuple(row) for row in answered.select("id", "p").collect()] == [(4, "é")]


def test_partition_columns_of_other_types_reach_spark(tmp_path, jvm_spark):
    """The check of directory names compares their text with the table's for strings only: an
    int or a date partition is ASCII text Spark casts to the table's type (every such table
    was refused when the check compared the text with the typed value)."""
    import datetime as dt

    from lakeseek.spark import to_spark

    path = str(tmp_path / "t")
    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 2)]
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "n": pa.array([1, 2], pa.int32()), "d": days})
    deltalake.write_deltalake(path, rows, partition_by=["n", "d"])
    index = lakeseek.create_index(path, ["id"], engine="local")
    for frame in (to_spark(index, jvm_spark, "id = 2"), jvm_spark.read.format("lakeseek").load(path).where("id = 2")):
        assert [tuple(row) for row in frame.select("id", "n", "d").collect()] == [(2, 2, days[1])]


def test_a_covering_index_whose_carried_column_the_table_dropped_refreshes(tmp_path):
    path = str(tmp_path / "t")
    rows = pa.table({"id": pa.array(range(20), pa.int64()), "n": pa.array(range(20), pa.int64()), "s": ["x"] * 20})
    deltalake.write_deltalake(path, rows)
    lakeseek.create_index(path, ["n"], kind="covering", include=["s"], engine="local")
    replaced = pa.table({"id": pa.array([20, 21], pa.int64()), "n": pa.array([3, 4], pa.int64())})
    deltalake.write_deltalake(path, replaced, mode="overwrite", schema_mode="overwrite")
    for mode in ("incremental", "full"):
        index = lakeseek.refresh_index(path, mode, engine="local")
        assert index.lake_state().is_fresh and index.read("n = 3").to_pylist() == [{"id": 20, "n": 3}], mode
