"""Delta tables whose deletes left the files in place with deletion vectors: every read leaves
the deleted rows out, an index built over such files holds only the rows kept, and a file
whose vector changes (more rows deleted, or rows back after a restore) is a changed file.

The vectors are written by :mod:`tests.delta_vectors` and checked against deltalake's own
reading of them; every answer is compared with deltalake's scan of the table (DataFusion with
delta-kernel, which applies the vectors) through DuckDB."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from urllib.parse import unquote

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeseek
from lakeseek.io import counting
from tests.delta_vectors import delete_rows
from tests.test_delta import _rows

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyroaring")

WHERES = [
    "id = 7",
    "id IN (3, 40, 77, 150)",
    "name = 'n-3'",
    "name IS NULL",
    "region = 'eu'",
    "id >= 30 AND id < 45",
    "name LIKE 'n-1%' OR region = 'a/p=1%'",
    "true",
]
VECTORS = {"delta.enableDeletionVectors": "true"}
SMALL_ROW_GROUPS = deltalake.WriterProperties(max_row_group_size=7)


def _append(table: str, rows: pa.Table, mode: str = "append") -> None:
    deltalake.write_deltalake(
        table, rows, mode=mode, partition_by=["region"], configuration=VECTORS, writer_properties=SMALL_ROW_GROUPS
    )


def _table_rows(table: str) -> pa.Table:
    return pa.table(deltalake.DeltaTable(table).scan())


def _oracle(table: str, where: str) -> list[int]:
    rows = _table_rows(table)  # noqa: F841
    return sorted(row[0] for row in duckdb.sql(f"SELECT id FROM rows WHERE {where}").fetchall())


def _files(table: str) -> list[str]:
    logged = deltalake.DeltaTable(table).get_add_actions(flatten=True).column("path").to_pylist()
    return sorted(unquote(path) for path in logged)


def _positions(table: str, path: str, ids: set[int]) -> set[int]:
    """The positions in data file ``path`` of the rows with these ids."""
    held = pa.parquet.read_table(Path(table) / path).column("id").to_pylist()
    return {position for position, value in enumerate(held) if value in ids}


def _delete(table: str, ids: set[int], *, inline: bool = False) -> None:
    """Delete the rows with these ids by deletion vectors, in every file holding some."""
    deleted = {}
    for path in _files(table):
        positions = _positions(table, path, ids)
        if positions:
            deleted[path] = positions
    delete_rows(table, deleted, inline=inline)


def _assert_exact(index: lakeseek.Index, table: str, wheres: list[str] = WHERES) -> None:
    for where in wheres:
        expected = _oracle(table, where)
        assert sorted(index.read(where).column("id").to_pylist()) == expected, where
        assert index.read(where, columns=[]).num_rows == len(expected), where  # a count reads no column
        held = set(index.files(where))
        for path in _files(table):
            matched = _oracle_of_file(table, path, where)
            if matched:
                assert index.lake.shown(path) in held, (where, path)
    keys = [7, 40, 77, 150, 1000]
    pairs = index.locate(keys, column="id")
    assert sorted(pairs.column("key").to_pylist()) == _oracle(table, f"id IN ({', '.join(map(str, keys))})")


def _oracle_of_file(table: str, path: str, where: str) -> bool:
    """Whether a row the table keeps in data file ``path`` matches ``where``."""
    kept = set(_oracle(table, where))
    return any(value in kept for value in pa.parquet.read_table(Path(table) / path).column("id").to_pylist())


@pytest.fixture()
def table(tmp_path):
    path = str(tmp_path / "table")
    _append(path, _rows(0, 90))
    _append(path, _rows(90, 90))
    return path


def test_the_vectors_written_here_are_the_ones_deltalake_reads(table):
    path = _files(table)[0]
    delete_rows(table, {path: {0, 5}})
    delete_rows(table, {path: {9}}, inline=True)  # adds to those deleted before
    vectors = pa.table(deltalake.DeltaTable(table).deletion_vectors()).to_pylist()
    assert len(vectors) == 1 and unquote(vectors[0]["filepath"]).endswith(path)
    assert [n for n, kept in enumerate(vectors[0]["selection_vector"]) if not kept] == [0, 5, 9]
    assert len(_table_rows(table)) == 180 - 3


def test_deleted_rows_are_never_returned_and_a_refresh_indexes_the_rows_kept(table):
    index = lakeseek.create_index(table, ["id", "name", "region"], engine="local", chunk_rows=16, row_groups=True)
    _delete(table, {7, 40, 41, 77})
    stale = lakeseek.open_index(table)
    state = stale.lake_state()
    assert state.changed and not state.new and not state.removed  # the same files, fewer rows
    _assert_exact(stale, table)
    _assert_exact(index, table)  # a handle held from before the delete

    refreshed = lakeseek.refresh_index(table, "incremental", engine="local")
    assert refreshed.lake_state().is_fresh
    _assert_exact(refreshed, table)
    assert refreshed.read("id = 7").num_rows == 0 and refreshed.locate([7], column="id").num_rows == 0

    _delete(table, {3, 150}, inline=True)  # files that lost rows lose more
    _assert_exact(lakeseek.open_index(table), table)
    _assert_exact(refreshed, table)
    optimized = lakeseek.optimize_index(table, "full", engine="local")
    _assert_exact(optimized, table)


def test_rows_a_restore_brings_back_are_found(table):
    lakeseek.create_index(table, ["id"], engine="local")
    before = deltalake.DeltaTable(table).version()
    _delete(table, {7, 40})
    lakeseek.refresh_index(table, "incremental", engine="local")  # indexes the files without rows 7 and 40
    deltalake.DeltaTable(table).restore(before)
    index = lakeseek.open_index(table)
    assert sorted(index.read("id IN (7, 40)").column("id").to_pylist()) == [7, 40] == _oracle(table, "id IN (7, 40)")
    _assert_exact(index, table)


def test_a_file_that_lost_every_row_holds_none(table):
    path = _files(table)[0]
    everything = set(range(pa.parquet.read_metadata(Path(table) / path).num_rows))
    delete_rows(table, {path: everything})
    index = lakeseek.create_index(table, ["id", "region"], engine="local")
    _assert_exact(index, table)
    region = index.read("true", columns=["region"]).column("region").to_pylist()
    assert sorted(set(region)) == sorted(set(_table_rows(table).column("region").to_pylist()))


def test_an_unchanged_table_with_vectors_is_still_one_listing(table):
    _delete(table, {7, 8})
    lakeseek.create_index(table, ["id"], engine="local")
    index = lakeseek.open_index(table)
    with counting() as io:
        assert index.files("id = 33")
    assert io.lists == 1 and io.heads == 0
    assert sorted(index.read("id IN (7, 8, 9)").column("id").to_pylist()) == [9]


def test_a_vector_that_does_not_fit_its_file_is_an_error_not_rows(table, monkeypatch):
    import numpy as np

    from lakeseek.sources.delta import DeltaSource

    _delete(table, {7})
    index = lakeseek.create_index(table, ["id"], engine="local")
    real = DeltaSource.deleted_rows

    def past_the_end(self, file, stamp):
        rows = real(self, file, stamp)
        return None if rows is None else np.append(rows, 10_000)

    monkeypatch.setattr(DeltaSource, "deleted_rows", past_the_end)
    with pytest.raises(lakeseek.LakeseekError, match="does not belong to this file"):
        lakeseek.open_index(table).read("true")
    assert index is not None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_generated_histories_with_deletion_vectors_stay_exact(tmp_path_factory, seed):
    """Appends, deletes by vector (file or inline), deletes that rewrite files, restores,
    refreshes and optimizes in a random order, each followed by random queries on a handle held
    from the start and on a fresh one, against deltalake's scan."""
    chance = random.Random(seed)
    table = str(tmp_path_factory.mktemp("history") / "table")
    _append(table, _rows(0, 60))
    held = lakeseek.create_index(table, ["id", "name"], engine="local", chunk_rows=8, row_groups=chance.random() < 0.5)
    versions = [deltalake.DeltaTable(table).version()]
    next_id = 60
    for _ in range(6):
        step = chance.choice(["append", "vector", "inline", "rewrite", "restore", "refresh", "optimize"])
        alive = _oracle(table, "true")
        if step == "append":
            _append(table, _rows(next_id, chance.randint(1, 20)))
            next_id += 20
        elif step in ("vector", "inline") and alive:
            _delete(table, set(chance.sample(alive, min(len(alive), chance.randint(1, 6)))), inline=step == "inline")
        elif step == "rewrite" and alive:
            deltalake.DeltaTable(table).delete(f"id = {chance.choice(alive)}")
        elif step == "restore" and versions[-1] > 0:
            deltalake.DeltaTable(table).restore(chance.choice([v for v in versions if v < versions[-1]]))
        elif step == "refresh":
            lakeseek.refresh_index(table, chance.choice(["incremental", "full"]), engine="local")
        elif step == "optimize":
            lakeseek.optimize_index(table, "full", engine="local")
        versions.append(deltalake.DeltaTable(table).version())
        ids = [chance.randrange(next_id + 5) for _ in range(3)]
        where = chance.choice(
            [f"id = {ids[0]}", f"id IN ({ids[0]}, {ids[1]}, {ids[2]})", f"id >= {ids[0]} AND id < {ids[0] + 9}",
             f"name = 'n-{ids[1] % 17}' OR id = {ids[2]}", "name IS NULL"]
        )  # fmt: skip
        expected = _oracle(table, where)
        for index in (held, lakeseek.open_index(table)):
            assert sorted(index.read(where).column("id").to_pylist()) == expected, (seed, step, where)
        pairs = lakeseek.open_index(table).locate(ids, column="id")
        assert sorted(pairs.column("key").to_pylist()) == _oracle(table, f"id IN ({', '.join(map(str, set(ids)))})")
    shutil.rmtree(table, ignore_errors=True)


# -- Spark ---------------------------------------------------------------------------------------
@pytest.mark.spark
def test_spark_reads_leave_the_deleted_rows_out(table, spark, jvm_source):
    from pyspark.sql import functions as F

    from lakeseek.spark import PYTHON_FORMAT, locate_spark, to_spark

    _delete(table, {7, 40, 41, 77, 150})
    local = lakeseek.create_index(table, ["id", "name"], engine="local", row_groups=True)
    built = lakeseek.create_index(table, ["id", "name"], name="on_spark", spark=spark, row_groups=True)
    _delete(table, {3})  # a file the index covers loses a row: read without the index, by Spark too
    for where in WHERES:
        expected = _oracle(table, where)
        got = sorted(row["id"] for row in to_spark(local, spark, where).select("id").collect())
        assert got == expected, where
        frame = spark.read.format(PYTHON_FORMAT).load(table).where(where)
        assert sorted(row["id"] for row in frame.select("id").collect()) == expected, where
        assert sorted(lakeseek.open_index(table, name="on_spark").read(where).column("id").to_pylist()) == expected
    keys = spark.createDataFrame([(k,) for k in (3, 7, 8, 40, 150, 151)], "k long")
    for index in (local, built):
        pairs = locate_spark(index, keys, column="id").select(F.col("key")).collect()
        assert sorted(row["key"] for row in pairs) == [8, 151]
    if jvm_source:
        with pytest.raises(Exception, match="deletion vectors"):
            spark.read.format("lakeseek").load(table).where("id = 8").collect()
