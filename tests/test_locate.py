"""Batch lookups (locate): exact (key, file) pairs, with and without Spark."""

from __future__ import annotations

import datetime as dt
import functools
import glob
import math
import os
import random
from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeseek
from lakeseek.exceptions import LakeseekError
from lakeseek.kinds.sorted_index.cost import reads_whole
from lakeseek.lru import CACHES
from lakeseek.spark import locate_spark
from tests.lakes import all_rows, data_files, typed_rows, write_file

pytestmark = pytest.mark.spark


def _oracle(rows, column, keys):
    wanted = {k for k in keys if k is not None}
    return sorted({(row[column], row["__file"]) for row in rows if row[column] in wanted}, key=repr)


def _pairs(table, column="key"):
    return sorted(zip(table.column(column).to_pylist(), table.column("file").to_pylist(), strict=True), key=repr)


@pytest.mark.parametrize("column", ["id", "name", "code", "ts", "amount", "region", "payload"])
def test_locate_gives_exactly_the_files_holding_each_key(typed_lake, column):
    rows = all_rows(typed_lake)
    present = sorted({row[column] for row in rows if row[column] is not None}, key=repr)
    keys = [*random.Random(3).sample(present, min(len(present), 40)), None]
    if column == "id":
        keys += [10**9, -7]  # absent
    index = lakeseek.open_index(typed_lake)
    assert _pairs(index.locate(keys, column=column)) == _oracle(rows, column, keys)


def test_locate_seeks_or_scans_each_index_file(typed_lake, monkeypatch):
    index = lakeseek.open_index(typed_lake)
    stats = index.storage.stats
    before = stats.snapshot()
    keys = list(range(0, 1800, 3))  # every chunk of every index file: each is read whole, once
    found = index.locate(keys, column="id")
    assert sorted(set(found.column("key").to_pylist())) == keys
    files = index.root.content.indexes["id"].files
    assert stats.snapshot()["reads"] - before["reads"] <= 2 * len(files)  # footer, then the whole file
    before = stats.snapshot()
    assert index.locate(keys, column="id").equals(found)  # decoded entries are kept: no read
    assert stats.snapshot()["reads"] == before["reads"]
    # Adjacent keys: one chunk, read alone where that costs less than the file (not in these
    # small index files, where a chunk's own decoding costs more than the rest of the file)...
    (holding,) = [f for f in files if f.min <= 900 <= f.max]
    assert reads_whole(holding, 1)
    CACHES["index entries"].clear()  # decoded entries forgotten, footers kept
    before = stats.snapshot()
    index.locate([900, 901, 902], column="id")
    assert stats.snapshot()["reads"] - before["reads"] == 1
    assert stats.snapshot()["bytes_read"] - before["bytes_read"] == holding.size
    # ... and alone where a chunk's decoding costs nothing more.
    monkeypatch.setattr("lakeseek.kinds.sorted_index.cost.CHUNK_OVERHEAD_BYTES", 0)
    CACHES["index entries"].clear()
    before = stats.snapshot()
    index.locate([900, 901, 902], column="id")
    assert stats.snapshot()["reads"] - before["reads"] == 1
    assert stats.snapshot()["bytes_read"] - before["bytes_read"] < holding.size / 2


def test_locate_after_the_lake_changed(lake_copy):
    removed = data_files(lake_copy)[0]
    os.remove(removed)
    write_file(f"{lake_copy}/region=east/part-new.parquet", typed_rows(random.Random(9), 5000, 50))
    rows = all_rows(lake_copy)
    keys = [3, 200, 5001, 5049, 400]
    index = lakeseek.open_index(lake_copy)
    assert _pairs(index.locate(keys, column="id")) == _oracle(rows, "id", keys)
    names = ["alice", "it's", "🙂 emoji"]
    assert _pairs(index.locate(names, column="name")) == _oracle(rows, "name", names)


def test_locate_needs_a_column_when_the_index_has_several(typed_lake):
    index = lakeseek.open_index(typed_lake)
    with pytest.raises(LakeseekError, match="several columns"):
        index.locate([1])
    with pytest.raises(LakeseekError, match="not indexed"):
        index.locate([1.0], column="score")


def test_locate_on_spark_matches_the_oracle(spark, lake_copy):
    write_file(f"{lake_copy}/region=west/part-new.parquet", typed_rows(random.Random(4), 7000, 30))
    rows = all_rows(lake_copy)
    index = lakeseek.open_index(lake_copy)
    keys = [5, 77, 7003, 7029, 123456]
    frame = locate_spark(index, spark.createDataFrame([(k,) for k in keys], "user_id long"), column="id")
    got = sorted(((r["key"], r["file"].removeprefix("file://")) for r in frame.collect()), key=repr)
    assert got == _oracle(rows, "id", keys)
    names = ["alice", "São Paulo", "nobody"]
    frame = locate_spark(index, spark.createDataFrame([(n,) for n in names], "n string"), column="name")
    got = sorted(((r["key"], r["file"].removeprefix("file://")) for r in frame.collect()), key=repr)
    assert got == _oracle(rows, "name", names)


# -- keys of any Python type, against DuckDB reading each file --------------------------------------
_KEYED = {
    "u64": pa.array([2**64 - 1, 1, 7], pa.uint64()),
    "i32": pa.array([5, -(2**31), 2**31 - 1], pa.int32()),
    "dec": pa.array([Decimal("1.50"), Decimal("-3.25"), None], pa.decimal128(5, 2)),
    # Values one double holds several of: a float key names each (Spark casts the column to double).
    "dec20": pa.array([Decimal(2**53), Decimal(2**53 + 1), Decimal(7)], pa.decimal128(20, 0)),
    "i64": pa.array([2**53, 2**53 + 1, 2**62 + 1], pa.int64()),
    "ts": pa.array([dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 2), None], pa.timestamp("us")),
    "tsz": pa.array([dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 2), None], pa.timestamp("us", tz="UTC")),
    "d": pa.array([dt.date(2024, 1, 1), dt.date(1970, 1, 1), None], pa.date32()),
}


@pytest.fixture(scope="module")
def keyed_lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("keyed")
    for number in range(3):  # each file holds its own rotation of the values
        rotated = {name: pa.concat_arrays([values[number:], values[:number]]) for name, values in _KEYED.items()}
        table = pa.table(rotated)
        pq.write_table(table.slice(0, 2), f"{root}/part-{number}.parquet")
    lakeseek.create_index(str(root), list(_KEYED), engine="local")
    return str(root)


def _sql(key: object) -> str:
    """``key`` as the DuckDB literal that writes it."""
    if isinstance(key, str):
        return "'" + key.replace("'", "''") + "'"
    if isinstance(key, dt.datetime):
        return f"TIMESTAMPTZ '{key.isoformat()}'" if key.tzinfo else f"TIMESTAMP '{key.isoformat()}'"
    if isinstance(key, dt.date):
        return f"DATE '{key.isoformat()}'"
    if isinstance(key, float):  # a DOUBLE the column is cast to, as Spark compares them
        return f"{key!r}::DOUBLE"
    return str(key)


def _equals(column: str, key: object) -> str:
    """``column = key`` as Spark compares them, in DuckDB: a string with a decimal (or a
    uint64, Spark's DECIMAL(20, 0)) as doubles."""
    if isinstance(key, str) and (pa.types.is_decimal(_KEYED[column].type) or _KEYED[column].type == pa.uint64()):
        return f"CAST({column} AS DOUBLE) = CAST({_sql(key)} AS DOUBLE)"
    return f"{column} = {_sql(key)}"


def _key_variants(value: object) -> list[object]:
    """Keys around a column value: itself, its text (padded), nearby and far numbers, other types."""
    variants: list[object] = [value, str(value), f" {value} "]
    if isinstance(value, int | Decimal):
        variants += [
            float(value),
            math.nextafter(float(value), math.inf),
            value + Decimal("0.5"),
            -1,
            2**70,
            int(value) + 1,
        ]
    if isinstance(value, dt.datetime):
        variants += [value.replace(tzinfo=dt.timezone.utc), value.date(), value.isoformat(sep=" ")]
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        variants += [dt.datetime.combine(value, dt.time()), dt.datetime.combine(value, dt.time(1))]
    return variants


@pytest.mark.parametrize(
    ("column", "key"),
    [("i64", float(2**53)), ("i64", float(2**62)), ("dec20", float(2**53)), ("dec", 1.5), ("u64", float(2**64))],
)
def test_a_float_key_pairs_every_value_it_equals_as_a_double(keyed_lake, column, key):
    """2**53 + 1 rounds to the double 2**53 (half to even): locate took 2**53 for one integer."""
    files = sorted(glob.glob(f"{keyed_lake}/*.parquet"))
    expected = {path for path in files if duckdb.sql(f"SELECT 1 FROM '{path}' WHERE {_equals(column, key)}").fetchall()}
    pairs = lakeseek.open_index(keyed_lake).locate([key], column=column).to_pylist()
    assert {pair["file"] for pair in pairs} == expected
    assert len(expected) >= 2  # each value is in two of the three files


def _spark_key_type(key: object) -> str:
    """The Spark type of a column of keys like ``key``."""
    if isinstance(key, int):
        return "long" if -(2**63) <= key < 2**63 else "decimal(38,0)"
    if isinstance(key, dt.datetime):
        return "timestamp" if key.tzinfo else "timestamp_ntz"
    return {Decimal: "decimal(38,10)", float: "double", str: "string", dt.date: "date"}[type(key)]


@pytest.mark.spark
@pytest.mark.parametrize("column", list(_KEYED))
def test_locate_spark_pairs_keys_of_every_type_as_locate_does(keyed_lake, spark, column):
    """locate_spark converted a key to the column's type and back: the string ' 5' paired
    nothing where ``locate`` (and Spark's ``column = ' 5'``) pairs 5. Keys of each Spark type
    in turn, against ``locate``; a key ``locate`` refuses fails the Spark job too."""
    from pyspark.sql import functions as F

    index = lakeseek.open_index(keyed_lake)
    # One frame per variant and type: keys of other values, whose pairs cannot hide a missing one.
    frames: dict[tuple[int, str], list] = {}
    for value in _KEYED[column].drop_null().to_pylist():
        for variant, key in enumerate(_key_variants(value)):
            frames.setdefault((variant, _spark_key_type(key)), []).append(key)
    expected, answers = set(), []
    for number, ((_, type_name), keys) in enumerate(frames.items()):
        spark_keys = [Decimal(key) if type_name == "decimal(38,0)" else key for key in keys]
        frame = spark.createDataFrame([(key,) for key in spark_keys], f"k {type_name}")
        try:
            pairs = index.locate(keys, column=column).to_pylist()
        except lakeseek.PredicateTypeError:
            with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
                locate_spark(index, frame, column).collect()
            continue
        expected |= {(number, _naive_utc(pair["key"]), pair["file"]) for pair in pairs}
        answers.append(locate_spark(index, frame, column).select(F.lit(number).alias("frame"), "key", "file"))
    # One Spark job for every frame: a job each took most of a minute.
    rows = functools.reduce(lambda a, b: a.unionByName(b), answers).collect()
    got = {(row["frame"], _naive_utc(row["key"]), row["file"].removeprefix("file://")) for row in rows}
    assert got == expected, (column, frames)


def _naive_utc(key: object) -> object:
    """A key as Spark's rows hold it: an aware timestamp as UTC without its zone (the tests run in UTC)."""
    if isinstance(key, dt.datetime) and key.tzinfo is not None:
        return key.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return key


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_keys_of_any_type_pair_the_files_a_query_finds(keyed_lake, data):
    """``locate`` pairs a key with the files where ``column = key`` holds a row (DuckDB, per
    file), and refuses the keys such a query refuses; floats as DOUBLEs, other numbers by their exact value."""
    column = data.draw(st.sampled_from(list(_KEYED)))
    present = [v for v in _KEYED[column].to_pylist() if v is not None]
    keys = data.draw(
        st.lists(
            st.sampled_from(present).flatmap(lambda value: st.sampled_from(_key_variants(value))),
            min_size=1,
            max_size=4,
        )
    )
    index = lakeseek.open_index(keyed_lake)
    files = sorted(glob.glob(f"{keyed_lake}/*.parquet"))
    expected: set[tuple[str, str]] = set()
    refused = False
    for key in keys:
        try:
            for path in files:
                found = duckdb.sql(f"SELECT 1 FROM '{path}' WHERE {_equals(column, key)} LIMIT 1").fetchall()
                if found:
                    expected.add((repr(key), path))
        except duckdb.Error:
            refused = True
    if refused:
        with pytest.raises(lakeseek.PredicateTypeError):
            index.locate(keys, column=column)
        return
    pairs = index.locate(keys, column=column).to_pylist()
    got = {pair["file"] for pair in pairs}
    assert got == {path for _, path in expected}, (column, keys)


def test_a_string_key_that_is_no_utf8_text_is_refused_in_one_line(typed_lake):
    """A lone surrogate (JSON's "\\ud800", through the service) was a UnicodeEncodeError traceback."""
    index = lakeseek.open_index(typed_lake)
    for keys in (["\ud800"], ["alice", "x\udcff"]):
        with pytest.raises(lakeseek.PredicateTypeError, match="not valid UTF-8 text"):
            index.locate(keys, column="name")


@pytest.mark.spark
def test_locate_spark_of_keys_spark_does_not_compare_is_a_one_line_error(keyed_lake, spark):
    """Timestamps against a bigint column: Spark's AnalysisException named lakeseek's own
    internal column; now a PredicateTypeError names both types."""
    frame = spark.createDataFrame([(dt.datetime(2024, 1, 1),)], "k timestamp_ntz")
    with pytest.raises(lakeseek.PredicateTypeError, match="keys of type timestamp_ntz cannot be compared with"):
        locate_spark(lakeseek.open_index(keyed_lake), frame, "i64")


@pytest.mark.parametrize("kind", ["sorted", "skipping", "cuckoo", "covering"])
def test_a_nanosecond_key_pairs_only_files_holding_it(tmp_path, kind):
    """Keys were cut to the index's microseconds before the files were read: a key of
    ...00.000000001 (a numpy datetime64 or a pandas Timestamp, which pyarrow reads as
    microseconds) paired the file holding ...00.000000000 and missed the one holding it."""
    import numpy as np
    import pandas as pd

    base = 1_704_067_200 * 10**9
    for name, nanoseconds in (("a", base + 1), ("b", base)):
        pq.write_table(pa.table({"ts": pa.array([nanoseconds], pa.timestamp("ns"))}), tmp_path / f"{name}.parquet")
    index = lakeseek.create_index(str(tmp_path), ["ts"], kind=kind, engine="local")
    for key in (np.datetime64(base + 1, "ns"), pd.Timestamp(base + 1, unit="ns")):
        found = index.locate([key], column="ts")
        assert found.column("key").cast(pa.int64()).to_pylist() == [base + 1], key
        assert [os.path.basename(path) for path in found.column("file").to_pylist()] == ["a.parquet"], key


@pytest.mark.parametrize("key", [0, 0.0, -0.0, "0"])
def test_a_zero_key_locates_negative_zero_in_a_column_read_by_scanning(tmp_path, key):
    """An integer partition column the index holds became DOUBLE (a `q=2.5` directory since):
    locate reads the files, where `-0` is -0.0, which `q = 0` finds (Spark's, and lakeseek's
    read); locate of 0 found nothing (Arrow's is_in tells -0.0 from 0.0; NaN it never finds)."""
    lake = tmp_path / "lake"

    def partition(directory: str, ids: list[int]) -> None:
        (lake / directory).mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), lake / directory / "part.parquet")

    partition("q=-0", [4])
    partition("q=1", [1])
    lakeseek.create_index(str(lake), ["q", "id"], engine="local")
    partition("q=2.5", [5])
    partition("q=NaN", [6])
    index = lakeseek.open_index(str(lake))
    assert index.read("q = 0").column("id").to_pylist() == [4]
    pairs = index.locate([key, float("nan")], column="q").to_pylist()
    found = sorted((str(pair["key"]), os.path.relpath(pair["file"], lake)) for pair in pairs)
    assert found == [("-0.0", "q=-0/part.parquet"), ("nan", "q=NaN/part.parquet")]


@pytest.mark.parametrize("keys", [12, "12", b"12", None])
def test_keys_that_are_not_a_list_of_keys_are_refused(tmp_path, keys):
    """`locate(12)` was a TypeError traceback; `locate("12")` looked up '1' and '2'."""
    (tmp_path / "lake").mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2, 12], pa.int64())}), tmp_path / "lake" / "part.parquet")
    index = lakeseek.create_index(str(tmp_path / "lake"), ["id"], engine="local")
    with pytest.raises(lakeseek.InvalidArgumentError, match="keys are a list or an Arrow array of keys"):
        index.locate(keys)
    with pytest.raises(lakeseek.InvalidArgumentError, match="a column is named by a string, not int"):
        index.locate([1], column=1)
    assert index.locate(pa.chunked_array([[12], [1]])).column("key").to_pylist() == [1, 12]
