"""The JVM data source: Spark's own Parquet scan (column pruning included), pruned by the index
through a py4j callback, and every file read whenever the index cannot answer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import lakeseek
import lakeseek.spark
from lakeseek.spark import jvm
from lakeseek.spark.jvm import IndexPlanner, column_path
from tests.lakes import all_rows

pytestmark = pytest.mark.spark


def _files_read(frame) -> int:
    """How many files Spark's scan of ``frame`` lists (its "number of files read" metric).

    The metric is set on the first run only: pass a frame not collected before."""
    frame.collect()
    plan = frame._jdf.queryExecution().executedPlan()
    scans = plan.collectLeaves()
    metrics = scans.head().metrics()
    return int(metrics.apply("numFiles").value())


@pytest.fixture(scope="module")
def registered(spark):
    assert lakeseek.spark.register(spark)
    return spark


def test_lakeseek_is_a_native_parquet_scan_with_column_pruning(registered, typed_lake):
    frame = registered.read.format("lakeseek").load(typed_lake).where("id = 17").select("name")
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert "FileScan parquet" in plan
    assert "ReadSchema: struct<id:bigint,name:string>" in plan  # only the columns the query needs
    assert [row["name"] for row in frame.collect()] == [row["name"] for row in all_rows(typed_lake) if row["id"] == 17]


def test_index_prunes_files_and_or_is_pushed(registered, typed_lake):
    rows = all_rows(typed_lake)
    files = {row["__file"] for row in rows}
    source = registered.read.format("lakeseek").load(typed_lake)
    assert _files_read(source) == len(files)
    assert _files_read(source.where("id = 17")) == 1
    first, last = rows[0]["id"], rows[-1]["id"]
    frame = source.where(f"id = {first} OR (id = {last} AND name IS NOT NULL)")
    assert _files_read(frame) == len({rows[0]["__file"], rows[-1]["__file"]}) < len(files)


def test_planner_failure_reads_every_file(registered, typed_lake, monkeypatch):
    def broken(self, options, filters):
        raise RuntimeError("index unreachable")

    monkeypatch.setattr(IndexPlanner, "candidates", broken)
    frame = registered.read.format("lakeseek").load(typed_lake).where("id = 17")
    assert _files_read(frame) == len({row["__file"] for row in all_rows(typed_lake)})
    assert [row["id"] for row in frame.collect()] == [17]


def test_corrupt_index_reads_every_file(registered, typed_lake, tmp_path):
    lake = tmp_path / "lake"
    shutil.copytree(typed_lake, lake)
    for index_file in (lake / "_lakeseek").rglob("*.parquet"):
        index_file.write_bytes(b"not parquet")
    frame = registered.read.format("lakeseek").load(str(lake)).where("id = 17 OR name = 'alice'")
    expected = registered.read.parquet(str(lake)).where("id = 17 OR name = 'alice'")
    assert sorted(map(tuple, frame.collect())) == sorted(map(tuple, expected.collect()))


@pytest.mark.parametrize(
    ("name", "path"),
    [("a", ("a",)), ("a.b", ("a", "b")), ("`a.b`", ("a.b",)), ("`a``b`.c", ("a`b", "c")), ("", ("",))],
)
def test_column_path(name, path):
    assert column_path(name) == path


def test_jar_is_compiled_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    jar = jvm.compiled_jar()
    assert jar is not None and jar.parent == Path(tmp_path) / "lakeseek"
    monkeypatch.setattr(jvm, "_javac", lambda: None)
    assert jvm.compiled_jar() == jar  # cached: no compiler needed again
    jar.unlink()
    assert jvm.compiled_jar() is None  # no JDK and nothing cached: the Python data source serves
