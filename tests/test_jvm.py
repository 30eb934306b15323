"""The JVM data source: Spark's own Parquet scan (column pruning included), pruned by the index
through a py4j callback, and every file read whenever the index cannot answer."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeseek
import lakeseek.spark
from lakeseek.spark import jvm
from lakeseek.spark.jvm import IndexPlanner, column_path
from tests.lakes import all_rows, predicate_trees, to_sql

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
def registered(jvm_spark):
    """The session with ``lakeseek`` as the JVM data source (these tests skip without a JDK)."""
    return jvm_spark


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


def test_a_planner_failure_fails_the_query(registered, typed_lake, monkeypatch):
    """Not a read of every listed file: for a table format's directory that would read the
    files the table removed (the planner itself falls back to every file where that is right:
    a damaged index, below)."""

    def broken(self, options, filters):
        raise RuntimeError("index unreachable")

    monkeypatch.setattr(IndexPlanner, "_candidates", broken)
    with pytest.raises(Exception, match="index unreachable"):
        registered.read.format("lakeseek").load(typed_lake).where("id = 17").collect()


@pytest.mark.parametrize("damaged", ["*.parquet", "log/*.json"])
def test_corrupt_index_reads_every_file(registered, typed_lake, tmp_path, damaged):
    """Index files, or every entry of the log (a stand-in then reads every file)."""
    lake = tmp_path / "lake"
    shutil.copytree(typed_lake, lake)
    for index_file in (lake / "_lakeseek").rglob(damaged):
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
    if jvm._javac() is None:
        pytest.skip("no JDK (javac) to compile the jar with")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    jar = jvm.compiled_jar()
    assert jar is not None and jar.parent == Path(tmp_path) / "lakeseek"
    monkeypatch.setattr(jvm, "_javac", lambda: None)
    assert jvm.compiled_jar() == jar  # cached: no compiler needed again
    jar.unlink()
    assert jvm.compiled_jar() is None  # no JDK and nothing cached: the Python data source serves


def test_file_and_partition_names_that_need_escaping(registered, tmp_path):
    """The JVM lists the files, Python names the candidates: their paths must agree, or rows
    would be lost. Names Spark escapes (%3A), spaces, '#', '%' and unicode, each file a needle."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = tmp_path / "lake"
    names = ["tag=a%3Ab/part 0.parquet", "tag=x y/part#1.parquet", "tag=ü/part%25.parquet", "tag=plain/p.parquet"]
    for number, name in enumerate(names):
        (lake / name).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [number * 10 + i for i in range(5)]}), lake / name)
    lakeseek.create_index(str(lake), ["id"], spark=registered)
    source = registered.read.format("lakeseek").load(str(lake))
    parquet = registered.read.parquet(str(lake))
    for number in range(len(names)):
        where = f"id = {number * 10 + 3}"
        assert sorted(map(tuple, source.where(where).collect())) == sorted(map(tuple, parquet.where(where).collect()))
        assert _files_read(registered.read.format("lakeseek").load(str(lake)).where(where)) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_predicates_give_spark_parquet_rows(registered, typed_lake, rows, data):
    where = to_sql(data.draw(predicate_trees(rows)))
    source = registered.read.format("lakeseek").load(typed_lake).where(where)
    expected = registered.read.parquet(typed_lake).where(where)
    assert sorted(row["id"] for row in source.collect()) == sorted(row["id"] for row in expected.collect()), where


def test_timestamps_before_the_gregorian_calendar(registered, tmp_path):
    """Spark hands a TIMESTAMP literal over as java.sql.Timestamp, on the Julian calendar
    before 1582: read as is, it names another instant and the index prunes the row's file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = tmp_path / "lake"
    lake.mkdir()
    instants = [dt.datetime(year, 1, 1, tzinfo=dt.timezone.utc) for year in (1003, 1500, 1582, 1890, 2024)]
    for number, instant in enumerate(instants):
        table = pa.table({"ts": pa.array([instant], pa.timestamp("us", tz="UTC")), "day": [instant.date()]})
        pq.write_table(table, lake / f"part-{number}.parquet")
    lakeseek.create_index(str(lake), ["ts", "day"], spark=registered)
    source = registered.read.format("lakeseek").load(str(lake))
    for instant in instants:
        text = instant.strftime("%Y-%m-%d %H:%M:%S")
        for where in (f"ts = TIMESTAMP '{text}'", f"day = DATE '{instant.date()}'", f"ts >= DATE '{instant.date()}'"):
            expected = registered.read.parquet(str(lake)).where(where).count()
            assert source.where(where).count() == expected >= 1, where


def test_lake_paths_spark_and_python_must_read_alike(registered, tmp_path, monkeypatch):
    """'#' and '?' in a lake's name (a file: URI or a catalog table's location) and relative
    paths (the JVM's working directory is not Python's) name the same directory on both sides."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name in ("lake", "lake#x", "lake?v=1"):
        lake = tmp_path / name
        lake.mkdir()
        for number in range(4):
            # The sibling lakes hold the same file names with other ids: a mix-up loses rows.
            ids = [number * 10 + (name != "lake")]
            pq.write_table(pa.table({"id": ids}), lake / f"part-{number}.parquet")
        lakeseek.create_index(str(lake), ["id"], spark=registered)
        registered.sql(f"DROP TABLE IF EXISTS paths_{len(name)}")
        registered.sql(f"CREATE TABLE paths_{len(name)} USING lakeseek OPTIONS (path '{lake}')")
        expected = registered.read.parquet(str(lake)).where("id = 21").count()
        assert expected == (name != "lake")
        assert registered.read.format("lakeseek").load(f"file:{lake}").where("id = 21").count() == expected, name
        assert registered.sql(f"SELECT * FROM paths_{len(name)} WHERE id = 21").count() == expected, name
    # Indexing the others wrote nothing into their sibling "lake".
    assert sorted(p.name for p in (tmp_path / "lake").iterdir()) == [
        "_lakeseek",
        *(f"part-{n}.parquet" for n in range(4)),
    ]
    jvm_directory = registered._jvm.java.lang.System.getProperty("user.dir")
    monkeypatch.chdir(tmp_path)  # Python's working directory moves, the JVM's cannot
    relative = os.path.relpath(tmp_path / "lake#x", jvm_directory)
    assert registered.read.format("lakeseek").load(relative).where("id = 21").count() == 1


def test_a_table_and_a_view_read_the_lake_as_it_is_now(registered, tmp_path):
    """A table or a view USING lakeseek keeps its relation between queries: a query the index
    cannot narrow still reads the files added since and not those removed (a Parquet table
    would need REFRESH TABLE)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = tmp_path / "lake"
    lake.mkdir()
    for number in range(2):
        pq.write_table(
            pa.table({"id": [number * 10, number * 10 + 1], "f": [0.5, 1.5]}), lake / f"part-{number}.parquet"
        )
    lakeseek.create_index(str(lake), ["id"], engine="local")
    registered.sql(f"CREATE TABLE kept_relation USING lakeseek OPTIONS (path '{lake}')")
    registered.sql(f"CREATE TEMPORARY VIEW kept_view USING lakeseek OPTIONS (path '{lake}')")
    try:
        for name in ("kept_relation", "kept_view"):
            assert registered.sql(f"SELECT count(*) AS n FROM {name} WHERE f > 0").first()["n"] == 4
        pq.write_table(pa.table({"id": [20], "f": [2.5]}), lake / "part-2.parquet")
        for name in ("kept_relation", "kept_view"):
            assert registered.sql(f"SELECT count(*) AS n FROM {name} WHERE f > 0").first()["n"] == 5, name
            assert registered.sql(f"SELECT count(*) AS n FROM {name} WHERE id = 20").first()["n"] == 1, name
        os.remove(lake / "part-0.parquet")
        for name in ("kept_relation", "kept_view"):
            assert registered.sql(f"SELECT count(*) AS n FROM {name} WHERE f > 0").first()["n"] == 3, name
    finally:
        registered.sql("DROP TABLE IF EXISTS kept_relation")
        registered.sql("DROP VIEW IF EXISTS kept_view")


@pytest.mark.parametrize("source", ["lakeseek", "lakeseek_python"])
def test_a_frame_whose_partition_column_the_lake_retyped_refuses_to_read(registered, tmp_path, source):
    """A DataFrame made while `p` held 1 and 2 (INT) kept reading after a directory `p=2.5` made
    it DOUBLE: `p >= 1` missed the new row or failed inside Spark, the Python source's with an
    Arrow truncation error. A query now fails, saying the lake changed; a DataFrame made now reads
    Spark's rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = tmp_path / "lake"
    for number, value in enumerate(["1", "2"]):
        (lake / f"p={value}").mkdir(parents=True)
        pq.write_table(pa.table({"id": [number]}), lake / f"p={value}" / "part-0.parquet")
    lakeseek.create_index(str(lake), ["id"], engine="local")
    frame = registered.read.format(source).load(str(lake))
    assert sorted(row["id"] for row in frame.where("p >= 1").collect()) == [0, 1]
    (lake / "p=2.5").mkdir()
    pq.write_table(pa.table({"id": [2]}), lake / "p=2.5" / "part-0.parquet")
    # (`p = 2.5` Spark answers from the frame's schema alone, reading nothing: no rows, as a
    # `spark.read.parquet` frame made before answers it.)
    for where in ("id = 2", "p >= 1"):
        with pytest.raises(Exception, match=r"when this DataFrame \(or (view|table)\) was made: read the lake again"):
            frame.where(where).collect()
    fresh = registered.read.format(source).load(str(lake)).where("p = 2.5").collect()
    assert (
        [row["id"] for row in fresh]
        == [2]
        == [row["id"] for row in registered.read.parquet(str(lake)).where("p = 2.5").collect()]
    )


def test_a_lake_without_an_index_is_refused_in_one_line(registered, tmp_path):
    """It was a 118-line Py4JJavaError holding the Python traceback of the planner's call back."""
    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(pa.table({"id": [1]}), lake / "part-0.parquet")
    with pytest.raises(Exception, match="no lakeseek index at") as raised:
        registered.read.format("lakeseek").load(str(lake))
    assert len(str(raised.value).splitlines()) == 1
