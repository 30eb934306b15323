"""Files whose Arrow schema records large and view types (``large_string``, ``string_view``,
``binary_view``, ``large_list``, ``list_view``), as Arrow-Rust writers (DataFusion, Polars,
delta-rs, tpchgen-cli) write them: indexed, compared, read and handed to Spark like any other,
against DuckDB's and Spark's reading of the same files."""

from __future__ import annotations

import os

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeseek
from lakeseek.planning import Fallback
from lakeseek.spark import to_spark

pytestmark = pytest.mark.spark  # to_spark, and Spark's reading of the files as the second oracle


def _lake(root: str) -> str:
    os.makedirs(root)
    for number in range(4):
        first = number * 50
        names = [None if n % 9 == 0 else f"name-{n % 13}" for n in range(first, first + 50)]
        table = pa.table(
            {
                "id": pa.array(range(first, first + 50), pa.int64()),
                "sv": pa.array(names, pa.string_view()),
                "ls": pa.array(names, pa.large_string()),
                "bv": pa.array([None if s is None else s.encode() for s in names], pa.binary_view()),
                "lb": pa.array([None if s is None else s.encode() for s in names], pa.large_binary()),
                "ll": pa.array([[n, n + 1] for n in range(first, first + 50)], pa.large_list(pa.int64())),
                "lv": pa.array([[n % 3] for n in range(first, first + 50)], pa.list_view(pa.int32())),
            }
        )
        pq.write_table(table, f"{root}/part-{number}.parquet")
    return root


WHERES = [
    "sv = 'name-4'",
    "ls = 'name-4'",
    "sv IN ('name-1', 'name-12') AND id > 20",
    "sv IS NULL",
    "ls LIKE 'name-1%'",
    "sv > 'name-7'",
    "bv = X'6e616d652d34'",
    "lb = X'6e616d652d34'",
    "sv <> ls",
]


def test_large_and_view_types_are_indexed_compared_and_read(tmp_path, spark):
    root = _lake(str(tmp_path / "lake"))
    files = sorted(f"{root}/{name}" for name in os.listdir(root))
    index = lakeseek.create_index(root, ["sv", "ls", "bv", "lb"], engine="local")
    assert index.schema.field("sv").type == pa.string() and index.schema.field("bv").type == pa.binary()
    assert index.schema.field("ls").type == pa.large_string()
    for where in WHERES:
        table, plan = index.query(where)
        duck = where.replace("X'6e616d652d34'", "'name-4'::BLOB")
        oracle = sorted(row[0] for row in duckdb.sql(f"SELECT id FROM read_parquet({files}) WHERE {duck}").fetchall())
        assert sorted(table.column("id").to_pylist()) == oracle, where
        assert set(table.column_names) == {"id", "sv", "ls", "bv", "lb", "ll", "lv"}
        if "<>" not in where:  # served by the index (or not worth reading it), never refused for a type
            assert plan.fallback in (None, Fallback.TOO_COSTLY), (where, plan.reason)
        from_spark = sorted(row["id"] for row in to_spark(index, spark, where).select("id").collect())
        assert from_spark == oracle, where
    pairs = index.locate(["name-4", "absent"], column="sv")
    holding = duckdb.sql(f"SELECT DISTINCT filename FROM read_parquet({files}, filename=true) WHERE sv = 'name-4'")
    assert sorted(pairs.column("file").to_pylist()) == sorted(row[0] for row in holding.fetchall())


def test_view_typed_columns_are_compared_in_files_an_index_of_another_column_leaves(tmp_path):
    """Files whose string and binary columns are string_view and binary_view (deltalake's
    delete, update and merge write them) beside plain ones, compared while read (not looked
    up): pyarrow has no kernel for them against the lake's string literal."""
    root = tmp_path / "lake"
    root.mkdir()
    names = ["a", "b", "", "name-4"]  # no NULL: pyarrow then takes another path, which worked
    for number, (text, data) in enumerate([(pa.string_view(), pa.binary_view()), (pa.string(), pa.binary())]):
        table = pa.table(
            {
                "id": pa.array(range(number * 10, number * 10 + len(names)), pa.int64()),
                "s": pa.array(names, text),
                "b": pa.array([n.encode() for n in names], data),
            }
        )
        pq.write_table(table, root / f"part-{number}.parquet")
    files = sorted(str(path) for path in root.iterdir())
    index = lakeseek.create_index(str(root), ["id"], engine="local")
    for where in ["s = 'a'", "s IN ('b', '') OR b = X'6e616d652d34'", "s > 'a' AND b <> X'62'", "s = s", "s LIKE 'n%'"]:
        duck = where.replace("X'6e616d652d34'", "'name-4'::BLOB").replace("X'62'", "'b'::BLOB")
        oracle = sorted(row[0] for row in duckdb.sql(f"SELECT id FROM read_parquet({files}) WHERE {duck}").fetchall())
        assert sorted(index.read(where).column("id").to_pylist()) == oracle, where
        assert sorted(index.scan(where).column("id").to_pylist()) == oracle, where


def test_types_only_the_arrow_schema_names_are_read_as_spark_reads_their_parquet_columns(tmp_path, spark):
    """A 32- or 64-bit decimal (an ArrowNotImplementedError traceback at create) is a DECIMAL;
    a duration is the INT64 Parquet holds, to Spark (``to_spark`` typed it as an interval and read
    86400 seconds as 86,400 microseconds); a time of day, which Spark refuses to read, is refused
    at create; a decimal past 38 digits is read, and refused by to_spark in one line, not with
    pyspark's ValueError (found by the schema hunt)."""
    import datetime as dt
    from decimal import Decimal

    lake = tmp_path / "lake"
    lake.mkdir()
    table = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "d32": pa.array([Decimal("1.50"), None, Decimal("-2.25")], pa.decimal32(5, 2)),
            "d64": pa.array([Decimal("10.5"), Decimal("1.5"), None], pa.decimal64(12, 1)),
            "span": pa.array([dt.timedelta(seconds=5), dt.timedelta(days=1), None], pa.duration("s")),
        }
    )
    pq.write_table(table, lake / "part-0.parquet")
    for kind in ("sorted", "skipping", "cuckoo"):
        index = lakeseek.create_index(str(lake), ["d32", "d64"], kind=kind, name=kind, engine="local")
        for where in ("d32 = 1.5", "d32 < 0", "d64 IN (1.5, 7)", "d32 IS NULL OR d64 > 2"):
            expected = sorted(row.id for row in spark.read.parquet(str(lake)).where(where).collect())
            assert sorted(index.read(where, columns=["id"]).column("id").to_pylist()) == expected, (kind, where)
    frame = to_spark(index, spark, "id > 0").orderBy("id")
    assert frame.collect() == spark.read.parquet(str(lake)).orderBy("id").collect()
    timed = tmp_path / "timed"
    timed.mkdir()
    pq.write_table(pa.table({"id": [1], "t": pa.array([1], pa.time64("us"))}), timed / "part-0.parquet")
    with pytest.raises(lakeseek.UnsupportedLakeError, match="which Spark has no type for"):
        lakeseek.create_index(str(timed), ["id"], engine="local")
    wide = tmp_path / "wide"
    wide.mkdir()
    pq.write_table(pa.table({"id": [1], "w": pa.array([1], pa.decimal256(50, 2))}), wide / "part-0.parquet")
    index = lakeseek.create_index(str(wide), ["id"], engine="local")
    assert index.read("id = 1").column("w").to_pylist() == [Decimal("1.00")]
    with pytest.raises(lakeseek.UnsupportedLakeError, match="Spark cannot read the lake's columns") as raised:
        to_spark(index, spark, "id = 1")
    assert len(str(raised.value).splitlines()) == 1


def test_a_value_the_lakes_type_cannot_hold_is_a_one_line_error_for_every_kind(tmp_path):
    """A nanosecond column in one file and an INT96 one holding 9999-12-31 in another merge as
    nanoseconds, which cannot hold that day (found by a types hunt): the covering kind's build
    and every query raised pyarrow's ArrowInvalid (a traceback in the command line)."""
    root = tmp_path / "lake"
    root.mkdir()
    nanos = pa.array([1_704_164_645_123_456_789], pa.timestamp("ns", tz="UTC"))
    pq.write_table(pa.table({"id": [1], "t": nanos}), root / "a.parquet")
    last_day = pa.array([253_402_300_799_000_000], pa.timestamp("us", tz="UTC"))
    pq.write_table(pa.table({"id": [2], "t": last_day}), root / "c.parquet", use_deprecated_int96_timestamps=True)
    for kind in ("sorted", "skipping", "cuckoo", "covering"):
        options = {"include": ["id"]} if kind == "covering" else {}
        with pytest.raises(lakeseek.IncompatibleSchemaError, match=r"c\.parquet"):
            lakeseek.create_index(str(root), ["t"], kind=kind, name=kind, engine="local", **options)
    index = lakeseek.create_index(str(root), ["id"], name="by_id", engine="local")
    with pytest.raises(lakeseek.IncompatibleSchemaError, match="cannot hold"):
        index.read("id >= 1")


@pytest.mark.parametrize("kind", ["sorted", "skipping", "cuckoo", "covering"])
def test_days_beyond_pythons_years_are_indexed_and_two_bounds_on_them_merge(tmp_path, kind):
    """Found by a types hunt: the skipping kind's build (and what-if estimates) failed with
    OverflowError on a file holding a day before year 1 or after 9999, and two bounds on one
    column, one of them such a day, failed to merge with a TypeError (a Python date against an
    Arrow one), for every kind."""
    root = tmp_path / "lake"
    root.mkdir()
    days = [-719_163 - 400, -719_163, -719_162, 0, 19_725, 2_932_896, 2_932_897, 2_932_897 + 500, None]
    micros = [None if day is None else day * 86_400_000_000 for day in days]
    rows = {"id": list(range(len(days))), "d": pa.array(days, pa.date32())}
    pq.write_table(pa.table({**rows, "ts": pa.array(micros, pa.timestamp("us", tz="UTC"))}), root / "a.parquet")
    pq.write_table(
        pa.table({"id": [100], "d": pa.array([5], pa.date32()), "ts": pa.array([5], pa.timestamp("us", tz="UTC"))}),
        root / "b.parquet",
    )
    options = {"include": ["id"]} if kind == "covering" else {}
    index = lakeseek.create_index(str(root), ["d", "ts"], kind=kind, engine="local", **options)
    assert index.explain("d = DATE '0000-12-31'", what_if=["skipping:d"]).what_if
    for where in [
        "d < DATE '0001-01-01' AND d <= DATE '1969-12-31'",
        "d > DATE '9999-12-31' AND d >= DATE '2000-01-01'",
        "d < DATE '0001-01-01' AND d < DATE '0000-06-01'",
        "d BETWEEN DATE '9999-12-31' AND DATE '+10002-01-01' AND d > DATE '9999-12-31'",
        "ts < TIMESTAMP '0001-01-01 00:00:00' AND ts <= TIMESTAMP '2000-01-01 00:00:00'",
        "ts > TIMESTAMP '9999-12-31 23:59:59.999999' AND ts >= TIMESTAMP '2000-01-01 00:00:00'",
        "d IN (DATE '0000-12-31', DATE '+10000-01-01')",
    ]:
        expected = sorted(index.scan(where, columns=["id"]).column("id").to_pylist())
        assert sorted(index.read(where, columns=["id"]).column("id").to_pylist()) == expected, where
        assert expected, where  # each predicate matches a row


def test_a_file_pyarrow_cannot_decode_is_a_data_file_error_naming_it(tmp_path):
    """A dictionary column written DELTA_BYTE_ARRAY-encoded, which Spark and DuckDB read and
    pyarrow's reader does not ("Not yet implemented: DecodeArrow ..."), raised pyarrow's OSError
    naming no file (found by a types hunt)."""
    root = tmp_path / "lake"
    root.mkdir()
    words = pa.array(["a", "b", "a"]).dictionary_encode()
    pq.write_table(
        pa.table({"id": [1, 2, 3], "s": words}),
        root / "a.parquet",
        use_dictionary=False,
        column_encoding={"s": "DELTA_BYTE_ARRAY"},
    )
    pq.write_table(pa.table({"id": [4], "s": ["c"]}), root / "b.parquet")
    with pytest.raises(lakeseek.DataFileError, match=r"a\.parquet .*Not yet implemented"):
        lakeseek.create_index(str(root), ["s"], name="by_s", engine="local")
    index = lakeseek.create_index(str(root), ["id"], engine="local")
    with pytest.raises(lakeseek.DataFileError, match=r"a\.parquet"):
        index.read("id = 1")
    assert index.read("id = 4").to_pydict() == {"id": [4], "s": ["c"]}
