"""Every way into a lake through lakeseek answers what Spark over the whole lake answers.

The front ends: ``Index.read`` / ``files`` / ``to_spark`` / ``locate_spark`` and the two Spark
formats, ``lakeseek`` (JVM) and ``lakeseek_python``. The oracle is ``spark.read.parquet`` of
the lake's root, so lakeseek's listing and Spark's have to agree too.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import lakeseek
import lakeseek.spark
from lakeseek.sources.directory import is_hidden
from lakeseek.spark import PYTHON_FORMAT, locate_spark, to_spark

pytestmark = pytest.mark.spark
FORMATS = ["lakeseek", PYTHON_FORMAT]


@pytest.fixture(scope="module")
def registered(spark, jvm_source):
    """Both formats on the session: ``lakeseek`` is the JVM source where a JDK is at hand
    (``jvm_source``), else the Python one, which its cases then test twice."""
    return spark


def _ids(frame) -> list[int]:
    return sorted(row["id"] for row in frame.select("id").collect())


def _write(path: str, ids: list[int]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i % 7}" for i in ids]}), path)


# -- one DataFrame, one view, one table: each query answers for itself ---------------------------
_PREDICATES = [
    None,  # a bare count(*) or scan: no filter for Spark to push
    "id = 42",
    "id = 3",
    "id < 100",
    "id IN (5, 700, 1701)",
    "name = 'alice'",
    "region IS NULL",
    "code = 7 AND region = 'east'",
    "id = 17 OR name = 'Bob'",
    "score > 0",  # not indexed (a float column)
    "id = -1",  # nothing
]


def _query(relation: str, where: str | None, count: bool) -> str:
    select = "count(*) AS n" if count else "id"
    return f"SELECT {select} FROM {relation}" + (f" WHERE {where}" if where else "")


def _answer(spark, relation: str, where: str | None, count: bool) -> object:
    frame = spark.sql(_query(relation, where, count))
    return frame.collect()[0]["n"] if count else _ids(frame)


def _frame_answer(frame, where: str | None, count: bool) -> object:
    narrowed = frame.where(where) if where else frame
    return narrowed.count() if count else _ids(narrowed)


@pytest.mark.parametrize("source_format", FORMATS)
def test_one_dataframe_view_and_table_answer_a_random_sequence_of_queries(registered, typed_lake, source_format):
    """Spark plans every query on a DataFrame, temp view or table reference anew, but keeps
    state on the relation it reads: a query must never see the filters of an earlier one."""
    spark = registered
    expected_view, view, table = f"expected_{source_format}", f"seq_{source_format}", f"seq_table_{source_format}"
    spark.read.parquet(typed_lake).createOrReplaceTempView(expected_view)
    frame = spark.read.format(source_format).load(typed_lake)
    frame.createOrReplaceTempView(view)
    spark.sql(f"CREATE TABLE {table} USING {source_format} OPTIONS (path '{typed_lake}')")
    try:
        table_frame = spark.table(table)  # one resolution of the table, reused like a DataFrame
        rng = random.Random(20240607)
        expected: dict[tuple[str | None, bool], object] = {}
        for step in range(14):
            where, count = rng.choice(_PREDICATES), rng.random() < 0.5
            key = (where, count)
            if key not in expected:
                expected[key] = _answer(spark, expected_view, where, count)
            got = {
                "DataFrame": _frame_answer(frame, where, count),
                "view": _answer(spark, view, where, count),
                "table": _frame_answer(table_frame, where, count),
            }
            for front, answer in got.items():
                assert answer == expected[key], (step, front, _query(view, where, count))
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_readers_spark_makes_read_every_file_and_row(typed_lake):
    """Spark keeps a reader's read for every scan of its relation, so the reader must not
    narrow it to its own filters (Spark applies them)."""
    from pyspark.sql import datasource as f

    from lakeseek.spark.datasource import LakeseekDataSource
    from tests.lakes import data_files

    source = LakeseekDataSource({"path": typed_lake})
    reader = source.reader(source.schema())
    filters = [f.EqualTo(("id",), 42)]
    assert reader.pushFilters(filters) == filters and reader.pushed == []
    partitions = reader.partitions()
    assert sum(len(p.files) for p in partitions) == len(data_files(typed_lake))
    rows = sum(batch.num_rows for p in partitions for batch in reader.read(p))
    assert rows == sum(pq.read_metadata(path).num_rows for path in data_files(typed_lake))


def test_a_narrowing_reader_plans_the_scan_of_its_last_pushed_filters(typed_lake):
    from pyspark.sql import datasource as f

    from lakeseek.spark.datasource import LakeseekDataSource

    class OneScanSource(LakeseekDataSource):
        narrow_to_pushed_filters = True

    source = OneScanSource({"path": typed_lake})
    reader = source.reader(source.schema())
    reader.pushFilters([f.EqualTo(("id",), 42)])
    reader.pushFilters([f.EqualTo(("id",), 1500)])  # the next scan: replaces, not adds to, the filters
    found = [row["id"] for p in reader.partitions() for batch in reader.read(p) for row in batch.to_pylist()]
    assert found == [1500]
    reader.pushFilters([])
    assert sum(len(p.files) for p in reader.partitions()) == reader.plan.total_files


_TWO_SCANS = [
    "SELECT id FROM {v} WHERE id = 3 UNION ALL SELECT id FROM {v} WHERE id = 31",
    "SELECT id FROM {v} WHERE id = 12 OR id IN (SELECT id + 20 FROM {v} WHERE id = 3)",
    "SELECT id FROM {v} WHERE id = 5 UNION ALL SELECT id FROM {v}",
    "SELECT a.id FROM {v} a JOIN {v} b ON a.id + 1 = b.id WHERE a.id = 5 AND b.id = 6",
]


@pytest.mark.parametrize("source_format", FORMATS)
@pytest.mark.parametrize("sql", _TWO_SCANS)
def test_two_scans_of_one_view_in_one_query(registered, typed_lake, source_format, sql):
    spark = registered
    spark.read.parquet(typed_lake).createOrReplaceTempView("two_scans_expected")
    spark.read.format(source_format).load(typed_lake).createOrReplaceTempView("two_scans")
    expected = _ids(spark.sql(sql.format(v="two_scans_expected")))
    assert expected  # every query here has rows
    assert _ids(spark.sql(sql.format(v="two_scans"))) == expected


# -- the listing: exactly the files Spark reads --------------------------------------------------
# Each path holds the ids [10 * n, 10 * n + 3): whether Spark reads it is checked by the tests.
_LISTING_LAKE = [
    "p=1/part-0.parquet",
    "p=2/_common_metadata/part-0.parquet",  # Spark enters _common_metadata* and _metadata* directories
    "p=2/_metadata_x/part-0.parquet",
    "p=2/_metadata/part-0.parquet",
    "p=2/_a=1.parquet",  # '_' with '=': data
    "p=3/_metadata",  # ... but reads no file whose name starts with '_' (no '=')
    "p=3/_common_metadata",
    "p=3/_metadata_x.parquet",
    "p=3/_x",
    "p=3/.hidden",
    "p=3/x._COPYING_",
    "p=4/_x/part-0.parquet",  # nor enters other '_' or '.' directories
    "p=4/.x/part-0.parquet",
    "p=4/x._COPYING_/part-0.parquet",
]


@pytest.fixture(scope="module")
def listing_lake(registered, tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("listing") / "lake")
    for number, path in enumerate(_LISTING_LAKE):
        _write(f"{root}/{path}", list(range(10 * number, 10 * number + 3)))
    lakeseek.create_index(root, ["id"], spark=registered)
    return root


def _spark_files(spark, root: str) -> set[str]:
    """The files spark.read.parquet reads, relative to ``root``."""
    from urllib.parse import unquote, urlparse

    names = spark.read.parquet(root).select(F.input_file_name().alias("f")).distinct().collect()
    return {os.path.relpath(unquote(urlparse(row["f"]).path), root) for row in names}


def test_listing_is_the_files_spark_reads(registered, listing_lake):
    index = lakeseek.open_index(listing_lake)
    listed = set(index.lake.snapshot(exclude=index.location.home).files)
    assert listed == _spark_files(registered, listing_lake)
    assert "p=2/_common_metadata/part-0.parquet" in listed and "p=3/_metadata" not in listed


@pytest.mark.parametrize(
    ("name", "directory", "hidden"),
    [
        ("_common_metadata", True, False),
        ("_metadata", True, False),
        ("_metadata_x", True, False),
        ("_common_metadata", False, True),
        ("_metadata", False, True),
        ("_metadata_x.parquet", False, True),
        ("_x", True, True),
        ("_x", False, True),
        ("_a=1", True, False),
        ("_a=1.parquet", False, False),
        (".hidden", True, True),
        (".hidden", False, True),
        ("x._COPYING_", True, True),
        ("x._COPYING_", False, True),
        ("part-0.parquet", False, False),
        ("p=2", True, False),
    ],
)
def test_is_hidden_is_spark_listing_rule(name, directory, hidden):
    assert is_hidden(name, directory=directory) is hidden


@pytest.mark.parametrize("number", range(len(_LISTING_LAKE)))
def test_every_front_end_reads_what_spark_reads(registered, listing_lake, number):
    spark = registered
    where = f"id = {10 * number + 1}"
    expected = _ids(spark.read.parquet(listing_lake).where(where))
    index = lakeseek.open_index(listing_lake)
    assert sorted(index.read(where).column("id").to_pylist()) == expected, where
    assert bool(index.files(where)) == bool(expected), where
    assert _ids(to_spark(index, spark, where)) == expected, where
    for source_format in FORMATS:
        assert _ids(spark.read.format(source_format).load(listing_lake).where(where)) == expected, source_format


# -- file names Spark would read as glob patterns -------------------------------------------------
_GLOB_NAMES = [
    "part-1.parquet",
    "part-[1].parquet",
    "part-?.parquet",
    "part-*.parquet",
    "{a,b}.parquet",
    "a.parquet",
    "b.parquet",
    "part-\\.parquet",
    "k=[x]/part-0.parquet",
    "k=*/part-0.parquet",
    "k=x/part-0.parquet",
]


@pytest.fixture(scope="module")
def glob_lake(registered, tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("globs") / "lake")
    for number, path in enumerate(_GLOB_NAMES):
        directory = "" if "/" in path else "k=top/"  # every file in a partition k=..., as Spark requires
        _write(f"{root}/{directory}{path}", [9000 + 10 * number + i for i in range(3)])
    lakeseek.create_index(root, ["id"], spark=registered)
    return root


def _holders(root: str) -> Iterator[tuple[int, str]]:
    """Every (id, file) of the lake, read file by file with pyarrow (no globbing anywhere)."""
    for directory, _, names in os.walk(root):
        if "_lakeseek" in directory:
            continue
        for name in names:
            path = os.path.join(directory, name)
            for key in pq.read_table(path, columns=["id"]).column("id").to_pylist():
                yield key, path


@pytest.mark.parametrize("number", range(len(_GLOB_NAMES)))
def test_to_spark_reads_exactly_the_named_files(registered, glob_lake, number):
    spark = registered
    index = lakeseek.open_index(glob_lake)
    for where in (f"id = {9000 + 10 * number}", f"id IN ({9000 + 10 * number + 2}, 9001, 9011)"):
        expected = _ids(spark.read.parquet(glob_lake).where(where))
        assert expected, where
        assert _ids(to_spark(index, spark, where)) == expected, where
        assert to_spark(index, spark, where).schema == spark.read.parquet(glob_lake).schema


def test_locate_spark_names_exactly_the_files_holding_each_key(registered, glob_lake):
    spark = registered
    index = lakeseek.open_index(glob_lake)
    keys = [9000 + 10 * number + 1 for number in range(len(_GLOB_NAMES))] + [42]
    truth = sorted((key, path) for key, path in _holders(glob_lake) if key in keys)
    found = locate_spark(index, spark.createDataFrame([(k,) for k in keys], "k long"), column="id")
    assert sorted((row["key"], row["file"].removeprefix("file://")) for row in found.collect()) == truth
    # The same with files the index does not cover (read by locate_spark itself).
    _write(f"{glob_lake}/k=top/new-[2].parquet", [9500])
    _write(f"{glob_lake}/k=top/new-2.parquet", [9501])
    try:
        keys = [9500, 9501, 9001]
        truth = sorted((key, path) for key, path in _holders(glob_lake) if key in keys)
        index = lakeseek.open_index(glob_lake)
        found = locate_spark(index, spark.createDataFrame([(k,) for k in keys], "k long"), column="id")
        assert sorted((row["key"], row["file"].removeprefix("file://")) for row in found.collect()) == truth
    finally:
        os.remove(f"{glob_lake}/k=top/new-[2].parquet")
        os.remove(f"{glob_lake}/k=top/new-2.parquet")


# -- empty files ----------------------------------------------------------------------------------
@pytest.mark.parametrize("source_format", FORMATS)
def test_empty_files_are_skipped_as_spark_does(registered, typed_lake, tmp_path, source_format):
    """A 0-byte file is no Parquet file, but Spark's reader skips it: so do both formats."""
    import shutil

    spark = registered
    lake = str(tmp_path / "lake")
    shutil.copytree(typed_lake, lake)
    open(f"{lake}/region=east/part-empty.parquet", "wb").close()  # new since indexing: read by every query
    assert not is_hidden("part-empty.parquet")
    for where in ("id = 3", "region = 'east'", None):
        parquet = spark.read.parquet(lake)
        expected = _ids(parquet.where(where) if where else parquet)
        frame = spark.read.format(source_format).load(lake)
        assert _ids(frame.where(where) if where else frame) == expected, where


def test_a_partitioned_iceberg_table_with_a_dropped_column_through_every_front_end(registered, tmp_path):
    """Spark must not take partition values from pyiceberg's directory names (`p=a+b` for
    'a b', `p=%C3%A9` for 'é', `p=null` for NULL), nor show a column the table dropped; the
    JVM format read no row of an Iceberg table at all (its files lie under data/)."""
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    catalog = SqlCatalog("f", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse")
    catalog.create_namespace("ns")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "p", StringType()),
        NestedField(3, "secret", StringType()),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "p"))
    table = catalog.create_table("ns.t", schema=schema, partition_spec=spec)
    values = ["é", "a b", None, "x/y", "a=b"]
    rows = {"id": pa.array([1, 2, 3, 4, 5], pa.int64()), "p": values, "secret": ["s"] * 5}
    table.append(pa.table(rows, schema=table.schema().as_arrow()))
    location = table.location().removeprefix("file://")
    lakeseek.create_index(location, ["id"], engine="local")
    with table.update_schema() as update:
        update.delete_column("secret")
    expected = sorted(zip([1, 2, 3, 4, 5], values, strict=True), key=lambda row: row[0])
    index = lakeseek.open_index(location)
    frames = {
        "to_spark": to_spark(index, registered, "id >= 0"),
        **{name: registered.read.format(name).load(location) for name in FORMATS},
    }
    for name, frame in frames.items():
        assert frame.columns == ["id", "p"], name
        assert sorted(tuple(row) for row in frame.collect()) == expected, name
        for value in ("é", "a b"):
            assert [row["id"] for row in frame.where(F.col("p") == value).collect()] == [values.index(value) + 1]
        assert [row["id"] for row in frame.where(F.col("p").isNull()).collect()] == [3], name
