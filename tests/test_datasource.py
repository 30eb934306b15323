"""The "lakeseek" Spark data source: Spark SQL over a lake gives spark.read.parquet's rows,
and its index prunes the files Spark reads."""

from __future__ import annotations

import datetime as dt
import os
import pickle
import random
import shutil
from decimal import Decimal
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import datasource as f

import lakeseek
import lakeseek.spark
from lakeseek.expressions import Comparison, Literal
from lakeseek.spark import PYTHON_FORMAT
from lakeseek.spark.datasource import LakeseekDataSource
from lakeseek.spark.filters import usable
from lakeseek.spark.scan import LakeseekPartition, ScanSettings, pack, parse_bytes
from tests.lakes import all_rows, copy_lake, data_files, region_dir, restamp_indexes, typed_rows, write_file

pytestmark = pytest.mark.spark
UTC = ZoneInfo("UTC")  # how Spark hands TIMESTAMP literals to pushFilters


def _rows(frame) -> list[str]:
    """The rows, comparable whatever they hold (NaN != NaN, but repr(NaN) == repr(NaN))."""
    return sorted(repr(tuple(row)) for row in frame.collect())


@pytest.fixture(scope="module", params=["lakeseek", PYTHON_FORMAT])
def source_format(request, jvm_source):
    """Both data sources: the JVM one ``lakeseek`` resolves to, and the Python one.

    Without a JDK ``lakeseek`` is the Python source too: its cases skip."""
    if request.param == "lakeseek" and not jvm_source:
        pytest.skip("no JDK (javac): 'lakeseek' is the Python data source, tested as lakeseek_python")
    return request.param


@pytest.fixture(scope="module")
def table(spark, typed_lake, source_format):
    """The typed lake as a catalog table of the lakeseek format."""
    name = f"typed_{source_format}"
    spark.sql(f"CREATE TABLE {name} USING {source_format} OPTIONS (path '{typed_lake}')")
    yield name
    spark.sql(f"DROP TABLE IF EXISTS {name}")


class OneScanSource(LakeseekDataSource):
    """Readers that plan one scan each, so they narrow it to their pushed filters (Spark's
    planning worker does not keep a reader's read per scan: see LakeseekReader)."""

    narrow_to_pushed_filters = True


def _reader(lake: str, **options: str):
    source = OneScanSource({"path": lake, **options})
    return source.reader(source.schema())


def _read(reader, partitions) -> list[dict]:
    return [row for partition in partitions for batch in reader.read(partition) for row in batch.to_pylist()]


# -- Spark SQL over the table == Spark over the Parquet files ------------------------------------
@pytest.mark.parametrize(
    "where",
    [
        "id = 17",
        "small = -128",
        "medium IN (300, 32767)",
        "name = 'it''s'",
        "name IN ('São Paulo', 'back\\\\slash', 'nope')",
        "name LIKE 'al%'",
        "name LIKE '%\\_%'",
        "name LIKE 'back\\\\\\\\%'",
        "payload = X'0001'",
        "NOT flag",
        "day = DATE '2024-02-29'",
        "ts = TIMESTAMP '2024-01-01 12:30:15.123456'",
        "amount IN (3.10, -12.5)",
        "region = 'São Paulo'",
        "region IS NULL",
        "NOT (code <=> 7)",
        "id BETWEEN 100 AND 120 AND name IS NOT NULL",
        "id = 17 OR name = 'alice'",
        "code = 7 AND score > 0",
        "id % 7 = 1",
        "isnan(score) OR score < 0",
        "id = -1",
    ],
)
def test_same_rows_as_spark_over_the_parquet_files(spark, typed_lake, table, where):
    expected = _rows(spark.read.parquet(typed_lake).where(where))
    assert _rows(spark.sql(f"SELECT * FROM {table} WHERE {where}")) == expected


def test_schema_is_spark_parquet_schema(spark, typed_lake, table, source_format):
    parquet = spark.read.parquet(typed_lake).schema
    assert spark.read.format(source_format).load(typed_lake).schema == parquet
    # A catalog table's first field carries the options (Spark loses a Python table's options).
    assert [(x.name, x.dataType, x.nullable) for x in spark.table(table).schema] == [
        (x.name, x.dataType, x.nullable) for x in parquet
    ]
    index = lakeseek.open_index(typed_lake)
    assert index.schema.names == parquet.fieldNames()  # partition column (region) last in both
    assert parquet.fieldNames()[-1] == "region"


def test_read_format_load_and_options(spark, typed_lake, source_format):
    frame = spark.read.format(source_format).option("name", "default").load(typed_lake).where("name = 'Bob'")
    assert _rows(frame) == _rows(spark.read.parquet(typed_lake).where("name = 'Bob'"))


# -- pushFilters -> partitions -> read, without Spark --------------------------------------------
def _eq(column, value):
    return lambda r: r[column] is not None and r[column] == value


@pytest.mark.parametrize(
    ("filters", "keep", "used"),
    [
        ([f.EqualTo(("id",), 17)], _eq("id", 17), 1),
        ([f.EqualTo(("small",), -128)], _eq("small", -128), 1),
        ([f.In(("medium",), [300, 32767])], lambda r: r["medium"] in (300, 32767), 1),
        ([f.IsNull(("code",))], lambda r: r["code"] is None, 1),
        ([f.IsNotNull(("name",)), f.EqualTo(("name",), "🙂 emoji")], _eq("name", "🙂 emoji"), 2),
        ([f.StringStartsWith(("name",), "50%")], lambda r: (r["name"] or "").startswith("50%"), 1),
        ([f.StringStartsWith(("name",), "under_")], lambda r: (r["name"] or "").startswith("under_"), 1),
        ([f.StringEndsWith(("name",), "slash")], lambda r: (r["name"] or "").endswith("slash"), 1),
        ([f.StringContains(("name",), "_sc")], lambda r: "_sc" in (r["name"] or ""), 1),
        ([f.StringContains(("name",), "\n")], lambda r: "\n" in (r["name"] or ""), 1),
        ([f.Not(f.StringStartsWith(("name",), "a"))], lambda r: r["name"] is not None and r["name"][:1] != "a", 1),
        ([f.EqualTo(("payload",), b"\x00\x01")], _eq("payload", b"\x00\x01"), 1),
        ([f.In(("payload",), [b"", b"abc"])], lambda r: r["payload"] in (b"", b"abc"), 1),
        ([f.Not(f.EqualTo(("flag",), True))], lambda r: r["flag"] is False, 1),
        ([f.EqualTo(("day",), dt.date(2024, 2, 29))], _eq("day", dt.date(2024, 2, 29)), 1),
        ([f.GreaterThan(("day",), dt.date(2000, 1, 1))], lambda r: r["day"] is not None and r["day"].year > 2000, 1),
        (
            [f.EqualTo(("ts",), dt.datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC))],
            _eq("ts", dt.datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC)),
            1,
        ),
        (
            [f.LessThanOrEqual(("ts",), dt.datetime(2024, 1, 1, tzinfo=UTC))],
            lambda r: r["ts"] is not None and r["ts"] <= dt.datetime(2024, 1, 1, tzinfo=UTC),
            1,
        ),
        ([f.EqualTo(("amount",), Decimal("-12.50"))], _eq("amount", Decimal("-12.50")), 1),
        (
            [f.In(("amount",), [Decimal("3.10"), Decimal("0.00")])],
            lambda r: r["amount"] in (Decimal("3.1"), Decimal(0)),
            1,
        ),
        ([f.LessThan(("amount",), 0)], lambda r: r["amount"] is not None and r["amount"] < 0, 1),
        ([f.EqualTo(("region",), "São Paulo")], _eq("region", "São Paulo"), 1),
        ([f.IsNull(("region",))], lambda r: r["region"] is None, 1),
        ([f.Not(f.EqualTo(("region",), "east"))], lambda r: r["region"] not in (None, "east"), 1),
        ([f.EqualNullSafe(("code",), 7)], _eq("code", 7), 1),
        ([f.Not(f.EqualNullSafe(("code",), 7))], lambda r: r["code"] != 7, 1),
        ([f.In(("small",), [None, 1, 7])], lambda r: r["small"] in (1, 7), 1),
        ([f.Not(f.In(("small",), [None, 1]))], lambda r: False, 1),
        ([f.GreaterThanOrEqual(("id",), 100), f.LessThan(("id",), 110)], lambda r: 100 <= r["id"] < 110, 2),
        ([f.EqualTo(("id",), -1)], lambda r: False, 1),
        # Floats are used, with Spark's NaN order (see test_more_types for NaN rows).
        ([f.GreaterThan(("score",), 0.0)], lambda r: r["score"] is not None and r["score"] > 0, 1),
        ([f.EqualTo(("code",), 7), f.EqualTo(("score",), 0.5)], lambda r: r["code"] == 7 and r["score"] == 0.5, 2),
        # Backslashes are escaped into the LIKE pattern; literals beyond the column compare exactly.
        ([f.StringEndsWith(("name",), "\\slash")], lambda r: (r["name"] or "").endswith("\\slash"), 1),
        ([f.StringStartsWith(("name",), "back\\")], lambda r: (r["name"] or "").startswith("back\\"), 1),
        ([f.EqualTo(("small",), 1000)], lambda r: False, 1),
        ([f.EqualTo(("amount",), Decimal("3.105"))], lambda r: False, 1),
        # Not used (Spark alone filters): nested columns, literals that do not fit.
        ([f.EqualTo(("point", "x"), 1)], lambda r: True, 0),
        ([f.EqualTo(("nope",), 1)], lambda r: True, 0),
        ([f.EqualTo(("id",), "17")], lambda r: r["id"] == 17, 0),
        ([f.EqualTo(("ts",), dt.datetime(2024, 1, 1))], lambda r: True, 0),
        ([f.EqualTo(("day",), dt.datetime(2024, 2, 29))], lambda r: True, 0),
        ([f.In(("id",), [])], lambda r: False, 0),
    ],
)
def test_reader_keeps_every_row_spark_keeps(typed_lake, filters, keep, used):
    rows = all_rows(typed_lake)
    reader = _reader(typed_lake)
    assert reader.pushFilters(filters) == filters  # every filter goes back to Spark
    assert len(reader.pushed) == used
    partitions = reader.partitions()
    returned = sorted(row["id"] for row in _read(reader, partitions))
    expected = sorted(row["id"] for row in rows if keep(row))
    if used == len(filters):  # pyarrow applied them all: exactly Spark's rows
        assert returned == expected
    else:
        assert set(returned) >= set(expected)
    files = {os.path.relpath(row["__file"], typed_lake) for row in rows if keep(row)}
    assert files <= {path for p in partitions for path in p.files}
    assert all(p.files for p in partitions)


def test_needles_read_only_their_files(typed_lake):
    total = len(data_files(typed_lake))
    cases = [
        ([f.EqualTo(("id",), 17)], 1),
        ([f.IsNull(("region",))], total // 4),
        ([f.IsNotNull(("id",)), f.In(("id",), [1, 500, 1000])], 3),
        ([f.EqualTo(("id",), -1)], 0),
        ([f.GreaterThanOrEqual(("id",), 1700), f.LessThan(("id",), 1750)], 1),  # a range
        ([f.GreaterThan(("score",), 0.0)], total),  # not indexed (nor pushed: a float)
    ]
    for filters, expected in cases:
        reader = _reader(typed_lake)
        reader.pushFilters(filters)
        partitions = reader.partitions()
        assert sum(len(p.files) for p in partitions) == expected, filters
        assert reader.plan.total_files == total
        assert reader.plan.index_used == (expected < total)


def test_spark_reads_only_the_candidate_files(spark, lake_copy, source_format):
    """End to end: a file the needle does not need is garbage (the index made to trust it, as
    if built on it); the needle query through Spark never opens it. Not through the
    Python source, which Spark makes read every file (see LakeseekReader)."""
    if source_format == PYTHON_FORMAT:
        pytest.skip("the Python data source reads every file under Spark")
    expected = [row for row in all_rows(lake_copy) if row["id"] == 17]
    victim = next(path for path in data_files(lake_copy) if path != expected[0]["__file"])
    stat = os.stat(victim)
    with open(victim, "wb") as out:
        out.write(os.urandom(stat.st_size))
    restamp_indexes(lake_copy)
    with pytest.raises(pa.ArrowInvalid):
        pq.read_table(victim)
    frame = spark.read.format(source_format).load(lake_copy).where("id = 17")
    assert [row["id"] for row in frame.collect()] == [17]


def test_lake_changed_after_indexing(spark, lake_copy, source_format):
    files = data_files(lake_copy)
    removed_ids = [row["id"] for row in pq.read_table(files[0]).to_pylist()[:2]]
    os.remove(files[0])
    write_file(f"{lake_copy}/{region_dir('north')}/part-new.parquet", typed_rows(random.Random(3), 10_000, 40))
    frame = spark.read.format(source_format).load(lake_copy)
    parquet = spark.read.parquet(lake_copy)
    for where in (f"id IN ({removed_ids[0]}, {removed_ids[1]}, 10005)", "region = 'north'", "code = 7"):
        assert _rows(frame.where(where)) == _rows(parquet.where(where)), where
    assert _rows(frame.where("id = 10005"))  # a new file's row is found


# -- errors ----------------------------------------------------------------------------------
def test_lake_without_index_gives_a_clear_error(spark, tmp_path, source_format):
    lake = tmp_path / "plain"
    lake.mkdir()
    pq.write_table(pa.table({"x": [1, 2]}), lake / "part-0.parquet")
    with pytest.raises(lakeseek.IndexNotFoundError, match="no lakeseek index"):
        LakeseekDataSource({"path": str(lake)}).schema()
    with pytest.raises(Exception, match="no lakeseek index"):
        spark.read.format(source_format).load(str(lake))
    with pytest.raises(lakeseek.LakeNotFoundError, match="lake not found"):
        LakeseekDataSource({"path": str(tmp_path / "missing")}).schema()
    with pytest.raises(lakeseek.LakeseekError, match="needs the lake's path"):
        LakeseekDataSource({}).schema()


# -- types beyond the typed lake: TIMESTAMP_NTZ, milliseconds, float32, nested, date partitions --
@pytest.fixture(scope="module")
def extra_lake(spark, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("extra") / "lake")
    schema = pa.schema(
        [
            ("key", pa.int64()),
            ("ntz", pa.timestamp("us")),
            ("ms", pa.timestamp("ms", tz="UTC")),
            ("f32", pa.float32()),
            ("big", pa.decimal128(38, 10)),
            ("tags", pa.list_(pa.string())),
            ("point", pa.struct([("x", pa.int32()), ("y", pa.string())])),
            ("attrs", pa.map_(pa.string(), pa.int64())),
        ]
    )
    for day, offset in (("2024-01-01", 0), ("2024-01-02", 100)):
        rows = [
            {
                "key": offset + i,
                "ntz": dt.datetime(2024, 1, 1, 0, 0, i),
                "ms": dt.datetime(2024, 1, 1, 0, 0, 0, i * 1000, tzinfo=dt.timezone.utc),
                "f32": float("nan") if i % 5 == 0 else (-0.0 if i == 3 else i / 4),
                "big": Decimal(f"{i}.0000000001"),
                "tags": ["a", str(i)],
                "point": {"x": i, "y": "p"},
                "attrs": [("k", i)],
            }
            for i in range(20)
        ]
        os.makedirs(f"{root}/day={day}")
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), f"{root}/day={day}/part-0.parquet")
    lakeseek.create_index(root, ["key", "ntz", "ms", "big", "day"], spark=spark)
    return root


@pytest.mark.parametrize(
    "where",
    [
        "key = 105",
        "ntz = TIMESTAMP_NTZ '2024-01-01 00:00:03'",
        "ms < TIMESTAMP '2024-01-01 00:00:00.0035'",  # not exact in milliseconds: not pushed
        "isnan(f32) AND key < 50",
        "f32 > 1.0",
        "f32 >= 0.0 AND key < 60",
        "f32 < 2.5",
        "NOT (f32 > 1.0)",
        "f32 <= 10.0 OR key = 3",
        "f32 > float('NaN')",
        "big = 3.0000000001",
        "day = DATE '2024-01-02' AND point.x = 3",
        "array_contains(tags, '4') OR attrs['k'] = 7",
    ],
)
def test_more_types(spark, extra_lake, where, source_format):
    frame = spark.read.format(source_format).load(extra_lake)
    assert _rows(frame.where(where)) == _rows(spark.read.parquet(extra_lake).where(where))


def test_more_types_schema(spark, extra_lake, source_format):
    assert spark.read.format(source_format).load(extra_lake).schema == spark.read.parquet(extra_lake).schema


def test_literals_finer_than_the_column_are_rounded_by_operator(extra_lake):
    """Spark pushes literals of its own types (microseconds, doubles): lakeseek compares as
    Spark does, rounding to the column by operator instead of refusing or truncating."""
    schema = lakeseek.open_index(extra_lake).schema
    finer = usable(f.LessThan(("ms",), dt.datetime(2024, 1, 1, 0, 0, 0, 3500, tzinfo=UTC)), schema)
    assert finer.bound == Comparison(
        "<=", "ms", Literal("value", dt.datetime(2024, 1, 1, 0, 0, 0, 3000, tzinfo=UTC), schema.field("ms").type)
    )
    # decimal(38, 10) and decimal(12, 11) fit no decimal(38): Spark rounds the literal to the column.
    rounded = usable(f.EqualTo(("big",), Decimal("3.00000000006")), schema).bound
    assert rounded.literal.value == Decimal("3.0000000001")
    exact = usable(f.EqualTo(("big",), Decimal("3.5")), schema).bound
    assert exact == Comparison("=", "big", Literal("value", Decimal("3.5000000000"), schema.field("big").type))
    as_double = usable(f.EqualTo(("f32",), 0.1), schema).bound  # a float32 column never equals 0.1
    assert as_double.literal.type == pa.float64()
    assert usable(f.EqualTo(("ntz",), dt.datetime(2024, 1, 1, 0, 0, 3)), schema) is not None
    assert usable(f.EqualTo(("ntz",), dt.datetime(2024, 1, 1, tzinfo=UTC)), schema) is None
    assert usable(f.IsNull(("f32",)), schema) is not None


# -- planning mechanics ----------------------------------------------------------------------
def test_reader_pickles_without_its_index(typed_lake):
    reader = _reader(typed_lake)
    reader.pushFilters([f.EqualTo(("id",), 42)])
    partitions = reader.partitions()
    shipped = pickle.loads(pickle.dumps(reader))
    assert shipped._index is None and shipped.plan is None
    assert [row["id"] for row in _read(shipped, partitions)] == [42]
    assert list(shipped.read(LakeseekPartition(()))) == []
    assert list(reader.read(pickle.loads(pickle.dumps(partitions[0]))))


def test_pack_spreads_small_scans_and_caps_big_ones():
    mb = 1 << 20
    settings = ScanSettings(max_partition_bytes=128 * mb, open_cost_bytes=4 * mb, parallelism=4)
    assert pack([], settings) == []
    small = [(f"f{i}", 1 * mb) for i in range(40)]  # 200 MB with open costs: 4 partitions of ~50 MB
    groups = pack(small, settings)
    assert len(groups) >= 4 and all(groups) and sorted(p for g in groups for p in g) == sorted(p for p, _ in small)
    big = [(f"f{i}", 100 * mb) for i in range(20)]  # each file nearly fills a 128 MB partition
    assert [len(g) for g in pack(big, settings)] == [1] * 20
    assert pack([("huge", 10_000 * mb)], settings) == [["huge"]]
    many = [(f"f{i}", 10 * mb) for i in range(100)]  # 1.4 GB: 128 MB partitions
    assert all(len(g) <= 10 for g in pack(many, settings))


def test_partition_settings_from_options(typed_lake):
    reader = _reader(typed_lake, maxPartitionBytes="1k", openCostInBytes="0", parallelism="64")
    assert reader.settings == ScanSettings(1024, 0, 64)
    partitions = reader.partitions()
    assert len(partitions) == len(data_files(typed_lake))  # every file is over 1 KB
    planned = sum(stamp.size for p in partitions for stamp in p.stamps.values())
    assert planned == sum(os.path.getsize(p) for p in data_files(typed_lake))
    assert [parse_bytes(x) for x in ("134217728", "128MB", "128m", "4k", "1g")] == [
        128 << 20,
        128 << 20,
        128 << 20,
        4096,
        1 << 30,
    ]
    with pytest.raises(lakeseek.LakeseekError):
        parse_bytes("lots")


def test_register_captures_the_session_settings(spark, typed_lake):
    lakeseek.spark.register(spark)
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    zone = spark._jvm.java.util.TimeZone.getDefault().getID()  # the zone a task falls back on
    assert ScanSettings.of(spark) == ScanSettings(128 << 20, 4 << 20, spark.sparkContext.defaultParallelism, zone)
    # 12 small files, 2 cores: a few partitions. With 1 KB partitions: one per file, which
    # shows the settings travel to Spark's planning worker with the registered class.
    assert spark.read.format(PYTHON_FORMAT).load(typed_lake).rdd.getNumPartitions() <= 3
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1k")
    try:
        lakeseek.spark.register(spark)
        assert spark.read.format(PYTHON_FORMAT).load(typed_lake).rdd.getNumPartitions() == len(data_files(typed_lake))
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        lakeseek.spark.register(spark)


def test_index_in_another_home(spark, typed_lake, tmp_path):
    """``index`` and ``name`` options reach open_index (here: a copy whose index moved away)."""
    lake = str(tmp_path / "lake")
    copy_lake(typed_lake, lake)
    home = str(tmp_path / "indexes")
    shutil.move(f"{lake}/_lakeseek", home)
    reader = _reader(lake, index=home, name="default")
    reader.pushFilters([f.EqualTo(("id",), 5)])
    assert sum(len(p.files) for p in reader.partitions()) == 1
    with pytest.raises(lakeseek.IndexNotFoundError):
        _reader(lake)
