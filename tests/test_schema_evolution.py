"""Lakes whose files disagree on the schema: types widened across files, columns added by new
files, partition values of a wider type, and column names spelled in another case.

Every path (``read``, ``files``, ``locate``, ``to_spark`` and both data sources) must give
what ``spark.read.parquet(LAKE).where(P)`` gives, with the options that make Spark read such
a lake (``mergeSchema``, or the widened type given as the schema where Spark's own inference
would pick a narrower file first).
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeseek
import lakeseek.spark
from lakeseek.spark import PYTHON_FORMAT, spark_schema, to_spark

pytestmark = pytest.mark.spark
SOURCES = ("lakeseek", PYTHON_FORMAT)


def _write(lake, files: dict[str, pa.Table]) -> str:
    for relative, table in files.items():
        path = os.path.join(lake, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(table, path)
    return str(lake)


def _rows(frame) -> list[str]:
    return sorted(repr(tuple(row)) for row in frame.collect())


def _table_rows(table: pa.Table, columns: list[str]) -> list[str]:
    def spark_value(value):  # Spark hands TIMESTAMP values out as naive UTC datetimes
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value

    return sorted(repr(tuple(spark_value(row[c]) for c in columns)) for row in table.to_pylist())


def _names(paths) -> list[str]:
    return sorted(os.path.basename(p) for p in paths)


@pytest.fixture(scope="module")
def sources(spark):
    assert lakeseek.spark.register(spark)
    return SOURCES


def _check(spark, lake, where, oracle, sources, *, options=None):
    """Every lakeseek path gives the oracle's rows (Spark's DataFrame) for ``where``."""
    options = options or {}
    expected = oracle.where(where)
    index = lakeseek.open_index(lake)
    columns = expected.columns
    want = _rows(expected)
    assert _table_rows(index.read(where), columns) == want, where
    assert _rows(to_spark(index, spark, where).select(*columns)) == want, where
    files = set(_names(index.files(where)))
    for row in expected.select("_metadata.file_name").collect():
        assert row[0] in files, (where, row[0])
    for source in sources:
        frame = spark.read.format(source).options(**options).load(lake).where(where)
        assert _rows(frame.select(*columns)) == want, (source, where)


# -- 1. one column, several physical types ---------------------------------------------------------
def _int_lake(tmp_path) -> str:
    return _write(
        tmp_path / "lake",
        {
            "a.parquet": pa.table({"x": pa.array([1, 2, 1_000_000_000], pa.int32()), "k": ["a1", "a2", "a3"]}),
            "b.parquet": pa.table({"x": pa.array([5_000_000_000, 3], pa.int64()), "k": ["b1", "b2"]}),
        },
    )


def test_integers_widen_to_the_wider_type(spark, tmp_path, sources, monkeypatch):
    from lakeseek.sources import base

    lake = _int_lake(tmp_path)
    monkeypatch.setattr(base, "FOOTERS_IN_PROCESS", 0)  # the files' schemas read by a Spark job
    monkeypatch.setattr(base, "FOOTERS_PER_TASK", 1)
    index = lakeseek.create_index(lake, ["x"], spark=spark)
    assert index.schema.field("x").type == pa.int64()
    # Spark reads the lake where its schema is the wider one (its own inference takes the first file's).
    oracle = spark.read.schema("x bigint, k string").parquet(lake)
    for where in ("x > 1000000000", "x = 5000000000", "x = 705032704", "x < 3", "x IN (3, 5000000000)"):
        _check(spark, lake, where, oracle, sources)
    assert "b.parquet" in _names(index.files("x > 1000000000"))
    found = index.locate([705032704, 5_000_000_000, 1_000_000_000], column="x").to_pylist()
    assert [(r["key"], os.path.basename(r["file"])) for r in found] == [
        (1_000_000_000, "a.parquet"),
        (5_000_000_000, "b.parquet"),
    ]


def test_a_wider_type_in_new_files_before_and_after_a_refresh(spark, tmp_path, sources):
    lake = _write(tmp_path / "lake", {"a.parquet": pa.table({"x": pa.array([1, 2], pa.int32())})})
    lakeseek.create_index(lake, ["x"], spark=spark)
    _write(lake, {"b.parquet": pa.table({"x": pa.array([5_000_000_000, 3], pa.int64())})})
    oracle = spark.read.schema("x bigint").parquet(lake)
    for where in ("x > 1000000000", "x = 3", "x = 705032704"):
        _check(spark, lake, where, oracle, sources)  # b.parquet is not indexed yet
    for mode in ("incremental", "quick", "full"):
        index = lakeseek.refresh_index(lake, mode, spark=spark)
        assert index.schema.field("x").type == pa.int64(), mode
        for where in ("x > 1000000000", "x = 3", "x = 705032704"):
            _check(spark, lake, where, oracle, sources)
        assert index.locate([705032704, 5_000_000_000], column="x").column("key").to_pylist() == [5_000_000_000]
        _write(lake, {f"c-{mode}.parquet": pa.table({"x": pa.array([7], pa.int32())})})
    assert lakeseek.open_index(lake).plan("x = 5000000000").index_used


def test_decimals_widen_when_no_digit_is_lost(spark, tmp_path, sources):
    lake = _write(
        tmp_path / "lake",
        {
            "a.parquet": pa.table({"d": pa.array([Decimal("1.23"), Decimal("-999.99")], pa.decimal128(5, 2))}),
            "b.parquet": pa.table({"d": pa.array([Decimal("123456.1234"), Decimal("1.2300")], pa.decimal128(10, 4))}),
        },
    )
    index = lakeseek.create_index(lake, ["d"], spark=spark)
    assert index.schema.field("d").type == pa.decimal128(10, 4)
    oracle = spark.read.schema("d decimal(10,4)").parquet(lake)
    for where in ("d = 123456.1234", "d > 100", "d = 1.23", "d < 0"):
        _check(spark, lake, where, oracle, sources)
    found = index.locate([Decimal("123456.1234"), Decimal("1.23")], column="d").to_pylist()
    assert [(r["key"], os.path.basename(r["file"])) for r in found] == [
        (Decimal("1.2300"), "a.parquet"),
        (Decimal("1.2300"), "b.parquet"),
        (Decimal("123456.1234"), "b.parquet"),
    ]


def test_timestamp_units_widen_to_the_finer_one(spark, tmp_path, sources):
    utc = dt.timezone.utc
    lake = _write(
        tmp_path / "lake",
        {
            "a.parquet": pa.table(
                {"t": pa.array([dt.datetime(2024, 1, 1, 0, 0, 1, tzinfo=utc)], pa.timestamp("ms", "UTC"))}
            ),
            "b.parquet": pa.table(
                {"t": pa.array([dt.datetime(2024, 1, 1, 0, 0, 1, 1, tzinfo=utc)], pa.timestamp("us", "UTC"))}
            ),
        },
    )
    index = lakeseek.create_index(lake, ["t"], spark=spark)
    assert index.schema.field("t").type == pa.timestamp("us", "UTC")
    oracle = spark.read.option("mergeSchema", "true").parquet(lake)  # Spark merges these itself
    for where in ("t = TIMESTAMP '2024-01-01 00:00:01.000001'", "t > TIMESTAMP '2024-01-01 00:00:01'"):
        _check(spark, lake, where, oracle, sources)


def test_nanoseconds_after_microseconds_are_read_exactly(spark, tmp_path):
    """Spark reads no nanosecond file; lakeseek widens to nanoseconds and loses no digit."""
    lake = _write(tmp_path / "lake", {"a.parquet": pa.table({"t": pa.array([1_000_000], pa.timestamp("us"))})})
    lakeseek.create_index(lake, ["t"], spark=spark)
    _write(lake, {"b.parquet": pa.table({"t": pa.array([1_000_000_001], pa.timestamp("ns"))})})
    for index in (lakeseek.open_index(lake), lakeseek.refresh_index(lake, "incremental", engine="local")):
        assert index.read("t > TIMESTAMP_NTZ '1970-01-01 00:00:01'").column("t").cast(pa.int64()).to_pylist() == [
            1_000_000_001
        ]
        assert "b.parquet" in _names(index.files("t > TIMESTAMP_NTZ '1970-01-01 00:00:01'"))


def test_types_that_do_not_widen_exactly_are_refused(spark, tmp_path):
    lake = _write(
        tmp_path / "lake",
        {
            "a.parquet": pa.table({"x": pa.array([1], pa.int32())}),
            "b.parquet": pa.table({"x": pa.array(["one"], pa.string())}),
        },
    )
    with pytest.raises(lakeseek.LakeseekError, match=r"b\.parquet.*'x'.*string.*int32|b\.parquet.*'x'.*int32.*string"):
        lakeseek.create_index(lake, ["x"], spark=spark)
    os.remove(f"{lake}/b.parquet")
    lakeseek.create_index(lake, ["x"], spark=spark)
    # An INT needs 10 integer digits: no decimal of at most 38 digits holds both.
    _write(lake, {"c.parquet": pa.table({"x": pa.array([Decimal("1.5")], pa.decimal128(38, 30))})})
    index = lakeseek.open_index(lake)
    with pytest.raises(lakeseek.LakeseekError, match=r"c\.parquet.*'x'.*decimal128\(38, 30\)"):
        index.read("x = 1")
    with pytest.raises(lakeseek.LakeseekError, match=r"c\.parquet.*'x'"):
        lakeseek.refresh_index(lake, "incremental", engine="local")


# -- 2. the schema Spark infers now ----------------------------------------------------------------
def test_a_partition_value_of_a_wider_type(spark, tmp_path, sources):
    lake = _write(
        tmp_path / "lake",
        {
            "p=1/a.parquet": pa.table({"id": pa.array([1, 2], pa.int64())}),
            "p=2/a.parquet": pa.table({"id": pa.array([3, 4], pa.int64())}),
        },
    )
    lakeseek.create_index(lake, ["id", "p"], spark=spark)
    _write(lake, {"p=2.5/a.parquet": pa.table({"id": pa.array([5], pa.int64())})})
    oracle = spark.read.parquet(lake)
    assert dict(oracle.dtypes)["p"] == "double"
    index = lakeseek.open_index(lake)
    assert spark_schema(index) == oracle.schema
    for where in ("p > 2", "p = 2.5", "id = 5", "p = 1", "id = 3"):
        _check(spark, lake, where, oracle, sources)
    spark.conf.set("spark.sql.sources.validatePartitionColumns", "false")
    try:
        for where in ("p > 2", "p = 2.5"):
            _check(spark, lake, where, spark.read.parquet(lake), sources)
    finally:
        spark.conf.unset("spark.sql.sources.validatePartitionColumns")
    index = lakeseek.refresh_index(lake, "incremental", spark=spark)
    assert spark_schema(index) == oracle.schema
    for where in ("p > 2", "id = 5", "p = 1"):
        _check(spark, lake, where, oracle, sources)


def test_columns_added_by_new_files(spark, tmp_path, sources):
    lake = _write(tmp_path / "lake", {"a.parquet": pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["x", "y"]})})
    lakeseek.create_index(lake, ["id"], spark=spark)
    _write(
        lake,
        {"b.parquet": pa.table({"id": pa.array([3], pa.int64()), "v": ["z"], "extra": pa.array([7], pa.int32())})},
    )
    oracle = spark.read.option("mergeSchema", "true").parquet(lake)
    index = lakeseek.open_index(lake)
    assert spark_schema(index) == oracle.schema
    # A range of conjuncts on it (merged into one range) was a KeyError: the planner typed it by the index's schema.
    for where in ("extra = 7", "id = 3", "id = 1", "extra IS NULL", "extra >= 3 AND extra < 9", "extra > 1 AND id > 0"):
        _check(spark, lake, where, oracle, sources, options={"mergeSchema": "true"})
    index = lakeseek.refresh_index(lake, "incremental", engine="local")
    assert spark_schema(index) == oracle.schema
    for where in ("extra = 7", "id = 3"):
        _check(spark, lake, where, oracle, sources, options={"mergeSchema": "true"})
    # A rewritten file adds a column too.
    _write(lake, {"a.parquet": pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["x", "y"], "more": [True, None]})})
    oracle = spark.read.option("mergeSchema", "true").parquet(lake)
    # Spark merges in its files' order (a.parquet's columns first); lakeseek adds new columns last.
    assert sorted(spark_schema(lakeseek.open_index(lake)), key=str) == sorted(oracle.schema, key=str)
    for where in ("more", "id = 1 AND more IS NULL", "extra = 7"):
        _check(spark, lake, where, oracle, sources, options={"mergeSchema": "true"})


def test_a_column_only_new_files_have_can_be_indexed_at_once(spark, tmp_path, sources):
    """``create_index`` for a column the index has not recorded yet (only files added since
    have it) refreshes first, then indexes it: no refresh by hand, no unknown column."""
    lake = _write(tmp_path / "lake", {"a.parquet": pa.table({"id": pa.array([1, 2], pa.int64())})})
    lakeseek.create_index(lake, ["id"], spark=spark)
    _write(lake, {"b.parquet": pa.table({"id": pa.array([3], pa.int64()), "Extra": pa.array([7], pa.int32())})})
    index = lakeseek.create_index(lake, ["extra"], spark=spark)
    assert sorted(index.columns) == ["Extra", "id"]
    status = index.status()
    assert status.is_fresh
    assert {c.name: c.entries for c in status.columns}["Extra"] == 2  # 7 in b.parquet, NULL in a.parquet
    oracle = spark.read.option("mergeSchema", "true").parquet(lake)
    for where in ("extra = 7", "Extra IS NULL", "id = 3"):
        _check(spark, lake, where, oracle, sources, options={"mergeSchema": "true"})
    with pytest.raises(lakeseek.UnknownColumnError):
        lakeseek.create_index(lake, ["nowhere"], spark=spark)


def test_recursive_file_lookup_has_no_partition_columns(spark, tmp_path, sources):
    lake = _write(
        tmp_path / "lake",
        {
            "p=1/a.parquet": pa.table({"id": pa.array([1, 2], pa.int64())}),
            "p=2/a.parquet": pa.table({"id": pa.array([3], pa.int64())}),
        },
    )
    lakeseek.create_index(lake, ["id"], spark=spark)
    expected = spark.read.option("recursiveFileLookup", "true").parquet(lake)
    assert expected.columns == ["id"]
    for source in sources:
        frame = spark.read.format(source).option("recursiveFileLookup", "true").load(lake)
        assert frame.schema == expected.schema, source
        assert _rows(frame.where("id = 3")) == _rows(expected.where("id = 3")), source


@pytest.mark.parametrize("root_file", ["a.parquet", "z.parquet"])
def test_a_file_in_the_root_of_a_partitioned_lake_is_not_read(spark, tmp_path, sources, root_file):
    """Spark's partition discovery reads no file in the root once others sit in partition
    directories. lakeseek read it, with NULL partition values, and took the partition columns
    from the first file: with a root file named a.parquet the lake had no column p."""
    partitioned = {
        "p=1/f.parquet": pa.table({"id": pa.array([1], pa.int64()), "s": ["a"]}),
        "p=2/f.parquet": pa.table({"id": pa.array([2], pa.int64()), "s": ["b"]}),
    }
    root = {root_file: pa.table({"id": pa.array([100], pa.int64()), "s": ["root"]})}
    later = _write(tmp_path / "later", partitioned)
    held = lakeseek.create_index(later, ["id"], engine="local")
    _write(later, root)
    first = _write(tmp_path / "first", {**partitioned, **root})
    lakeseek.create_index(first, ["id"], engine="local")
    for lake in (later, first):
        oracle = spark.read.parquet(lake)
        assert oracle.columns == ["id", "s", "p"]
        for where in ("id >= 0", "id = 100", "p IS NULL", "s = 'root'"):
            _check(spark, lake, where, oracle, sources)
    assert held.read("id >= 0").column("id").to_pylist() == [1, 2]


def test_a_partition_of_empty_files_makes_a_lake_partitioned(tmp_path):
    """Spark's partition discovery counts the directory of a 0-byte file (which its readers skip)."""
    lake = _write(tmp_path / "lake", {"root.parquet": pa.table({"id": pa.array([100], pa.int64())})})
    held = lakeseek.create_index(lake, ["id"], engine="local")
    os.makedirs(f"{lake}/p=1")
    open(f"{lake}/p=1/part-0.parquet", "wb").close()
    assert held.read("id >= 0").num_rows == 0


def test_a_full_refresh_takes_the_schema_of_the_files_now(spark, tmp_path, sources):
    """Columns and wider types only removed files held stayed in the lake's schema for good:
    `gone` read as NULL where Spark has no such column, a date column stayed a timestamp
    (`d < '2024-01-05 12:00:00'` kept a row Spark does not), and a column a new file holds
    as text made every query and every refresh, the full one included, fail."""
    day = dt.date(2024, 1, 5)
    lake = _write(
        tmp_path / "lake",
        {
            "a.parquet": pa.table(
                {
                    "id": pa.array([1], pa.int64()),
                    "d": [dt.datetime(2024, 1, 5, 12)],
                    "gone": [7],
                    "x": pa.array([5], pa.int32()),
                }
            ),
            "b.parquet": pa.table({"id": pa.array([2, 3], pa.int64()), "d": [day, dt.date(2024, 1, 6)]}),
        },
    )
    lakeseek.create_index(lake, ["id", "d"], engine="local")
    os.remove(f"{lake}/a.parquet")
    _write(lake, {"c.parquet": pa.table({"id": pa.array([4], pa.int64()), "x": ["s"]})})
    index = lakeseek.refresh_index(lake, "full", engine="local")
    oracle = spark.read.option("mergeSchema", "true").parquet(lake)
    assert spark_schema(index) == oracle.schema
    for where in ("d < '2024-01-05 12:00:00'", "x = 's'", "id >= 0"):
        _check(spark, lake, where, oracle, sources, options={"mergeSchema": "true"})
    with pytest.raises(lakeseek.UnknownColumnError):
        index.read("gone IS NULL")


def test_nested_columns_merge_as_spark_merges_them(spark, tmp_path):
    """A struct that gained a field, a list against a large_list, a string against a
    large_string inside a struct: Spark's mergeSchema reads them, and lakeseek refused the
    lake. A struct field in another case Spark merges too, but Arrow reads a field by its exact
    name: refused, never read as NULL (and not said to be unreadable by Spark)."""
    a_int, a_str = pa.struct([("a", pa.int32())]), pa.struct([("a", pa.string())])
    cases = {
        "field_added": (
            pa.array([{"a": 1}], a_int),
            pa.array([{"a": 2, "c": "x"}], pa.struct([*a_int, pa.field("c", pa.string())])),
        ),
        "large_list": (pa.array([[1]], pa.list_(pa.int32())), pa.array([[2, 3]], pa.large_list(pa.int32()))),
        "large_string": (pa.array([{"a": "1"}], a_str), pa.array([{"a": "2"}], pa.struct([("a", pa.large_string())]))),
        "other_case": (pa.array([{"a": 1}], a_int), pa.array([{"A": 2}], pa.struct([("A", pa.int32())]))),
    }
    for name, (old, new) in cases.items():
        lake = _write(tmp_path / name, {"a.parquet": pa.table({"id": pa.array([1], pa.int64()), "x": old})})
        lakeseek.create_index(lake, ["id"], engine="local")
        _write(lake, {"b.parquet": pa.table({"id": pa.array([2], pa.int64()), "x": new})})
        if name == "other_case":
            with pytest.raises(lakeseek.IncompatibleSchemaError, match="differ from theirs in case alone"):
                lakeseek.open_index(lake).read("id >= 1")
            continue
        oracle = spark.read.option("mergeSchema", "true").parquet(lake).collect()
        expected = sorted((row["id"], row.asDict(recursive=True)["x"]) for row in oracle)
        for index in (lakeseek.open_index(lake), lakeseek.refresh_index(lake, "incremental", engine="local")):
            assert sorted((row["id"], row["x"]) for row in index.read("id >= 1").to_pylist()) == expected, name


# -- 3. column names in another case ---------------------------------------------------------------
def test_names_that_differ_in_case_are_one_column(spark, tmp_path, sources):
    lake = _write(
        tmp_path / "lake",
        {
            "a.parquet": pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}),
            "b.parquet": pa.table({"ID": pa.array([3, 4], pa.int64()), "v": ["c", "d"]}),
        },
    )
    index = lakeseek.create_index(lake, ["id"], spark=spark)
    _write(lake, {"c.parquet": pa.table({"Id": pa.array([5], pa.int64()), "Record_ID": [9], "V": ["e"]})})
    oracle = spark.read.option("mergeSchema", "true").parquet(lake)
    assert oracle.columns == ["id", "v", "Record_ID"]
    index = lakeseek.open_index(lake)
    for where in ("id = 3", "id > 1", "id = 5", "v = 'e'", "record_id = 9"):
        _check(spark, lake, where, oracle, sources, options={"mergeSchema": "true"})
    assert _names(index.files("id = 3")) == ["b.parquet", "c.parquet"]
    found = index.locate([3, 5], column="id").to_pylist()
    assert [(r["key"], os.path.basename(r["file"])) for r in found] == [(3, "b.parquet"), (5, "c.parquet")]
    index = lakeseek.refresh_index(lake, "incremental", engine="local")
    assert _names(index.files("id = 5")) == ["c.parquet"]
    for where in ("id = 3", "id = 5", "v = 'e'"):
        _check(spark, lake, where, oracle, sources, options={"mergeSchema": "true"})


@pytest.mark.parametrize("mode", ["incremental", "quick"])
def test_a_spelling_first_seen_in_a_new_file_survives_a_refresh(spark, tmp_path, sources, mode):
    """A refresh compared the schema it merged with the root's by Arrow's ``==``, which leaves
    metadata out: a column's other spelling, seen first in a new file (``K`` for ``k``), was not
    recorded, and the file's ``K`` was then read as NULL: ``k = 10`` lost its rows."""
    lake = _write(tmp_path / "lake", {"a.parquet": pa.table({"id": pa.array([1], pa.int64()), "k": [10]})})
    lakeseek.create_index(lake, ["k"], engine="local")
    _write(lake, {"b.parquet": pa.table({"id": pa.array([2], pa.int64()), "K": [10]})})
    lakeseek.refresh_index(lake, mode, engine="local")
    oracle = spark.read.option("mergeSchema", "true").parquet(lake)
    for where in ("k = 10", "k IS NULL", "id = 2"):
        _check(spark, lake, where, oracle, sources, options={"mergeSchema": "true"})


def test_case_sensitive_names_stay_apart(spark, tmp_path):
    lake = _write(
        tmp_path / "lake",
        {"a.parquet": pa.table({"a": pa.array([1, 2], pa.int64()), "A": pa.array([10, 20], pa.int64())})},
    )
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        index = lakeseek.create_index(lake, ["a", "A"], spark=spark)
        assert index.read("a = 1").to_pylist() == [{"a": 1, "A": 10}]
        assert index.read("A = 10").to_pylist() == [{"a": 1, "A": 10}]
        assert index.read("a = 10").num_rows == 0
        assert index.files("a = 10") == []
        assert index.locate([1, 10], column="a").column("key").to_pylist() == [1]
        assert index.locate([1, 10], column="A").column("key").to_pylist() == [10]
        for where in ("a = 1", "A = 20", "a = 10"):
            assert _rows(to_spark(index, spark, where)) == _rows(spark.read.parquet(lake).where(where))
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


# -- Spark's partition type inference, ported ------------------------------------------------------
PARTITION_VALUES = [
    *("1", "-1", "+1", "01", "-00", "2147483648", "-2147483649", "9223372036854775808", "20240101", "١٢"),
    *("12345678901234567890123456789012345678", "123456789012345678901234567890123456789"),
    *("1.", "1.0", "2.5", ".5", "1e3", "1e+3", "1E-3", "-1.e2", "1.0e2", "0e0", "1.5e1", "1e400"),
    *("NaN", "Infinity", "-Infinity", "1.5f", "1d", " 1", "0x1p3", "1_000", "true", "abc"),
    *("2024-01-01", "0001-01-01", "2024-1-1", "2024-01-1", "2024-02-30", "2024-13-01", "2024-01-01x"),
    *("2024-01-01T10:00:00", "99999-01-01", "2024-01-01 10%3A00%3A00", "2024-01-01%2010%3A00%3A00"),
    *("2024-01-01 10%3A00%3A00.5", "2024-01-01 10%3A00%3A00.123456", "2024-01-01 10%3A00%3A00."),
    *("2024-01-01 10%3A00", "2024-01-01 1%3A00%3A00", "2024-01-01 24%3A00%3A00", "2024-01-01 10%3A00%3A60"),
    *("2024-01-01 10%3A00%3A00Z", "__HIVE_DEFAULT_PARTITION__"),
]
PARTITION_PAIRS = [
    ("1", "2.5"),
    ("1", "2147483648"),
    ("2147483648", "2.5"),
    ("1", "9223372036854775808"),
    ("2147483648", "9223372036854775808"),
    ("9223372036854775808", "2.5"),
    ("1e3", "1"),
    ("1.", "12345678901234567890123"),
    ("2024-01-01", "2024-01-01 10%3A00%3A00"),
    ("1", "2024-01-01"),
    ("1", "__HIVE_DEFAULT_PARTITION__"),
    ("__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__"),
    ("1", "abc"),
    ("2.5", "NaN"),
]


@pytest.mark.parametrize("pairs", [False, True], ids=["values", "pairs"])
def test_partition_types_are_inferred_as_spark_infers_them(spark, tmp_path, pairs):
    """One directory level per value (or pair of values): Spark infers each level's type alone."""
    from lakeseek.lake.schemas import spark_type
    from lakeseek.sources.partitions import infer_partition_types

    cases = PARTITION_PAIRS if pairs else [(value,) for value in PARTITION_VALUES]
    columns = [f"c{i}" for i in range(len(cases))]
    paths = [
        "/".join(f"{column}={case[n]}" for column, case in zip(columns, cases, strict=True)) + f"/part-{n}.parquet"
        for n in range(len(cases[0]))
    ]
    _write(tmp_path / "lake", {path: pa.table({"x": [1]}) for path in paths})
    expected = spark.read.parquet(str(tmp_path / "lake")).schema
    inferred = infer_partition_types(paths, columns)
    for column, case in zip(columns, cases, strict=True):
        assert spark_type(inferred[column]) == expected[column].dataType.jsonValue(), case
