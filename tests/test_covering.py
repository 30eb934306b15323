"""The covering kind: reads answered from the index's own rows, against a full scan.

Generated predicates over every indexable type (NULLs included) read exactly a full scan's
rows, the index carrying every column; a read of covered columns opens no data file but those
added or rewritten since indexing, and stays exact as the lake changes and the index is
refreshed and optimized; a read needing a column the index lacks, or a predicate it cannot
look up, reads the lake; damage costs a full scan, never rows.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import lakeseek
from lakeseek.cli.main import main
from lakeseek.exceptions import LakeseekError
from lakeseek.io import counting
from tests.lakes import INDEXABLE, all_rows, check_generated_predicates, fuzz_settings, ids, make_typed_lake


@pytest.fixture(scope="module")
def covered_lake(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("covering") / "lake")
    make_typed_lake(root, files_per_region=4, rows_per_file=40, seed=6)
    # Small row groups: lookups pick among many; every lake column carried.
    lakeseek.create_index(root, INDEXABLE, kind="covering", engine="local", include=["score"], chunk_rows=16)
    return root, all_rows(root)


def test_a_column_asked_for_twice_is_refused_as_by_a_read_of_the_lake(covered_lake):
    """A covered read took `id, name, id`: JSON lines dropped one `id`, Arrow kept both, and CSV
    wrote three names over rows of two fields (found by a hunt on `lakeseek serve`)."""
    index = lakeseek.open_index(covered_lake[0])
    assert index.query("id = 5", ["id", "name"])[1].from_index
    for columns in (["id", "name", "id"], ["id", "ID"]):
        with pytest.raises(lakeseek.LakeseekError, match="column 'id' is asked for twice"):
            index.read("id = 5", columns)


@fuzz_settings(60)
@given(st.data())
def test_generated_predicates_read_a_full_scans_rows(covered_lake, data):
    root, rows = covered_lake
    check_generated_predicates(lakeseek.open_index(root), rows, data)


def _lake(root: str, files: int, start: int = 0) -> None:
    os.makedirs(root, exist_ok=True)
    for number in range(start, start + files):
        ids_ = list(range(number * 1000, number * 1000 + 1000))
        table = pa.table(
            {
                "id": ids_,
                "user": [f"u{i % 313}" if i % 41 else None for i in ids_],
                "amount": [i / 4 for i in ids_],
                "note": ["n"] * len(ids_),
            }
        )
        pq.write_table(table, f"{root}/part-{number:03d}.parquet")


def _same(index: lakeseek.Index, where: str, columns: list[str]) -> tuple[lakeseek.Plan, int]:
    """The plan of a read equal to a full scan's, and the data files the read opened."""
    with counting() as io:
        table, plan = index.query(where, columns)
    expected = index.scan(where, columns)
    assert sorted(table.to_pylist(), key=str) == sorted(expected.to_pylist(), key=str), where
    assert table.num_rows == expected.num_rows, where
    return plan, io.data_files


def test_covered_reads_open_no_data_file_and_stay_exact_as_the_lake_changes(tmp_path):
    root = str(tmp_path / "lake")
    _lake(root, 6)
    lakeseek.create_index(root, ["id", "user"], kind="covering", engine="local", include="amount", chunk_rows=128)
    index = lakeseek.open_index(root, lake_listing="once")
    index.read("id = 1", ["id", "amount"])  # warm: the footers read once
    for where in ["id = 4321", "id IN (3, 5999)", "user = 'u7'", "user IS NULL", "id >= 2990 AND id < 3010"]:
        plan, opened = _same(index, where, ["id", "amount"])
        assert plan.from_index and plan.files == [] and opened == 0, where
    assert _same(index, "id = 4321", [])[0].from_index  # a count
    assert any("answered from its rows" in note for note in index.explain("id = 4321").notes)
    assert not any("answered from its rows" in note for note in index.explain("amount > 3").notes)
    both = lakeseek.open_indexes(root).explain("user = 'u7'")
    assert any("index 'default'" in note and "answered from its rows" in note for note in both.notes)
    assert not _same(index, "id = 4321", ["note"])[0].from_index  # a column the index lacks
    assert not _same(index, "id = 4321 OR amount > 1400", ["id"])[0].from_index  # no lookup covers the OR

    os.remove(f"{root}/part-001.parquet")
    _lake(root, 1, start=6)
    pq.write_table(
        pa.table({"id": [2500], "user": ["new"], "amount": [1.0], "note": ["m"]}), f"{root}/part-002.parquet"
    )
    stale = lakeseek.open_index(root)
    for where in ["id = 1500", "id = 2500", "id = 2501", "id = 6001", "user = 'new'"]:
        plan, opened = _same(stale, where, ["id", "user", "amount"])
        assert plan.from_index and sorted(plan.files) == ["part-002.parquet", "part-006.parquet"], where
        assert opened == 2, where

    lakeseek.refresh_index(root, "incremental", engine="local")
    _lake(root, 1, start=7)
    lakeseek.refresh_index(root, "incremental", engine="local")
    lakeseek.optimize_index(root, "quick", engine="local")
    lakeseek.optimize_index(root, "full", engine="local")
    fresh = lakeseek.open_index(root)
    assert len(fresh.root.content.segments_of("id")) == 1
    for where in ["id = 1500", "id = 2500", "id = 7001", "user = 'u7'", "user IS NULL"]:
        plan, opened = _same(fresh, where, ["id", "user", "amount"])
        assert plan.from_index and plan.files == [] and opened == 0, where


def test_a_damaged_row_file_costs_a_full_scan_not_rows(tmp_path):
    root = str(tmp_path / "lake")
    _lake(root, 3)
    lakeseek.create_index(root, ["id"], kind="covering", engine="local", include=["amount"])
    index = lakeseek.open_index(root)
    row_file = index.root.content.segments[0].row_files[0]
    with open(f"{index.index_dir}/{row_file.path}", "r+b") as damaged:
        damaged.truncate(row_file.size // 2)
    fresh = lakeseek.open_index(root)
    plan, _ = _same(fresh, "id = 1234", ["id", "amount"])
    assert not plan.from_index and not plan.index_used and "damaged" in plan.reason
    assert fresh.status().problems


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bloom": True}, "the covering index has no option 'bloom'"),
        ({"include": 3}, "include must be a list of column names"),
        ({"chunk_rows": 0}, "chunk_rows must be a whole number from 1 to"),
    ],
)
def test_bad_options_are_named(tmp_path, options, message):
    root = str(tmp_path / "lake")
    _lake(root, 1)
    with pytest.raises(LakeseekError, match=message):
        lakeseek.create_index(root, ["id"], kind="covering", engine="local", **options)


def test_the_cli_creates_a_covering_index_and_reads_from_it(tmp_path):
    root = str(tmp_path / "lake")
    _lake(root, 2)
    runner = CliRunner()
    options = ["--kind", "covering", "--option", "include=amount,user", "--engine", "local"]
    created = runner.invoke(main, ["create", root, "--columns", "id", *options])
    assert created.exit_code == 0, created.output
    assert lakeseek.open_index(root).root.content.include == ("amount", "user")
    rows = runner.invoke(main, ["query", root, "--where", "id = 1500", "--columns", "id,amount", "--format", "csv"])
    assert rows.exit_code == 0 and rows.output.splitlines() == ["id,amount", "1500,375.0"]
    assert ids(lakeseek.open_index(root).read("id = 1500", ["id"])) == [1500]


def test_from_an_adversarial_hunt_counts_widened_and_nested_columns_stay_exact(tmp_path):
    root = str(tmp_path / "lake")
    os.makedirs(root)
    nested = pa.table(
        {
            "k": [1, 2, 2],
            "c": pa.array([10, 20, 30], pa.int32()),
            "l": [[1], [2, 3], None],
            "st": [{"x": 1}, {"x": 2}, None],
        }
    )
    pq.write_table(nested, f"{root}/f1.parquet")
    lakeseek.create_index(root, ["k"], kind="covering", engine="local", include=["c", "l", "st"], chunk_rows=1)
    index = lakeseek.open_index(root)
    assert _same(index, "k = 2", ["l", "st"])[0].from_index  # nested columns, several leaf chunks
    # A count over the index's rows and a file added since: both parts keep their rows.
    widened = pa.table({"k": [2], "c": pa.array([2**40], pa.int64()), "l": [[4]], "st": [{"x": 3}]})
    pq.write_table(widened, f"{root}/f2.parquet")
    stale = lakeseek.open_index(root)
    plan, _ = _same(stale, "k = 2", [])
    assert plan.from_index and stale.query("k = 2", [])[0].num_rows == 3
    # An included column widened: the refresh rebuilds, and optimize and covered reads work.
    lakeseek.refresh_index(root, "incremental", engine="local")
    lakeseek.optimize_index(root, "full", engine="local")
    refreshed = lakeseek.open_index(root)
    assert refreshed.root.schema.field("c").type == pa.int64()
    assert _same(refreshed, "k = 2", ["k", "c"])[0].from_index


def test_a_covering_index_whose_columns_the_lake_widened_explains_and_reads(tmp_path):
    """explain looked a widened column up in the index's old type: pyarrow's ArrowInvalid."""
    from decimal import Decimal

    import duckdb

    root = tmp_path / "lake"
    root.mkdir()
    old = {
        "id": pa.array([1, 2**31 - 1], pa.int32()),
        "x": pa.array([Decimal("1.25"), Decimal(2)], pa.decimal128(5, 2)),
    }
    pq.write_table(pa.table(old), root / "a.parquet")
    lakeseek.create_index(str(root), ["id", "x"], kind="covering", engine="local")
    new = {"id": pa.array([2**31], pa.int64()), "x": pa.array([Decimal("1.2501")], pa.decimal128(10, 4))}
    pq.write_table(pa.table(new), root / "b.parquet")
    index = lakeseek.open_index(str(root))
    for where in ("id > 2147483646 AND id < 2147483649", "id = 2147483648", "x > 1.25 AND x < 1.26", "x = 1.2501"):
        scan = f"read_parquet('{root}/*.parquet', union_by_name = true)"
        expected = sorted(row[0] for row in duckdb.sql(f"SELECT id FROM {scan} WHERE {where}").fetchall())
        assert sorted(index.read(where).column("id").to_pylist()) == expected, where
        assert index.explain(where).candidate_files >= 1, where


def test_a_lake_column_named_like_the_index_own_ones_is_refused(tmp_path):
    root = str(tmp_path / "lake")
    os.makedirs(root)
    pq.write_table(pa.table({"a": [1], "__lakeseek_key": [2]}), f"{root}/f.parquet")
    with pytest.raises(lakeseek.UnsupportedColumnError, match="'__lakeseek_key' cannot be carried"):
        lakeseek.create_index(root, ["a"], kind="covering", engine="local", include=["__lakeseek_key"])


@pytest.mark.spark
def test_to_spark_answers_covered_queries_from_the_index_rows(spark, tmp_path):
    from lakeseek.spark import to_spark

    root = str(tmp_path / "lake")
    _lake(root, 4)
    lakeseek.create_index(root, ["id", "user"], kind="covering", engine="local", include="amount", chunk_rows=128)
    # Files added since indexing, one of them holding no match: an empty batch between the
    # index's rows and the other file's, after which PySpark's createDataFrame dropped every row.
    pq.write_table(pa.table({"id": [5000], "user": ["x"], "amount": [1.0], "note": ["k"]}), f"{root}/part-008.parquet")
    pq.write_table(pa.table({"id": [77], "user": ["new"], "amount": [2.5], "note": ["m"]}), f"{root}/part-009.parquet")
    index = lakeseek.open_index(root)
    parquet = spark.read.parquet(root)
    for where, columns in [
        ("id = 1234", ["id", "amount"]),
        ("user = 'u7' AND amount > 100", ["amount", "user"]),
        ("id IN (77, 3999)", ["id"]),
        ("user IS NULL", ["user", "id"]),
        ("id = 1234", None),  # `note` is not carried: read from the files
    ]:
        with counting() as io:
            frame = to_spark(index, spark, where, columns)
        expected = parquet.where(where).select(*(columns or parquet.columns))
        assert frame.columns == expected.columns, where
        assert sorted(map(tuple, frame.collect())) == sorted(map(tuple, expected.collect())), where
        if columns is not None:
            assert io.data_files == 2, where  # the files added since indexing, only


@pytest.mark.spark
def test_spark_sql_over_the_covering_frame_reads_the_index_files_and_stays_exact(spark, tmp_path):
    from pyspark.sql import functions as F

    from lakeseek.spark import covering_frame

    root = str(tmp_path / "lake")
    _lake(root, 5)
    lakeseek.create_index(root, ["id", "user"], kind="covering", engine="local", include="amount", chunk_rows=128)
    wheres = ["id = 1234", "id IN (77, 3999)", "user = 'u7' AND amount > 100", "user IS NULL", "id BETWEEN 10 AND 2100"]

    def check(expect_files: set[str]) -> None:
        index = lakeseek.open_index(root)
        covering_frame(index, spark, "id").createOrReplaceTempView("covered")
        lake = spark.read.parquet(root).select("id", "user", "amount")
        for where in [*wheres, "TRUE"]:
            found = spark.sql(f"SELECT * FROM covered WHERE {where}")
            assert found.columns == lake.columns
            assert sorted(map(tuple, found.collect())) == sorted(map(tuple, lake.where(where).collect())), where
        read = {row[0].rsplit("/", 1)[-1] for row in spark.table("covered").select(F.input_file_name()).collect()}
        assert {name for name in read if name.startswith("part-")} == expect_files

    check(set())  # only the index's row files
    os.remove(f"{root}/part-001.parquet")
    _lake(root, 1, start=6)
    pq.write_table(
        pa.table({"id": [2500], "user": ["new"], "amount": [1.0], "note": ["m"]}), f"{root}/part-002.parquet"
    )
    check({"part-002.parquet", "part-006.parquet"})  # the hybrid scan: new and rewritten files
    lakeseek.refresh_index(root, "incremental", engine="local")
    check(set())
    with pytest.raises(LakeseekError, match="carries no rows"):
        lakeseek.create_index(root, ["id"], name="ids", engine="local")
        covering_frame(lakeseek.open_index(root, name="ids"), spark)


@pytest.mark.spark
def test_a_covering_frame_casts_columns_the_lake_widened(spark, tmp_path):
    """A file added since indexing holds the key column as a bigint and a carried float as a
    double: the row files' values are cast (the columns were left out, and a query on the key
    failed in Spark)."""
    from lakeseek.spark import covering_frame

    root = str(tmp_path / "lake")
    os.makedirs(root)
    first = {
        "id": pa.array([1, 2], pa.int64()),
        "a": pa.array([1, 2], pa.int32()),
        "f": pa.array([0.5, 1.5], pa.float32()),
    }
    pq.write_table(pa.table(first), f"{root}/p0.parquet")
    lakeseek.create_index(root, ["a"], kind="covering", engine="local", include=["id", "f"])
    added = {"id": pa.array([3], pa.int64()), "a": pa.array([1], pa.int64()), "f": pa.array([2.5], pa.float64())}
    pq.write_table(pa.table(added), f"{root}/p1.parquet")
    frame = covering_frame(lakeseek.open_index(root), spark, "a")
    assert frame.columns == ["a", "id", "f"]
    assert sorted(map(tuple, frame.collect())) == [(1, 1, 0.5), (1, 3, 2.5), (2, 2, 1.5)]
    assert sorted(row["id"] for row in frame.where("a = 1").collect()) == [1, 3]
