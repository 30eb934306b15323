"""Edge inputs compared with Spark: dictionary-encoded columns, partition values Spark reads
its own way, session time zones, 0-byte and damaged files, Parquet on DataSource V2, table
DDL and lake paths holding glob characters. Each case checks what ``spark.read.parquet``
gives (measured with Spark 4), never an expectation written by hand."""

from __future__ import annotations

import datetime as dt
import math
import os
import shutil
from decimal import Decimal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import lakeseek
import lakeseek.spark
from lakeseek.cli.main import main
from lakeseek.expressions.sql import to_spark_sql
from lakeseek.io.hadoop import literal_path
from lakeseek.lake.files import reading_data_files
from lakeseek.spark import spark_schema, to_spark

pytestmark = pytest.mark.spark
TZ = "spark.sql.session.timeZone"


def _value(value: object) -> object:
    """A value as comparable across pyarrow and Spark's collect (NaN, time zones, Decimal scale)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        # Spark's collect gives an instant as the naive local time of this process.
        return value.astimezone().replace(tzinfo=None)
    if isinstance(value, Decimal):
        return value.normalize()
    return value


def _rows(rows: list[dict]) -> list[str]:
    return sorted(repr(sorted((k, _value(v)) for k, v in row.items())) for row in rows)


def _spark_rows(frame) -> list[str]:
    return _rows([row.asDict() for row in frame.collect()])


def _arrow_rows(table: pa.Table) -> list[str]:
    return _rows(table.to_pylist())


def _write(path: str, table: pa.Table) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path)


def _sql_literal(value: object) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.strftime('%Y-%m-%d %H:%M:%S')}'"
    return str(value)


# -- 1. dictionary-encoded string columns ---------------------------------------------------------
@pytest.fixture(scope="module")
def dictionary_lake(tmp_path_factory, spark):
    root = str(tmp_path_factory.mktemp("dictionary") / "lake")
    for number, names in enumerate([["apple", "banana", None, "apple"], ["cherry", "avocado", "banana", "b%c"]]):
        frame = pd.DataFrame({"id": range(number * 10, number * 10 + 4), "s": pd.Categorical(names)})
        table = pa.Table.from_pandas(frame, preserve_index=False)
        _write(f"{root}/part-{number}.parquet", table)
    assert pa.types.is_dictionary(pq.read_schema(f"{root}/part-0.parquet").field("s").type)
    lakeseek.create_index(root, ["s", "id"], spark=spark)
    return root


@pytest.mark.parametrize(
    "where",
    [
        "s LIKE 'a%'",
        "s LIKE '%an%'",
        "s LIKE 'b\\%c'",
        "s NOT LIKE 'a%'",
        "s = 'banana'",
        "s IN ('apple', 'cherry')",
        "s IS NULL",
        "s > 'b'",
        "s = 'apple' OR id = 12",
    ],
)
def test_dictionary_string_column_is_indexed_and_queried_as_spark(spark, dictionary_lake, where):
    index = lakeseek.open_index(dictionary_lake)
    assert set(index.columns) == {"s", "id"}
    expected = _spark_rows(spark.read.parquet(dictionary_lake).where(to_spark_sql(where)))
    assert _arrow_rows(index.read(where)) == expected
    assert _arrow_rows(index.scan(where)) == expected


# -- 2. partition values as Spark reads them -------------------------------------------------------
PARTITIONS = [
    # a: int ("+5", "007", "-0"); b: decimal(20,0); c: decimal (1e3 widened with ints);
    # d: string, unescaped byte by byte as Spark does ("%C3%A9" is 'Ã©', not 'é');
    # e: timestamp ("%3A" is ':'); f: double (not indexable: read only).
    "a=+5/b=99999999999999999999/c=1e3/d=%C3%A9/e=2024-01-01 10%3A00%3A00/f=1.50",
    "a=007/b=1/c=2/d=é/e=2024-01-02 00%3A00%3A00/f=1d",
    "a=-0/b=__HIVE_DEFAULT_PARTITION__/c=3/d=a%2Fb/e=__HIVE_DEFAULT_PARTITION__/f=NaN",
]
PARTITION_COLUMNS = ["a", "b", "c", "d", "e"]


@pytest.fixture(scope="module")
def partition_lake(tmp_path_factory, spark):
    root = str(tmp_path_factory.mktemp("partitions") / "lake")
    for number, directory in enumerate(PARTITIONS):
        _write(f"{root}/{directory}/part-0.parquet", pa.table({"x": [number * 2, number * 2 + 1]}))
    lakeseek.create_index(root, ["x", *PARTITION_COLUMNS], spark=spark)
    return root


def test_partition_types_and_values_are_spark_s(spark, partition_lake):
    parquet = spark.read.parquet(partition_lake)
    index = lakeseek.open_index(partition_lake)
    assert spark_schema(index) == parquet.schema
    types = {field.name: field.dataType.simpleString() for field in parquet.schema.fields}
    assert types == {
        "x": "bigint",
        "a": "int",
        "b": "decimal(20,0)",
        "c": "decimal(10,0)",
        "d": "string",
        "e": "timestamp",
        "f": "double",
    }
    expected = _spark_rows(parquet)
    assert _arrow_rows(index.read("TRUE")) == expected
    assert _arrow_rows(index.scan("TRUE")) == expected
    assert {row.d for row in parquet.collect()} == {"Ã©", "é", "a/b"}


@pytest.mark.parametrize("column", PARTITION_COLUMNS)
def test_partition_predicates_agree_with_spark(spark, partition_lake, column):
    parquet = spark.read.parquet(partition_lake)
    index = lakeseek.open_index(partition_lake)
    for row in parquet.select(column, "x").collect():
        value = row[column]
        where = f"{column} IS NULL" if value is None else f"{column} = {_sql_literal(value)}"
        expected = _spark_rows(parquet.where(to_spark_sql(where)))
        assert expected, where
        assert _arrow_rows(index.read(where)) == expected, where
        assert _spark_rows(to_spark(index, spark, where)) == expected, where
        holding = {os.path.relpath(path, partition_lake) for path in index.files(where)}
        wanted = {PARTITIONS[row["x"] // 2] + "/part-0.parquet"}
        assert wanted <= holding, where
        assert index.plan(where).index_used, where


def test_partition_column_of_nulls_only(spark, tmp_path):
    """Every directory __HIVE_DEFAULT_PARTITION__: Spark types the column NULL (void)."""
    root = str(tmp_path / "lake")
    _write(f"{root}/p=__HIVE_DEFAULT_PARTITION__/part-0.parquet", pa.table({"x": [1, 2]}))
    index = lakeseek.create_index(root, ["x"], spark=spark)
    parquet = spark.read.parquet(root)
    assert spark_schema(index) == parquet.schema
    _check_void_predicates(spark, index, parquet)
    with pytest.raises(lakeseek.UnsupportedColumnError):
        lakeseek.create_index(root, ["p"], spark=spark, name="nulls")


VOID_PREDICATES = (
    *("TRUE", "p IS NULL", "x = 2", "p = 'a'", "p <> 'a'", "NOT (p = 'a')", "p IN ('a', 'b')", "p LIKE 'a%'"),
    *("p = 3", "p < DATE '2020-01-01'", "p <=> 'a'", "NOT (p <=> 'a')", "p = p", "x = 1 OR p = 'a'"),
)


def _check_void_predicates(spark, index, parquet) -> None:
    for where in VOID_PREDICATES:
        expected = _spark_rows(parquet.where(where))
        assert _arrow_rows(index.read(where)) == expected, where
        assert _spark_rows(to_spark(index, spark, where)) == expected, where


def test_partition_column_that_became_void(spark, tmp_path):
    """The partition with a value leaves the lake after indexing: the column is void now,
    and every comparison with it is NULL, as in Spark; indexing it waits for a value."""
    root = str(tmp_path / "lake")
    _write(f"{root}/p=a/part-0.parquet", pa.table({"x": [1, 2]}))
    _write(f"{root}/p=__HIVE_DEFAULT_PARTITION__/part-0.parquet", pa.table({"x": [3, 4]}))
    lakeseek.create_index(root, ["x"], spark=spark)
    os.remove(f"{root}/p=a/part-0.parquet")
    _check_void_predicates(spark, lakeseek.open_index(root), spark.read.parquet(root))


@pytest.mark.parametrize("columns", [["x"], ["x", "p"]], ids=["p not indexed", "p indexed"])
@pytest.mark.parametrize("mode", ["quick", "incremental"])
@pytest.mark.parametrize(
    ("before", "change", "where"),
    [
        # p=x leaves: Spark reads p as INT again ('007' is 7).
        (["007", "x"], lambda root: shutil.rmtree(f"{root}/p=x"), "p = '7'"),
        # A timestamp joins the dates: Spark reads p as TIMESTAMP.
        (
            ["2024-01-01", "2024-01-02"],
            lambda root: _write(f"{root}/p=2024-01-02 03%3A04%3A05/part-0.parquet", pa.table({"x": [9]})),
            "p >= TIMESTAMP '2024-01-02 00:00:01'",
        ),
    ],
    ids=["a directory left", "a timestamp joined dates"],
)
def test_a_refresh_that_changes_the_partition_types_spark_infers_records_them(
    spark, tmp_path, mode, before, change, where, columns
):
    """A refresh that removed or recorded a directory kept the partition column's old type in
    the root while its lineage changed; queries then took the recorded type for one the user
    chose and read `p` as the string '007', or a timestamp as its date: rows went missing."""
    root = str(tmp_path / "lake")
    for number, value in enumerate(before):
        _write(f"{root}/p={value}/part-0.parquet", pa.table({"x": [number, number + 10]}))
    lakeseek.create_index(root, columns, engine="local")
    change(root)
    expected = sorted(row["x"] for row in spark.read.parquet(root).where(where).collect())
    for then in (mode, "incremental"):  # the refresh, then another with nothing new (it kept a quick one's type)
        lakeseek.refresh_index(root, then, engine="local")
        assert sorted(lakeseek.open_index(root).read(where).column("x").to_pylist()) == expected, then


def test_names_that_are_not_utf8_are_left_out_as_spark_leaves_them(spark, tmp_path):
    """A directory or file named in other bytes: Spark's listing leaves it out; lakeseek
    raised a bare UnicodeEncodeError (the CLI blamed its arguments)."""
    root = str(tmp_path / "lake")
    _write(f"{root}/p=1/part-0.parquet", pa.table({"x": [1]}))
    _write(f"{root}/p=2/part-0.parquet", pa.table({"x": [2]}))
    os.rename(f"{root}/p=2/part-0.parquet", os.fsencode(root) + b"/p=2/part-\xfe.parquet")
    _write(f"{root}/p=3/part-0.parquet", pa.table({"x": [3]}))
    os.rename(f"{root}/p=3", os.fsencode(root) + b"/p=\xff")
    index = lakeseek.create_index(root, ["x"], engine="local")
    expected = spark.read.parquet(root)
    assert [path.removeprefix("file://") for path in expected.inputFiles()] == index.files("x > 0")
    assert index.read("x > 0").to_pylist() == [row.asDict() for row in expected.collect()]


# -- 3. timestamp partition values in the session time zone ----------------------------------------
@pytest.fixture(scope="module")
def timestamp_lake(tmp_path_factory, spark):
    root = str(tmp_path_factory.mktemp("zoned") / "lake")
    for number, moment in enumerate(["2024-01-01 10%3A00%3A00", "2024-07-01 10%3A00%3A00", "2024-03-10 02%3A30%3A00"]):
        _write(f"{root}/t={moment}/part-0.parquet", pa.table({"x": [number]}))
    lakeseek.create_index(root, ["x"], spark=spark)
    return root


@pytest.mark.parametrize("zone", ["America/Los_Angeles", "Asia/Kolkata", "+05:00"])
def test_python_data_source_reads_partition_timestamps_in_the_session_time_zone(spark, timestamp_lake, zone):
    assert lakeseek.spark.register(spark)
    before = spark.conf.get(TZ)
    spark.conf.set(TZ, zone)
    try:
        parquet = spark.read.parquet(timestamp_lake)
        expected = _spark_rows(parquet)
        for source in ("lakeseek_python", "lakeseek"):
            frame = spark.read.format(source).load(timestamp_lake)
            assert _spark_rows(frame) == expected, source
            where = "t = TIMESTAMP '2024-01-01 10:00:00'"
            assert _spark_rows(frame.where(where)) == _spark_rows(parquet.where(where)), source
        spark.conf.unset(TZ)  # the JVM's default zone: the data source must follow it too
        assert _spark_rows(spark.read.format("lakeseek_python").load(timestamp_lake)) == _spark_rows(
            spark.read.parquet(timestamp_lake)
        )
    finally:
        spark.conf.set(TZ, before)


def test_index_read_takes_partition_timestamps_as_utc(spark, timestamp_lake):
    assert spark.conf.get(TZ) in ("UTC", "Etc/UTC")
    index = lakeseek.open_index(timestamp_lake)
    assert _arrow_rows(index.read("TRUE")) == _spark_rows(spark.read.parquet(timestamp_lake))
    where = "t = TIMESTAMP '2024-03-10 02:30:00'"
    assert _arrow_rows(index.read(where)) == _spark_rows(spark.read.parquet(timestamp_lake).where(where))


# -- 4. 0-byte, damaged and vanishing files; fixed-size binary literals -----------------------------
def _small_lake(root: str) -> None:
    _write(f"{root}/p=1/part-0.parquet", pa.table({"id": [1, 2], "s": ["a", "b"]}))
    _write(f"{root}/p=2/part-0.parquet", pa.table({"id": [3, 4], "s": ["c", "d"]}))


def test_zero_byte_files_are_skipped_everywhere(spark, tmp_path):
    root = str(tmp_path / "lake")
    _small_lake(root)
    open(f"{root}/p=1/empty.parquet", "wb").close()
    open(f"{root}/zero.txt", "wb").close()
    index = lakeseek.create_index(root, ["id", "s"], spark=spark)
    assert index.status().lake_files == 2 and index.status().is_fresh
    open(f"{root}/p=2/later.parquet", "wb").close()  # after indexing: not a new file either
    index = lakeseek.open_index(root)
    assert index.status().is_fresh
    parquet = spark.read.parquet(root)
    for where in ("TRUE", "id = 3", "s = 'a' OR p = 2"):
        expected = _spark_rows(parquet.where(to_spark_sql(where)))
        assert _arrow_rows(index.read(where)) == expected
        assert _arrow_rows(index.scan(where)) == expected
        assert not any(os.path.getsize(path) == 0 for path in index.files(where))
        assert _spark_rows(spark.read.format("lakeseek_python").load(root).where(where)) == expected
    refreshed = lakeseek.refresh_index(root, "incremental", engine="local")
    assert refreshed.status().is_fresh


def _one_line_error_naming(error: BaseException, name: str) -> None:
    message = str(error)
    assert len(message.strip().splitlines()) == 1, message
    assert name in message, message


def test_damaged_file_is_an_error_naming_it(spark, tmp_path):
    root = str(tmp_path / "lake")
    _small_lake(root)
    lakeseek.create_index(root, ["id"], spark=spark)
    with open(f"{root}/p=2/junk.parquet", "wb") as junk:
        junk.write(b"this is not parquet, not at all")
    with pytest.raises(Exception, match="FAILED_READ_FILE"):  # Spark fails on it too
        spark.read.parquet(root).collect()
    index = lakeseek.open_index(root)
    for query in (index.read, index.scan):
        with pytest.raises(lakeseek.LakeseekError) as raised:
            query("id = 3")
        _one_line_error_naming(raised.value, "p=2/junk.parquet")
    for engine in ("local", "spark"):
        with pytest.raises(lakeseek.LakeseekError) as raised:
            lakeseek.refresh_index(root, "incremental", spark=spark, engine=engine)
        _one_line_error_naming(raised.value, "p=2/junk.parquet")
    result = CliRunner().invoke(main, ["query", root, "--where", "id = 3"], catch_exceptions=False)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lakeseek: error: ") and "p=2/junk.parquet" in lines[0], lines


def test_file_removed_from_a_kept_listing_is_listed_again_or_named(spark, tmp_path, monkeypatch):
    """A file of the listing a handle keeps, removed since: the read lists the lake again and
    answers it as it is (it failed for good before); removed under every run again, the error
    is one line naming it."""
    root = str(tmp_path / "lake")
    _small_lake(root)
    lakeseek.create_index(root, ["id"], spark=spark)
    index = lakeseek.open_index(root, lake_listing="once")
    assert len(index.files("TRUE")) == 2  # the listing this index keeps
    os.remove(f"{root}/p=2/part-0.parquet")
    for query in (index.read, index.scan):
        assert sorted(query("TRUE").column("id").to_pylist()) == [1, 2]
    _write(f"{root}/p=2/part-0.parquet", pa.table({"id": [3, 4], "s": ["c", "d"]}))
    index = lakeseek.open_index(root)
    read_by_path = type(index.lake).dataset

    def removed_first(self, paths, *args, **kwargs):
        found = read_by_path(self, paths, *args, **kwargs)
        victim = f"{root}/p=2/part-0.parquet"
        if os.path.exists(victim):  # gone before each read, back before the next listing
            os.replace(victim, f"{root}/p=2/.kept")
        return found

    def listed_again(self, *args, **kwargs):
        if os.path.exists(f"{root}/p=2/.kept"):
            os.replace(f"{root}/p=2/.kept", f"{root}/p=2/part-0.parquet")
        return snapshot(self, *args, **kwargs)

    snapshot = type(index.lake).snapshot
    monkeypatch.setattr(type(index.lake), "dataset", removed_first)
    monkeypatch.setattr(type(index.lake), "snapshot", listed_again)
    for query in (index.read, index.scan):
        with pytest.raises(lakeseek.DataFileChangedError) as raised:
            query("TRUE")
        _one_line_error_naming(raised.value, "p=2/part-0.parquet")


@pytest.mark.parametrize("message", ["Object at location {key} not found: NoSuchKey", "Not found"])
def test_a_file_not_found_then_back_is_a_change_to_run_again(tmp_path, message):
    """A file deleted and put back while a query reads it (on S3, the same bytes within a
    second keep the file's stamp): the read's not-found error, whether it names the key or
    not, is a change to run again, never a raw error or a damaged file."""
    root = str(tmp_path / "lake")
    _small_lake(root)
    lake = lakeseek.open_lake(root)
    files = ["p=1/part-0.parquet", "p=2/part-0.parquet"]
    with pytest.raises(lakeseek.DataFileChangedError, match=r"while it was read"), reading_data_files(lake, files):
        raise FileNotFoundError(message.format(key=lake.path(files[-1])))


@pytest.fixture(scope="module")
def fixed_size_lake(tmp_path_factory, spark):
    root = str(tmp_path_factory.mktemp("fixed") / "lake")
    table = pa.table({"id": [1, 2, 3], "h": pa.array([b"\x01\x02\x03\x04", b"abcd", None], pa.binary(4))})
    _write(f"{root}/part-0.parquet", table)
    lakeseek.create_index(root, ["h"], spark=spark)
    return root


@pytest.mark.parametrize(
    "where",
    [
        "h = X'0102'",
        "h = X'01020304'",
        "h IN (X'01', X'61626364')",
        "NOT h IN (X'01', X'02')",
        "h <=> X'0102030405'",
        "h < X'0102'",
        "h > X'0102030405'",
        "h = 'ab'",
    ],
)
def test_fixed_size_binary_literals_of_any_length_compare(spark, fixed_size_lake, where):
    index = lakeseek.open_index(fixed_size_lake)
    expected = _spark_rows(spark.read.parquet(fixed_size_lake).where(where))
    assert _arrow_rows(index.read(where)) == expected
    assert _arrow_rows(index.scan(where)) == expected
    found = index.locate([b"\x01", b"abcd", b"abcde"], "h")  # keys of other lengths pair with nothing
    assert found.column("key").to_pylist() == [b"abcd"]


@pytest.fixture(scope="module")
def statistics_lake(tmp_path_factory, spark):
    """Files whose row-group statistics pyarrow cannot simplify a filter with: a zoned timestamp
    in another unit and zone than the lake's, and 64-bit integers beyond 2^53 (Spark reads
    uint64 as decimal(20, 0)) compared with floating-point numbers."""
    root = str(tmp_path_factory.mktemp("statistics") / "lake")
    _write(
        f"{root}/a.parquet",
        pa.table(
            {
                "id": [1, 2, 3],
                "t": pa.array([0, 1000, None], pa.timestamp("us", tz="UTC")),
                "u": pa.array([2**64 - 1, 5, None], pa.uint64()),
                "l": pa.array([-(2**63), 5, None], pa.int64()),
            }
        ),
    )
    _write(
        f"{root}/b.parquet",
        pa.table(
            {
                "id": [4, 5, 6],
                "t": pa.array([0, 1, 5], pa.timestamp("ms", tz="America/New_York")),
                "u": pa.array([2**63, 2**53 + 1, 0], pa.uint64()),
                "l": pa.array([2**63 - 1, 2**53 + 1, 0], pa.int64()),
            }
        ),
    )
    lakeseek.create_index(root, ["t", "u"], kind="skipping", engine="local")
    return root


@pytest.mark.parametrize(
    "where",
    [
        "t = TIMESTAMP '1970-01-01 00:00:00.001'",
        "t > '1970-01-01 00:00:00'",
        "t IN ('1970-01-01 00:00:00.000001+00:00', '1970-01-01 00:00:00.005+00:00')",
        "t <= '1969-12-31 19:00:00.001-05:00' OR u = 5",
        "u = 1.8446744073709552e19",
        "u > 9.0e15",
        "u < 2.0 OR u >= 9223372036854775808",
        "u IN (5, 9007199254740993.0)",
        "l = -9.223372036854775808E18",
        "l > 9.0E15 OR l < -1.0E0",
        "l IN (5.0E0, 9.223372036854775807E18)",
    ],
)
def test_filters_over_statistics_pyarrow_cannot_compare(spark, statistics_lake, where):
    expected = sorted(row.id for row in spark.read.parquet(statistics_lake).where(where).select("id").collect())
    index = lakeseek.open_index(statistics_lake)
    assert sorted(index.read(where, ["id"]).column("id").to_pylist()) == expected
    assert sorted(index.scan(where, ["id"]).column("id").to_pylist()) == expected
    assert lakeseek.spark.register(spark)
    frame = spark.read.format("lakeseek_python").load(statistics_lake).where(where).select("id")
    assert sorted(row.id for row in frame.collect()) == expected


@pytest.fixture(scope="module")
def nan_statistics_lake(tmp_path_factory):
    """Row groups whose Parquet statistics leave their NaN out: pyarrow takes a min equal to
    the max as the column's only value, and would skip the group for ``b > 90``."""
    root = str(tmp_path_factory.mktemp("nan_statistics") / "lake")
    nan = float("nan")
    b = [nan, 45.0, 1.0, nan, 100.0, 3.0, nan, nan, None, nan, 45.0, 45.0]
    table = pa.table({"id": list(range(len(b))), "b": pa.array(b, pa.float64())})
    os.makedirs(root)
    pq.write_table(table, f"{root}/part-0.parquet", row_group_size=2)
    lakeseek.create_index(root, ["id"], engine="local")
    return root


@pytest.mark.parametrize(
    "where",
    [
        "b > 90",
        "b >= 45",
        "b <> 45",
        "NOT (b < 50)",
        "b = CAST('NaN' AS DOUBLE)",
        "b IN (CAST('NaN' AS DOUBLE), 1.0)",
        "b > 90 OR id = 1",
        "b > 90 AND id > 1",
        "b < 50 AND b > 2",
    ],
)
def test_nan_rows_of_row_groups_whose_statistics_leave_them_out(spark, nan_statistics_lake, where):
    rows = pq.read_table(f"{nan_statistics_lake}/part-0.parquet")
    frame = spark.createDataFrame(rows.to_pylist(), "id long, b double")  # NaN kept (pandas would make it NULL)
    expected = sorted(row.id for row in frame.where(where).select("id").collect())
    index = lakeseek.open_index(nan_statistics_lake)
    assert sorted(index.read(where, ["id"]).column("id").to_pylist()) == expected
    assert sorted(index.scan(where, ["id"]).column("id").to_pylist()) == expected
    assert lakeseek.spark.register(spark)
    frame = spark.read.format("lakeseek_python").load(nan_statistics_lake).where(where).select("id")
    assert sorted(row.id for row in frame.collect()) == expected


def test_integer_literal_against_a_decimal_beyond_spark_s_precision(tmp_path):
    """Spark reads no decimal of more than 38 digits, so here the rows are named by hand."""
    root = str(tmp_path / "lake")
    values = [Decimal("12.00"), Decimal("12.50"), Decimal("1E+37"), None]
    _write(f"{root}/part-0.parquet", pa.table({"id": [1, 2, 3, 4], "d": pa.array(values, pa.decimal256(40, 2))}))
    lakeseek.create_index(root, ["d"], kind="skipping", engine="local")
    index = lakeseek.open_index(root)
    assert index.read("d = 12", ["id"]).column("id").to_pylist() == [1]
    assert sorted(index.read("d > 12", ["id"]).column("id").to_pylist()) == [2, 3]
    assert index.read("d IN (12, 13)", ["id"]).column("id").to_pylist() == [1]


def test_decimal_columns_whose_common_type_passes_38_digits(tmp_path):
    """Spark keeps the integer digits and rounds the scale (half up): 9999999.99 < 5 is false,
    not true as a cast that wraps around says; an integer column with one of 37 decimals compares."""
    root = str(tmp_path / "lake")
    narrow = [Decimal("9999999.99"), Decimal("127.00"), Decimal("-99.99"), Decimal("0.50")]
    fine = [Decimal("5"), Decimal("0.3"), Decimal("1"), Decimal("0.7")]
    table = pa.table(
        {
            "id": [0, 1, 2, 3],
            "narrow": pa.array(narrow, pa.decimal128(9, 2)),
            "fine": pa.array(fine, pa.decimal128(38, 37)),
            "small": pa.array([0, 1, 1, -1], pa.int8()),
        }
    )
    _write(f"{root}/part-0.parquet", table)
    index = lakeseek.create_index(root, ["id"], engine="local")
    for where, expected in [
        ("narrow < fine", [2, 3]),
        ("narrow >= fine", [0, 1]),
        ("small < fine", [0, 3]),
        ("small = fine", [2]),
    ]:
        assert sorted(index.read(where, ["id"]).column("id").to_pylist()) == expected, where


# -- 5. format "lakeseek" when Parquet runs on DataSource V2 --------------------------------------
def test_jvm_source_works_when_parquet_is_on_datasource_v2(spark, partition_lake):
    assert lakeseek.spark.register(spark)
    key = "spark.sql.sources.useV1SourceList"
    before = spark.conf.get(key)
    spark.conf.set(key, "")
    try:
        parquet = spark.read.parquet(partition_lake)
        for where in ("x = 3", "x IN (0, 5)", "d = 'Ã©'", "TRUE"):
            frame = spark.read.format("lakeseek").load(partition_lake).where(where)
            assert _spark_rows(frame) == _spark_rows(parquet.where(where)), where
        assert "IndexedFileIndex" in frame._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.set(key, before)


# -- 6. table DDL and path-as-table ---------------------------------------------------------------
def test_tables_of_a_partitioned_lake(spark, partition_lake):
    assert lakeseek.spark.register(spark)
    parquet = spark.read.parquet(partition_lake)
    columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in parquet.schema.fields)
    try:
        spark.sql(f"CREATE TABLE edge_plain USING lakeseek OPTIONS (path '{partition_lake}')")
        described = spark.sql("DESCRIBE TABLE EXTENDED edge_plain").collect()
        names = [row.col_name for row in described]
        after = names[names.index("# Partition Information") :]
        assert all(name in after for name in ["a", "b", "c", "d", "e", "f"])  # recorded from the lake
        spark.sql(
            f"CREATE TABLE edge_declared ({columns}) USING lakeseek OPTIONS (path '{partition_lake}') "
            "PARTITIONED BY (a, b, c, d, e, f)"
        )
        for table in ("edge_plain", "edge_declared"):
            for where in ("x = 3", "d = 'é'", "TRUE"):
                got = _spark_rows(spark.sql(f"SELECT * FROM {table} WHERE {where}"))
                assert got == _spark_rows(parquet.where(where)), (table, where)
        # Spark refuses PARTITIONED BY without a column list for every format, Parquet too.
        for provider in ("parquet", "lakeseek"):
            with pytest.raises(Exception, match="SPECIFY_PARTITION_IS_NOT_ALLOWED"):
                spark.sql(
                    f"CREATE TABLE edge_bad USING {provider} OPTIONS (path '{partition_lake}') PARTITIONED BY (a)"
                )
    finally:
        for table in ("edge_plain", "edge_declared", "edge_bad"):
            spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_path_as_table_is_for_file_formats_only(spark, partition_lake):
    """``parquet.`path``` works; Spark resolves ``format.`path``` only for a FileFormat class and
    hands a RelationProvider no path, so ``lakeseek.`path``` is refused by Spark (README)."""
    assert lakeseek.spark.register(spark)
    assert spark.sql(f"SELECT * FROM parquet.`{partition_lake}` WHERE x = 3").count() == 1
    with pytest.raises(Exception, match="UNSUPPORTED_DATASOURCE_FOR_DIRECT_QUERY"):
        spark.sql(f"SELECT * FROM lakeseek.`{partition_lake}`").collect()
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW edge_view USING lakeseek OPTIONS (path '{partition_lake}')")
    assert _spark_rows(spark.sql("SELECT * FROM edge_view WHERE x = 3")) == _spark_rows(
        spark.read.parquet(partition_lake).where("x = 3")
    )


# -- 7. lake roots whose names hold glob characters ------------------------------------------------
def test_lake_root_with_glob_characters(spark, tmp_path):
    root = str(tmp_path / "a[1]{b,c}?*" / "lake")
    _small_lake(root)
    decoy = str(tmp_path / "a1bxy" / "lake")  # what the glob would match instead
    _write(f"{decoy}/q=1/part-0.parquet", pa.table({"id": ["3"], "t": ["glob matched"]}))
    index = lakeseek.create_index(root, ["id", "s"], spark=spark)
    parquet = spark.read.parquet(literal_path(f"file://{root}"))
    assert spark_schema(index) == parquet.schema
    for where in ("id = 3", "p = 1", "TRUE"):
        expected = _spark_rows(parquet.where(where))
        assert _arrow_rows(index.read(where)) == expected
        assert _spark_rows(to_spark(index, spark, where)) == expected
        assert lakeseek.spark.register(spark)
        assert _spark_rows(spark.read.format("lakeseek").load(root).where(where)) == expected


def test_like_on_a_dictionary_typed_schema():
    """The row filter itself takes a schema whose string column is dictionary-typed (no regex kernel)."""
    import pyarrow.dataset as ds

    from lakeseek.expressions.arrow import to_arrow
    from lakeseek.expressions.binding import bind
    from lakeseek.expressions.sql import parse_where

    table = pa.table({"s": pa.array(["apple", "banana", None, "avocado"]).dictionary_encode()})
    for where, expected in [("s LIKE 'a%'", ["apple", "avocado"]), ("s NOT LIKE 'a%'", ["banana"])]:
        predicate = bind(parse_where(where), table.schema)
        got = ds.dataset(table).to_table(filter=to_arrow(predicate, table.schema)).column("s").to_pylist()
        assert got == expected, where


def test_a_file_rewritten_in_place_while_read_is_a_clear_error(tmp_path, monkeypatch):
    """The bytes pyarrow read were half of a rewrite; by the time lakeseek looks, the file
    reads whole again: the error still says what happened, in one line."""
    import lakeseek.index as index_module

    root = str(tmp_path / "lake")
    _small_lake(root)
    index = lakeseek.create_index(root, ["id"], engine="local")

    def torn(*args, **kwargs):
        raise pa.ArrowInvalid("Parquet magic bytes not found in footer. Either the file is corrupted or not parquet.")

    monkeypatch.setattr(index_module, "read_matching", torn)
    with pytest.raises(lakeseek.DataFileError, match="changed while it was read"):
        index.read("TRUE")


@pytest.mark.parametrize(
    "misuse",
    [
        lambda index: index.history(since="x"),
        lambda index: index.read(None),
        lambda index: index.files(5),
        lambda index: lakeseek.vacuum_index(index.source, retention_hours="x"),
        lambda index: lakeseek.vacuum_index(index.source, retention_hours=-1),
        lambda index: lakeseek.open_index(index.source, lake_listing="bad"),
        lambda index: index.locate([object()], column="id"),
        lambda index: lakeseek.refresh_index(index.source, "bogus"),
        lambda index: lakeseek.optimize_index(index.source, "bogus"),
        lambda index: index.locate([1], column="s"),
    ],
)
def test_python_arguments_of_the_wrong_type_are_one_line_errors(tmp_path, misuse):
    root = str(tmp_path / "lake")
    _small_lake(root)
    index = lakeseek.create_index(root, ["id"], engine="local")
    with pytest.raises(lakeseek.LakeseekError) as raised:
        misuse(index)
    assert len(str(raised.value).splitlines()) == 1
    # Argument errors are InvalidArgumentError (the README), whatever else they are.
    assert isinstance(raised.value, lakeseek.InvalidArgumentError | lakeseek.PredicateError), type(raised.value)


def test_errors_naming_text_with_line_breaks_stay_one_line(tmp_path):
    """A column named with a line break made the message two lines; the CLI printed the first,
    cut in the middle of the list of columns (found by the schema hunt)."""
    root = tmp_path / "lake"
    root.mkdir()
    pq.write_table(pa.table({"id": [1], "a\nb": [2], "tab\tx": [3]}), root / "part-0.parquet")
    lakeseek.create_index(str(root), ["id"], engine="local")
    for where in ("nope = 1", "id = 'x\ny'"):
        with pytest.raises(lakeseek.LakeseekError) as raised:
            lakeseek.open_index(str(root)).read(where)
        assert len(str(raised.value).splitlines()) == 1
    result = CliRunner().invoke(main, ["query", str(root), "--where", "nope = 1"])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "a\\nb, tab\\tx)" in result.stderr, result.stderr


def test_one_column_asked_for_as_a_string_is_that_column(typed_lake):
    """``columns="id"`` was read as the columns i and d ("unknown column 'i'"), where
    ``create_index`` takes a string as one column."""
    index = lakeseek.open_index(typed_lake)
    assert index.read("id = 5", columns="id").column_names == ["id"]
    assert index.scan("id = 5", columns="id").column_names == ["id"]
    assert lakeseek.open_indexes(typed_lake).read("id = 5", columns="id").column_names == ["id"]
