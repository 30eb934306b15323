"""Datetime encodings Spark reads differently from pyarrow's defaults (docs/predicates.md,
"Datetime encodings"): INT96 timestamps outside 1677-2262, and Julian-rebased (legacy)
dates and timestamps before 1582-10-15 (and before 1900 outside UTC).

Every lake is written by Spark itself or by pyarrow, indexed on ``d`` and ``ts``, and every
front end (``read``, ``files``, ``locate``, ``to_spark``, formats ``lakeseek`` and
``lakeseek_python``) is compared with ``spark.read.parquet(LAKE).where(P)``.
"""

from __future__ import annotations

import datetime as dt
import os
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import lakeseek
import lakeseek.spark
from lakeseek.exceptions import LakeseekError
from lakeseek.expressions.sql import to_spark_sql
from lakeseek.lake.datetimes import rebase_julian_days, rebase_julian_micros
from lakeseek.spark import PYTHON_FORMAT, to_spark

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
DATES = [
    "0001-01-01",
    "1000-01-01",
    "1000-03-01",
    "1582-10-04",
    "1582-10-15",
    "1677-09-21",
    "1900-01-01",
    "2024-02-29",
    "2262-04-12",
    "9999-12-31",
]
TIMES = [
    "0001-01-01 00:00:00",
    "1000-01-01 12:34:56.789012",
    "1000-03-01 23:59:59.999999",
    "1582-10-04 12:00:00",
    "1582-10-15 00:00:00",
    "1677-09-21 00:12:43.145224",  # just before the first nanosecond timestamp
    "1899-12-31 23:59:59",
    "2024-02-29 08:00:00.5",
    "2262-04-11 23:47:16.854776",  # just after the last nanosecond timestamp
    "9999-12-31 23:59:59.999999",
]
ROWS = 30  # three files of ten rows; row i holds DATES[i % 10] (NULL when i % 7 == 6) and TIMES[(i * 3) % 10]
PREDICATES = [
    "ts > TIMESTAMP '2100-01-01 00:00:00'",
    "ts < TIMESTAMP '1900-01-01 00:00:00'",
    "ts = TIMESTAMP '9999-12-31 23:59:59.999999'",
    "ts = TIMESTAMP '0001-01-01 00:00:00'",
    "ts = TIMESTAMP '1000-01-01 12:34:56.789012'",
    "ts BETWEEN TIMESTAMP '1582-10-01 00:00:00' AND TIMESTAMP '1582-10-20 00:00:00'",
    "ts >= TIMESTAMP '2262-04-11 23:47:16.854776'",
    "ts IN (TIMESTAMP '1677-09-21 00:12:43.145224', TIMESTAMP '2024-02-29 08:00:00.5')",
    "d = DATE '1000-01-01'",
    "d = DATE '0001-01-01'",
    "d = DATE '1582-10-04' OR d = DATE '1582-10-15'",
    "d < DATE '1582-10-15'",
    "d > DATE '2262-01-01'",
    "d IS NULL",
]


def _date(i: int) -> str | None:
    return None if i % 7 == 6 else DATES[i % 10]


def _time(i: int) -> str:
    return TIMES[(i * 3) % 10]


def _py_date(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def _py_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


# -- lakes ---------------------------------------------------------------------------------------
def _sql_date(i: int) -> str:
    return "NULL" if _date(i) is None else f"DATE '{_date(i)}'"


def _spark_frame(spark):
    values = ", ".join(f"({i}, {_sql_date(i)}, TIMESTAMP '{_time(i)}')" for i in range(ROWS))
    return spark.sql(f"SELECT * FROM VALUES {values} AS t(id, d, ts)").repartitionByRange(3, "id")


def _write_with_spark(spark, path: str, settings: dict[str, str], where: str | None = None) -> None:
    saved = {key: spark.conf.get(key, None) for key in settings}
    frame = _spark_frame(spark)  # literals read in UTC
    frame = frame if where is None else frame.where(where)
    try:
        for key, value in settings.items():
            spark.conf.set(key, value)
        frame.sortWithinPartitions("id").write.parquet(path)
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _pyarrow_table(julian: bool) -> pa.Table:
    """The rows, as pyarrow writes them: on the Julian calendar before 1582-10-15 when ``julian``."""
    days = [None if _date(i) is None else (_py_date(_date(i)) - dt.date(1970, 1, 1)).days for i in range(ROWS)]
    micros = [
        (_py_time(_time(i)) - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1) for i in range(ROWS)
    ]
    if julian:
        days = [None if d is None else _julian_days(d) for d in days]
        micros = [_julian_micros(m) for m in micros]
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "d": pa.array(days, pa.int32()).cast(pa.date32()),
            "ts": pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        }
    )


def _julian_days(gregorian: int) -> int:
    """The day number Spark 2 writes for a (proleptic Gregorian) day: its date's Julian day number."""
    if gregorian >= -141427:
        return gregorian
    date = dt.date(1970, 1, 1) + dt.timedelta(days=gregorian)
    year, month, day = date.year, date.month, date.day
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083 - 2440588


def _julian_micros(gregorian: int) -> int:
    day, time = divmod(gregorian, 86_400_000_000)
    return _julian_days(day) * 86_400_000_000 + time


def _write_with_pyarrow(path: str, files: list[tuple[pa.Table, dict, dict]]) -> None:
    os.makedirs(path)
    for number, (table, metadata, options) in enumerate(files):
        part = table.slice(number * 10, 10).replace_schema_metadata(metadata or None)
        pq.write_table(part, f"{path}/part-{number:05d}.parquet", **options)


INT96 = {"use_deprecated_int96_timestamps": True}
SPARK_2 = {"org.apache.spark.version": "2.4.8"}  # what Spark 2.4 writes: no time zone, Julian values
SPARK_3 = {"org.apache.spark.version": "3.3.0"}  # a Spark 3 file without legacy keys: values as they are
LEGACY = {
    "spark.sql.parquet.datetimeRebaseModeInWrite": "LEGACY",
    "spark.sql.parquet.int96RebaseModeInWrite": "LEGACY",
}
LAKES = {
    "spark-int96": {"spark.sql.parquet.outputTimestampType": "INT96"},
    "spark-legacy-int96": {**LEGACY, "spark.sql.parquet.outputTimestampType": "INT96"},
    "spark-legacy-micros": {**LEGACY, "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"},
    "spark-legacy-millis-los-angeles": {
        **LEGACY,
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MILLIS",
        "spark.sql.session.timeZone": "America/Los_Angeles",
    },
    "pyarrow-int96": "pyarrow",
    "pyarrow-spark2-legacy": "pyarrow",
}


def _make_lake(spark, name: str, path: str) -> None:
    if name == "pyarrow-int96":
        table = _pyarrow_table(julian=False)
        _write_with_pyarrow(path, [(table, {}, INT96)] * 3)
    elif name == "pyarrow-spark2-legacy":
        julian = _pyarrow_table(julian=True)
        # Spark 2 files (INT64 and INT96 timestamps): rebased; a Spark 3 file without legacy keys: not.
        gregorian = _pyarrow_table(julian=False)
        _write_with_pyarrow(path, [(julian, SPARK_2, {}), (julian, SPARK_2, INT96), (gregorian, SPARK_3, {})])
    elif name == "spark-legacy-millis-los-angeles":
        # Not 0001-01-01 00:00 UTC, a local time of the year 0 there (see test_unrebasable_timestamps_are_an_error)
        _write_with_spark(spark, path, LAKES[name], where="ts > TIMESTAMP '0001-01-02 00:00:00'")
    else:
        _write_with_spark(spark, path, LAKES[name])


@pytest.fixture(scope="module")
def registered(spark):
    assert lakeseek.spark.register(spark)
    return spark


@pytest.fixture(scope="module", params=list(LAKES))
def lake(request, tmp_path_factory, registered):
    path = str(tmp_path_factory.mktemp(request.param) / "lake")
    _make_lake(registered, request.param, path)
    lakeseek.create_index(path, ["d", "ts"], spark=registered, chunk_rows=4)
    return path


# -- the oracle and the comparisons --------------------------------------------------------------
def _spark_rows(frame) -> list[tuple]:
    """(id, day number, micros): no Python datetimes, which cannot hold every value."""
    return sorted(tuple(r) for r in frame.selectExpr("id", "unix_date(d)", "unix_micros(ts)").collect())


def _arrow_rows(table: pa.Table) -> list[tuple]:
    ts = table.column("ts")
    assert ts.type.unit in ("us", "ms"), ts.type  # never nanoseconds, which cannot hold every value
    ts = ts.cast(pa.timestamp("us", tz=ts.type.tz))
    columns = [
        table.column("id").to_pylist(),
        table.column("d").cast(pa.int32()).to_pylist(),
        ts.cast(pa.int64()).to_pylist(),
    ]
    return sorted(zip(*columns, strict=True))


def _path(uri: str) -> str:
    return unquote(urlparse(uri).path)


def _expected(spark, lake: str, where: str):
    return spark.read.parquet(lake).where(to_spark_sql(where))


@pytest.mark.parametrize("where", PREDICATES)
def test_read_and_files_match_spark(registered, lake, where):
    expected = _expected(registered, lake, where)
    index = lakeseek.open_index(lake)
    assert _arrow_rows(index.read(where)) == _spark_rows(expected)
    holding = {_path(r[0]) for r in expected.select(F.input_file_name()).distinct().collect()}
    assert holding <= set(index.files(where))


@pytest.mark.parametrize("where", PREDICATES)
def test_spark_front_ends_match_spark(registered, lake, where):
    expected = _spark_rows(_expected(registered, lake, where))
    index = lakeseek.open_index(lake)
    assert _spark_rows(to_spark(index, registered, where)) == expected
    for source_format in ("lakeseek", PYTHON_FORMAT):
        frame = registered.read.format(source_format).load(lake).where(to_spark_sql(where))
        assert _spark_rows(frame) == expected, source_format


def test_the_schema_is_sparks(registered, lake):
    index = lakeseek.open_index(lake)
    unit = "ms" if "millis" in lake else "us"  # INT96 read as microseconds; INT64 as the file's unit
    assert index.schema.field("ts").type == pa.timestamp(unit, tz="UTC")
    assert index.schema.field("d").type == pa.date32()
    assert to_spark(index, registered, "d IS NULL").schema == registered.read.parquet(lake).schema


@pytest.mark.parametrize("column", ["d", "ts"])
def test_locate_pairs_keys_with_the_files_spark_finds_them_in(registered, lake, column):
    texts = DATES if column == "d" else TIMES
    keys = [_py_date(t) if column == "d" else _py_time(t) for t in texts]
    literal = "DATE" if column == "d" else "TIMESTAMP"
    where = f"{column} IN ({', '.join(f'{literal} {chr(39)}{t}{chr(39)}' for t in texts)})"
    value = "unix_date(d)" if column == "d" else "unix_micros(ts)"
    expected = sorted(
        (r[0], _path(r[1]))
        for r in registered.read.parquet(lake).where(where).selectExpr(value, "input_file_name()").distinct().collect()
    )
    found = lakeseek.open_index(lake).locate(keys, column=column)
    key = found.column("key")  # in the column's type (INT96: nanoseconds), as unix_micros counts
    key = key.cast(pa.int32()) if column == "d" else key.cast(pa.timestamp("us", key.type.tz)).cast(pa.int64())
    assert sorted(zip(key.to_pylist(), found.column("file").to_pylist(), strict=True)) == expected
    assert expected  # every lake holds some of the keys


def test_row_group_index_over_legacy_and_int96_files(registered, tmp_path):
    """With ``row_groups=True`` the entries name row groups of rebased files: still Spark's rows."""
    path = str(tmp_path / "lake")
    os.makedirs(path)
    julian, gregorian = _pyarrow_table(julian=True), _pyarrow_table(julian=False)
    pq.write_table(julian.replace_schema_metadata(SPARK_2), f"{path}/a.parquet", row_group_size=4)
    pq.write_table(julian.replace_schema_metadata(SPARK_2), f"{path}/b.parquet", row_group_size=4, **INT96)
    pq.write_table(gregorian, f"{path}/c.parquet", row_group_size=4, **INT96)
    lakeseek.create_index(path, ["d", "ts"], spark=registered, row_groups=True)
    index = lakeseek.open_index(path)
    for where in PREDICATES:
        expected = _expected(registered, path, where)
        assert _arrow_rows(index.read(where)) == _spark_rows(expected), where
        assert _spark_rows(registered.read.format(PYTHON_FORMAT).load(path).where(to_spark_sql(where))) == (
            _spark_rows(expected)
        ), where


def test_unrebasable_timestamps_are_an_error(registered, tmp_path):
    """Before the year 1 (local time) outside fixed offsets, Spark's rebase depends on the JVM's
    time zone data: lakeseek says so rather than answer differently."""
    path = str(tmp_path / "lake")
    settings = {**LAKES["spark-legacy-millis-los-angeles"]}
    _write_with_spark(registered, path, settings, where="ts < TIMESTAMP '0001-01-02 00:00:00'")
    with pytest.raises(LakeseekError, match="cannot rebase exactly"):
        lakeseek.create_index(path, ["d", "ts"], spark=registered)


# -- the arithmetic, against Spark's own functions -------------------------------------------------
def test_day_rebase_is_sparks(spark):
    rebase = spark._jvm.org.apache.spark.sql.catalyst.util.RebaseDateTime
    rng = np.random.default_rng(7)
    switches = [-719164, -682945, -646420, -609895, -536845, -500320, -463795, -390745, -354220, -317695,
                -244645, -208120, -171595, -141427]  # fmt: skip
    days = sorted({*rng.integers(-1_000_000, 3_000_000, 300).tolist(), *(s + k for s in switches for k in (-1, 0, 1))})
    mine = rebase_julian_days(np.array(days)).tolist()
    assert mine == [rebase.rebaseJulianToGregorianDays(d) for d in days]


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles", "Asia/Kolkata", "GMT+05:30", "Etc/GMT-3"])
def test_micros_rebase_is_sparks(spark, zone):
    rebase = spark._jvm.org.apache.spark.sql.catalyst.util.RebaseDateTime
    rng = np.random.default_rng(11)
    micros = sorted(
        {
            *rng.integers(-62_135_596_800 * 10**6, 0, 200).tolist(),
            *(-12_219_292_800 * 10**6 + k * 1_800_000_000 for k in range(-60, 60)),  # around 1582-10-15
        }
    )
    mine = rebase_julian_micros(np.array(micros), zone).tolist()
    assert mine == [rebase.rebaseJulianToGregorianMicros(zone, m) for m in micros]


# -- dates and timestamps Python cannot hold -------------------------------------------------------
FAR_DAYS = [-800_000, -719_163, -719_162, 0, 2_932_896, 2_932_897, 3_000_000]  # years -220 .. 10183
FAR_MICROS = [-70_000_000_000_000_000, -62_135_596_800_000_001, 0, 253_402_300_799_999_999, 300_000_000_000_000_000]
FAR_PREDICATES = [
    "d < DATE '0001-01-01'",
    "d <= DATE '0001-01-01'",
    "d = DATE '0001-01-01'",
    "d >= DATE '9999-12-31'",
    "d > DATE '9999-12-31'",
    "d = DATE '1970-01-01'",
    "NOT (d > DATE '1970-01-01')",
    "d IS NULL",
    "ts < TIMESTAMP '0001-01-01 00:00:00'",
    "ts >= TIMESTAMP '9999-12-31 23:59:59.999999'",
    "ts = TIMESTAMP '1970-01-01 00:00:00'",
    "ts > TIMESTAMP '2000-01-01 00:00:00' OR d < DATE '1000-01-01'",
    # literals beyond Python's years, as Spark reads them
    "d < DATE '-0044-03-15'",
    "d = DATE '-0221-09-04'",
    "d IN (DATE '-0221-09-04', DATE '1970-01-06', DATE '+10183-06-21')",
    "d > DATE '+10000-01-01'",
    "d = '-0221-09-04'",
    "NOT (d <> DATE '-0221-09-04')",
    "d < TIMESTAMP '-0044-03-15 10:00:00'",
    "ts < TIMESTAMP '-0044-03-15 10:00:00.5'",
    "ts >= TIMESTAMP '+9999-12-31 23:00:00-05:00'",
    "ts > TIMESTAMP '+12000-01-01 00:00:00+01:00'",
    "d = DATE '-0221-09-05' - INTERVAL 1 DAY",
    "ts <= TIMESTAMP '-0249-10-28 14:13:20' - INTERVAL 24 HOUR",
]


def _far_table(first_id: int, rows: int, shift: int) -> pa.Table:
    days = [None if (i + shift) % 5 == 4 else FAR_DAYS[(i + shift) % len(FAR_DAYS)] for i in range(rows)]
    micros = [FAR_MICROS[(i * 2 + shift) % len(FAR_MICROS)] for i in range(rows)]
    return pa.table(
        {
            "id": pa.array(range(first_id, first_id + rows), pa.int64()),
            "d": pa.array(days, pa.int32()).cast(pa.date32()),
            "ts": pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        }
    )


def test_dates_and_timestamps_beyond_years_1_to_9999_are_indexed(registered, tmp_path):
    """Spark holds dates and timestamps from before year 1 and after 9999: they are indexed
    (keys are the Arrow storage numbers), in the main index and in a delta segment."""
    path = str(tmp_path / "lake")
    os.makedirs(path)
    for number in range(3):
        pq.write_table(_far_table(number * 10, 10, number), f"{path}/part-{number}.parquet")
    lakeseek.create_index(path, ["d", "ts"], spark=registered, chunk_rows=2)
    pq.write_table(_far_table(30, 10, 3), f"{path}/part-3.parquet")
    lakeseek.refresh_index(path, "incremental", engine="local")
    index = lakeseek.open_index(path)
    assert index.status().is_fresh and index.root.content.segments == 2
    for where in FAR_PREDICATES:
        expected = _expected(registered, path, where)
        assert _arrow_rows(index.read(where)) == _spark_rows(expected), where
        holding = {_path(r[0]) for r in expected.select(F.input_file_name()).distinct().collect()}
        assert holding <= set(index.files(where)), where
        assert _spark_rows(to_spark(index, registered, where)) == _spark_rows(expected), where
    # Every key is in the index (main and increment), whatever its year.
    entries = index.kind_reader.point_entries("d", pa.array(FAR_DAYS, pa.int32()).cast(pa.date32()))
    assert sorted(set(entries.column("key").cast(pa.int32()).to_pylist())) == FAR_DAYS
    found = index.locate([dt.date(1, 1, 1), dt.date(1970, 1, 1), dt.date(9999, 12, 31)], column="d")
    holding = registered.read.parquet(path).where("d IN (DATE '0001-01-01', DATE '1970-01-01', DATE '9999-12-31')")
    pairs = sorted((r[0], _path(r[1])) for r in holding.selectExpr("unix_date(d)", "input_file_name()").collect())
    keys = found.column("key").cast(pa.int32()).to_pylist()
    assert sorted(zip(keys, found.column("file").to_pylist(), strict=True)) == sorted(set(pairs))
