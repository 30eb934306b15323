"""Skipping sketches of bounds alone made from a table format's own per-file statistics (Delta's
``add`` statistics, Iceberg's manifest metrics) instead of reading the data files, and still
exact: Delta cuts timestamps to milliseconds and (Spark) strings to 32 characters, Iceberg
cuts strings to 16; every answer is compared with the table as its own library reads it
(DuckDB over that Arrow table), at the bounds the statistics record."""

from __future__ import annotations

import datetime
import decimal
import json
import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeseek
from lakeseek.kinds.file_keys import FileKeyReader
from tests.lakes import sql_literal

deltalake = pytest.importorskip("deltalake")

UTC = datetime.timezone.utc
BOUNDS_ONLY = {"kind": "skipping", "engine": "local", "bloom": False, "value_list": 0}
COLUMNS = ["id", "name", "ts", "day", "amount", "flag", "region"]


def _rows(rng: random.Random, count: int, first: int) -> pa.Table:
    start = datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(days=rng.randrange(30))
    letters = "ab\u00e9\u4e2d\U0001f600"
    return pa.table(
        {
            "id": pa.array(range(first, first + count), pa.int64()),
            "name": [
                None if rng.random() < 0.1 else "".join(rng.choice(letters) for _ in range(rng.randrange(45)))
                for _ in range(count)
            ],
            "ts": pa.array(
                [start + datetime.timedelta(microseconds=rng.randrange(10**9)) for _ in range(count)],
                pa.timestamp("us", tz="UTC"),
            ),
            "day": pa.array([start.date() + datetime.timedelta(days=rng.randrange(5)) for _ in range(count)]),
            "amount": pa.array(
                [decimal.Decimal(rng.randrange(-(10**6), 10**6)) / 100 for _ in range(count)], pa.decimal128(10, 2)
            ),
            "flag": [rng.choice([True, False, None]) for _ in range(count)],
            "region": [rng.choice(["eu", "us"]) for _ in range(count)],
        }
    )


def _boundary_predicates(table: pa.Table, rng: random.Random, count: int) -> list[str]:
    """Predicates at the table's values: equal to, and ranges ending at, values that are some
    file's lowest or highest (where cut statistics would lose them), and IS NULL."""
    wheres = []
    for _ in range(count):
        column = rng.choice(COLUMNS)
        values = [v for v in table.column(column).to_pylist() if v is not None]
        if not values or rng.random() < 0.1:
            wheres.append(f"{column} IS NULL")
            continue
        value = rng.choice([min(values), max(values), rng.choice(values)])
        operator = rng.choice(["=", ">=", ">", "<=", "<"])
        wheres.append(f"{column} {operator} {sql_literal(value)}")
    return wheres


def _assert_exact(index: lakeseek.Index, rows: pa.Table, wheres: list[str]) -> None:
    for where in wheres:
        expected = sorted(row[0] for row in duckdb.sql(f"SELECT id FROM rows WHERE {where}").fetchall())
        assert sorted(index.read(where).column("id").to_pylist()) == expected, where


@pytest.fixture()
def files_read(monkeypatch):
    """The data files whose keys a build read."""
    read: list[str] = []
    original = FileKeyReader.distinct_keys

    def distinct_keys(self, path, *args, **kwargs):
        read.append(path)
        return original(self, path, *args, **kwargs)

    monkeypatch.setattr(FileKeyReader, "distinct_keys", distinct_keys)
    return read


def _delta_table(path: Path, seed: int, writes: int = 4) -> pa.Table:
    rng = random.Random(seed)
    for write in range(writes):
        deltalake.write_deltalake(str(path), _rows(rng, 40, write * 40), mode="append", partition_by=["region"])
    return deltalake.DeltaTable(str(path)).to_pyarrow_table()


def test_a_delta_tables_statistics_sketch_its_files_without_reading_them(tmp_path, files_read):
    rows = _delta_table(tmp_path / "t", seed=1)
    index = lakeseek.create_index(str(tmp_path / "t"), COLUMNS, **BOUNDS_ONLY)
    assert files_read == []
    assert len(index.files("id = 3")) == 2 < len(index.lake_state().files)  # the first write, both regions
    _assert_exact(index, rows, _boundary_predicates(rows, random.Random(2), 150))


def test_columns_a_delta_table_keeps_no_statistics_of_are_read(tmp_path, files_read):
    path = str(tmp_path / "t")
    rows = _rows(random.Random(7), 50, 0)
    configuration = {"delta.dataSkippingNumIndexedCols": "1"}
    deltalake.write_deltalake(path, rows, partition_by=["region"], configuration=configuration)
    index = lakeseek.create_index(path, ["id", "region"], **BOUNDS_ONLY)
    assert files_read == []
    index = lakeseek.create_index(path, ["id", "name"], name="names", **BOUNDS_ONLY)
    assert len(files_read) == len(index.lake_state().files) == 2
    _assert_exact(index, rows, _boundary_predicates(rows, random.Random(8), 30))


def test_a_delta_sketch_with_members_reads_the_files(tmp_path, files_read):
    rows = _delta_table(tmp_path / "t", seed=3, writes=2)
    index = lakeseek.create_index(str(tmp_path / "t"), ["id", "name"], kind="skipping", engine="local")
    assert len(files_read) == len(index.lake_state().files)
    _assert_exact(index, rows, _boundary_predicates(rows, random.Random(4), 40))


def test_spark_cut_strings_and_appends_stay_exact(tmp_path, files_read):
    """Spark's Delta writer cuts a string's maximum to 32 characters and appends U+FFFF, which
    sorts below a longer value's 4-byte characters: such a maximum is not taken."""
    path = tmp_path / "t"
    long_name = "x" * 32 + "\U0001f600"
    deltalake.write_deltalake(str(path), pa.table({"id": [1, 2], "name": ["a", long_name]}))
    log = next((path / "_delta_log").glob("*0.json"))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    for line in lines:
        if "add" in line:
            stats = json.loads(line["add"]["stats"])
            stats["maxValues"]["name"] = "x" * 32 + "\uffff"
            line["add"]["stats"] = json.dumps(stats)
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    index = lakeseek.create_index(str(path), ["name"], **BOUNDS_ONLY)
    assert len(files_read) == 1
    assert index.read(f"name = '{long_name}'").column("id").to_pylist() == [2]

    deltalake.write_deltalake(str(path), pa.table({"id": [3, 4], "name": ["x" * 31, "y"]}), mode="append")
    refreshed = lakeseek.refresh_index(str(path), "incremental", engine="local")
    assert len(files_read) == 1  # the new file's maximum is shorter than a cut one: whole, and taken
    assert refreshed.read("name = 'y'").column("id").to_pylist() == [4]
    assert refreshed.read(f"name = '{'x' * 31}'").column("id").to_pylist() == [3]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32))
def test_generated_delta_tables_read_a_full_scans_rows(tmp_path_factory, seed):
    path = tmp_path_factory.mktemp("delta") / "t"
    rows = _delta_table(path, seed, writes=3)
    index = lakeseek.create_index(str(path), COLUMNS, **BOUNDS_ONLY)
    _assert_exact(index, rows, _boundary_predicates(rows, random.Random(seed), 25))


def _iceberg_catalog(tmp_path):
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse")
    catalog.create_namespace("ns")
    return catalog


def test_iceberg_string_bounds_are_not_taken(tmp_path, files_read):
    """From an adversarial hunt: pyiceberg writes a file's string bounds from its row groups'
    statistics, and a row group holding a string over 4 KiB has none: 'a' and 'zzz…' lay
    outside the bounds ['m', 'm'] it wrote."""
    catalog = _iceberg_catalog(tmp_path)
    table = catalog.create_table(
        "ns.t",
        schema=pa.schema([("id", pa.int64()), ("s", pa.string())]),
        properties={"write.parquet.row-group-limit": "2"},
    )
    table.append(pa.table({"id": [1, 2, 3], "s": ["a", "z" * 5000, "m"]}))
    location = table.location().removeprefix("file://")
    index = lakeseek.create_index(location, ["s"], **BOUNDS_ONLY)
    assert len(files_read) == 1
    _assert_exact(index, table.scan().to_arrow(), ["s = 'a'", "s < 'b'", "s LIKE 'z%'", "s = 'm'"])


def test_an_iceberg_tables_metrics_sketch_its_files_without_reading_them(tmp_path, files_read):
    catalog = _iceberg_catalog(tmp_path)
    rng = random.Random(5)
    first = _rows(rng, 40, 0)
    table = catalog.create_table("ns.events", schema=first.schema)
    for write in range(4):  # names longer than the 16 characters Iceberg keeps of a bound
        table.append(first if write == 0 else _rows(rng, 40, write * 40))
    location = table.location().removeprefix("file://")
    bounded = [column for column in COLUMNS if column not in ("name", "region")]  # strings are read (see above)
    index = lakeseek.create_index(location, bounded, **BOUNDS_ONLY)
    assert files_read == []
    rows = catalog.load_table("ns.events").scan().to_arrow()
    assert len(index.files("id = 3")) == 1
    _assert_exact(index, rows, _boundary_predicates(rows, random.Random(6), 150))
