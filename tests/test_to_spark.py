"""to_spark: Spark over the candidate files gives the rows of Spark over the whole lake."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

import lakeseek
from lakeseek.spark import covering_frame, to_spark
from tests.lakes import INDEXABLE, ids, matching

pytestmark = pytest.mark.spark


def _rows(frame):
    return sorted(tuple(row) for row in frame.collect())


# (lakeseek's SQL, the same predicate written by hand for Spark, and as a tree for the
# Python oracle). The Spark oracle must not go through lakeseek.expressions.sql.to_spark_sql,
# the translation to_spark itself uses: a translation bug would change both sides alike and
# pass. So each Spark form is written independently, in Spark's own spellings where they
# differ (backslash escapes, double-quoted strings, functions instead of typed literals), and
# checked against the Python oracle.
CASES = [
    ("id = 17", "id = 17", ("=", "id", 17)),
    ("name = 'it''s'", 'name = "it\'s"', ("=", "name", "it's")),
    ('name = "São Paulo"', "name = 'São Paulo'", ("=", "name", "São Paulo")),
    (
        "name IN ('São Paulo', 'back\\slash', 'nope')",
        r"name IN ('São Paulo', 'back\\slash', 'nope')",
        ("in", "name", ["São Paulo", "back\\slash", "nope"]),
    ),
    ("payload = X'0001'", "hex(payload) = '0001'", ("=", "payload", b"\x00\x01")),
    (
        "day = DATE '2024-02-29' AND region = 'east'",
        "day = make_date(2024, 2, 29) AND region = 'east'",
        ("and", ("=", "day", dt.date(2024, 2, 29)), ("=", "region", "east")),
    ),
    (
        "ts = TIMESTAMP '2024-01-01 12:30:15.123456'",
        "unix_micros(ts) = 1704112215123456",
        ("=", "ts", dt.datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=dt.timezone.utc)),
    ),
    (
        "amount = -12.50 OR small IS NULL",
        "amount = CAST('-12.5' AS DECIMAL(12, 2)) OR isnull(small)",
        ("or", ("=", "amount", Decimal("-12.50")), ("is null", "small")),
    ),
    ("region IS NULL", "isnull(region)", ("is null", "region")),
    ("code = 7 AND score > 0", "code = 7 AND score > 0.0D", ("and", ("=", "code", 7), (">", "score", 0))),
    ("id = -1", "id = -1", ("=", "id", -1)),
]


@pytest.mark.parametrize(("where", "spark_where", "tree"), CASES)
def test_same_rows_as_spark_over_the_lake(spark, typed_lake, rows, where, spark_where, tree):
    index = lakeseek.open_index(typed_lake)
    full = spark.read.parquet(typed_lake).where(spark_where)
    assert sorted(row["id"] for row in full.collect()) == ids(matching(rows, tree)), spark_where
    assert _rows(to_spark(index, spark, where)) == _rows(full)
    assert to_spark(index, spark, where).schema == full.schema


def test_same_rows_as_spark_after_the_lake_changed(spark, lake_copy):
    import os

    from tests.lakes import data_files

    os.remove(data_files(lake_copy)[0])
    index = lakeseek.open_index(lake_copy)
    for where in ("id = 3", "id = 200", "code = 7"):
        assert _rows(to_spark(index, spark, where)) == _rows(spark.read.parquet(lake_copy).where(where))


@pytest.fixture(scope="module")
def covered_typed_lake(tmp_path_factory, typed_lake):
    """A copy of the typed lake with a covering index carrying every column (every type, NULLs,
    the hive partition column), keyed by id and name."""
    import shutil

    root = str(tmp_path_factory.mktemp("covered_typed") / "lake")
    shutil.copytree(typed_lake, root, ignore=shutil.ignore_patterns("_lakeseek"))
    carried = [c for c in INDEXABLE if c not in ("id", "name")] + ["score"]
    lakeseek.create_index(root, ["id", "name"], kind="covering", engine="local", include=carried, chunk_rows=16)
    return root


@pytest.mark.parametrize(("where", "spark_where", "tree"), CASES)
def test_covering_frame_gives_spark_over_the_lakes_rows(spark, covered_typed_lake, where, spark_where, tree):
    index = lakeseek.open_index(covered_typed_lake)
    full = spark.read.parquet(covered_typed_lake)
    for column in ("id", "name"):
        frame = covering_frame(index, spark, column)
        assert sorted(frame.columns) == sorted(full.columns)
        expected = full.where(spark_where).select(*frame.columns)
        assert _rows(frame.where(spark_where)) == _rows(expected), (column, spark_where)
        assert frame.schema == expected.schema


def test_columns_whose_names_hold_a_dot_or_a_backtick(spark, tmp_path):
    """Spark reads 'a.b' in a select as a field of 'a': the names are quoted."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "lake"
    root.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "a.b": [3, 4], "c`d": [5, 6]}), root / "part-0.parquet")
    index = lakeseek.create_index(str(root), ["id"], engine="local")
    for columns in (["a.b"], ["c`d"], ["id", "a.b", "c`d"]):
        frame = to_spark(index, spark, "id = 1", columns)
        assert (
            frame.columns == columns
            and [row.asDict() for row in frame.collect()] == index.read("id = 1", columns=columns).to_pylist()
        )


def test_a_dotted_name_is_a_struct_field_and_a_column_named_with_a_dot_is_backquoted(spark, tmp_path):
    """``s.f`` was read as the top-level column 's.f' beside a struct ``s`` with a field ``f``:
    the rows of another column (found by the schema hunt). Spark reads it as the field;
    lakeseek, which reads no struct field, refuses it, and answers `s.f` as Spark does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "lake"
    root.mkdir()
    struct = pa.array([None, {"f": None}, {"f": 100}], pa.struct([("f", pa.int64())]))
    table = pa.table({"id": [1, 2, 3], "s": struct, "s.f": pa.array([100, 200, None], pa.int64())})
    pq.write_table(table, root / "part-0.parquet")
    index = lakeseek.create_index(str(root), ["id"], engine="local")
    lake = spark.read.parquet(str(root))
    for where in ("`s.f` = 100", "`s.f` IS NULL", "`s.f` = 200 OR id = 3"):
        expected = sorted(row.id for row in lake.where(where).collect())
        assert sorted(index.read(where, columns=["id"]).column("id").to_pylist()) == expected, where
    for where in ("s.f = 100", "`s`.`f` IS NULL", "s.f.g = 1"):
        with pytest.raises(lakeseek.UnsupportedPredicateError, match="names a field of a struct column 's'"):
            index.read(where)


def test_a_timestamp_predicate_outside_a_utc_session_is_refused(spark, typed_lake):
    """lakeseek chose the files for ``ts = TIMESTAMP '...'`` in UTC and Spark filtered them in
    the session's zone: in America/Los_Angeles the answer was neither's (no row at all)."""
    index = lakeseek.open_index(typed_lake)
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        with pytest.raises(lakeseek.LakeseekError, match="session time zone \\(America/Los_Angeles\\)"):
            to_spark(index, spark, "ts = TIMESTAMP '2024-01-01 03:00:00'")
        assert to_spark(index, spark, "id = 5").count() == len(ids(index.read("id = 5")))  # no timestamp: read
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_a_partition_directory_of_no_value_is_refused_in_one_line(spark, tmp_path):
    """Spark refuses `p=` (EMPTY_PARTITION_COLUMN_VALUE); to_spark raised Spark's exception
    itself. Index.read reads it as the empty string."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for number, value in enumerate(["a", ""]):
        (tmp_path / "lake" / f"p={value}").mkdir(parents=True)
        pq.write_table(pa.table({"id": [number]}), tmp_path / "lake" / f"p={value}" / "part.parquet")
    with pytest.raises(Exception, match="EMPTY_PARTITION_COLUMN_VALUE"):
        spark.read.parquet(str(tmp_path / "lake")).collect()
    index = lakeseek.create_index(str(tmp_path / "lake"), ["id"], engine="local")
    assert index.read("p = ''").column("id").to_pylist() == [1]
    with pytest.raises(lakeseek.LakeseekError, match="Spark refuses the partition directory 'p='"):
        to_spark(index, spark, "id = 1")
