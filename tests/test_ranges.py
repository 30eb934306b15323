"""Ranges, LIKE, the cost-based fallback and AND ordering, against the full-scan oracle."""

from __future__ import annotations

import pytest

import lakeseek
from lakeseek.exceptions import PredicateParseError
from lakeseek.planning import like_prefix
from tests.lakes import INDEXABLE, files_with, ids, matching, to_sql

pytestmark = pytest.mark.spark


def _check(index, rows, tree, exact=True):
    where = to_sql(tree)
    assert ids(index.read(where)) == ids(matching(rows, tree)), where
    plan = index.plan(where)
    files = index.files(where)
    assert set(files) >= set(files_with(rows, tree)), where
    if plan.index_used and exact:
        # Entries are exact: on a fresh lake the index names exactly the files with a match
        # (for one column: across columns, an AND can match in different rows of a file).
        assert files == files_with(rows, tree), where
    if not plan.index_used:
        assert len(files) == plan.total_files, where
    return plan


@pytest.mark.parametrize("column", INDEXABLE)
@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_ranges_on_every_column(index, rows, column, op):
    values = sorted({row[column] for row in rows if row[column] is not None})
    for value in (values[0], values[len(values) // 2], values[-1]):
        _check(index, rows, (op, column, value))


@pytest.mark.parametrize("column", ["id", "name", "day", "ts", "amount", "payload"])
def test_between_and_open_ranges(index, rows, column):
    values = sorted({row[column] for row in rows if row[column] is not None})
    low, high = values[len(values) // 4], values[len(values) // 2]
    _check(index, rows, ("and", (">=", column, low), ("<=", column, high)))
    _check(index, rows, ("and", (">", column, low), ("<", column, high)))
    _check(index, rows, ("and", (">", column, high), ("<", column, low)))  # empty


def test_between_sql(index, rows):
    tree = ("and", (">=", "id", 100), ("<=", "id", 180))
    plan = index.plan("id BETWEEN 100 AND 180")
    assert plan.index_used and plan.files == index.plan(to_sql(tree)).files
    assert ids(index.read("id BETWEEN 100 AND 180")) == ids(matching(rows, tree))


@pytest.mark.parametrize("pattern", ["ali%", "S%", "São%", "🙂%", "x%", "%a%", "under_score", "", "%", "it's%", "B_b"])
def test_like(index, rows, pattern):
    _check(index, rows, ("like", "name", pattern))


def test_like_prefix_reads_the_index():
    assert like_prefix("ab%c") == "ab"
    assert like_prefix("a_c%") == "a"
    assert like_prefix("50\\% off%") == "50% off"
    assert like_prefix("a\\\\b%") == "a\\b"
    assert like_prefix("%x") == ""


def test_narrow_range_on_a_clustered_column_reads_few_files(index, rows):
    plan = _check(index, rows, ("and", (">=", "id", 160), ("<", "id", 170)))
    assert plan.index_used and len(plan.files) == 1
    assert plan.cost.with_index.total < plan.cost.scan.total


def test_wide_range_falls_back_to_a_scan(index, rows):
    # code is spread over every file: the index cannot remove any file, so it is not read.
    stats = index.storage.stats
    before = stats.snapshot()["reads"]
    plan = _check(index, rows, (">=", "code", 0))
    assert not plan.index_used and "saves" in plan.reason
    assert plan.cost.with_index.total >= plan.cost.scan.total
    assert stats.snapshot()["reads"] - before == 0


def test_and_looks_up_the_most_selective_column_first(index, rows):
    target = rows[len(rows) // 3]["id"]
    plan = _check(index, rows, ("and", ("=", "code", 7), ("=", "id", target)), exact=False)
    assert plan.index_used and plan.indexed_columns_used[0] == "id"
    tree = ("and", ("=", "flag", True), ("and", ("=", "id", target), ("=", "region", "east")))
    plan = _check(index, rows, tree, exact=False)
    assert plan.indexed_columns_used[0] == "id"


def test_unserved_parts_are_explained(index, rows):
    plan = _check(index, rows, ("and", ("=", "id", 5), ("<", "score", 1.0)), exact=False)
    assert plan.index_used and any("score" in note for note in plan.notes)
    plan = _check(index, rows, ("<>", "id", 5))
    assert not plan.index_used


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        ("back\\\\s%", lambda name: name.startswith("back\\s")),
        ("back\\%", lambda name: name == "back%"),
        ("50\\% off", lambda name: name == "50% off"),
        ("%\\_%", lambda name: "_" in name),
        ("under\\_score", lambda name: name == "under_score"),
    ],
)
def test_like_escapes_as_spark_reads_them(index, rows, pattern, matches):
    """A backslash escapes ``%``, ``_`` and itself (Spark's rule); the index and the scan agree."""
    where = "name LIKE '" + pattern.replace("'", "''") + "'"
    expected = sorted(row["id"] for row in rows if row["name"] is not None and matches(row["name"]))
    assert expected or pattern.startswith("back"), pattern
    assert ids(index.read(where)) == expected == ids(index.scan(where)), where
    assert set(index.files(where)) >= {row["__file"] for row in rows if row["id"] in set(expected)}, where


@pytest.mark.parametrize("pattern", ["back\\s%", "a%\\", "a\\b"])
def test_like_escapes_spark_rejects_are_errors(index, pattern):
    with pytest.raises(PredicateParseError, match="LIKE pattern"):
        index.read(f"name LIKE '{pattern}'")


def test_literals_finer_than_a_timestamp_column_compare_as_spark_does(tmp_path, spark):
    """A microsecond literal against a millisecond column compares in microseconds
    (Spark's promotion): ``= 1.5 ms`` holds for no row, ``< 10.5 ms`` keeps 10 ms."""
    import datetime as dt
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    root = str(tmp_path / "lake")
    base = dt.datetime(2020, 1, 1)
    for number in range(3):
        moments = [base + dt.timedelta(milliseconds=number * 10 + i) for i in range(10)]
        table = pa.table({"id": range(number * 10, number * 10 + 10), "at": pa.array(moments, pa.timestamp("ms"))})
        os.makedirs(root, exist_ok=True)
        pq.write_table(table, f"{root}/part-{number}.parquet")
    lakeseek.create_index(root, "at", spark=spark)
    index = lakeseek.open_index(root)
    for where, expected in (
        ("at = TIMESTAMP '2020-01-01 00:00:00.0015'", []),
        ("at <> TIMESTAMP '2020-01-01 00:00:00.0015'", list(range(30))),
        ("at >= TIMESTAMP '2020-01-01 00:00:00.0195'", list(range(20, 30))),
        ("at < TIMESTAMP '2020-01-01 00:00:00.0105'", list(range(11))),
        ("at <= TIMESTAMP '2020-01-01 00:00:00.0005'", [0]),
        ("at > TIMESTAMP '2020-01-01 00:00:00.0285'", [29]),
        ("NOT (at = TIMESTAMP '2020-01-01 00:00:00.0015')", list(range(30))),
        ("at IN (TIMESTAMP '2020-01-01 00:00:00.0211', TIMESTAMP '2020-01-01 00:00:00.009')", [9]),
    ):
        assert ids(index.scan(where)) == expected, where
        assert ids(index.read(where)) == expected, where
        frame = spark.read.parquet(root).where(where)
        assert sorted(row.id for row in frame.collect()) == expected, where
