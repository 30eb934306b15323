"""Ranges, LIKE, the cost-based fallback and AND ordering, against the full-scan oracle."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeseek
from lakeseek.exceptions import PredicateParseError
from tests.lakes import INDEXABLE, files_with, ids, matching, to_sql

pytestmark = pytest.mark.spark


def _check(index, rows, tree, exact=True, used=None):
    """Rows as the oracle's, candidate files covering them; ``used``: whether the index must be used."""
    where = to_sql(tree)
    assert ids(index.read(where)) == ids(matching(rows, tree)), where
    plan = index.plan(where)
    if used is not None:
        assert plan.index_used == used, (where, plan.reason)
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
    if op == ">":
        # Past the largest key: the index says no file can match, without reading a data file.
        plan = _check(index, rows, (">", column, values[-1]), used=True)
        assert plan.files == [], plan.files
    if column == "id":
        # Unique, clustered ids: a range from the middle keeps about half of the files.
        plan = _check(index, rows, (op, column, values[len(values) // 2]), used=True)
        assert 0 < len(plan.files) < plan.total_files, plan.files


@pytest.mark.parametrize("column", ["id", "name", "day", "ts", "amount", "payload"])
def test_between_and_open_ranges(index, rows, column):
    values = sorted({row[column] for row in rows if row[column] is not None})
    low, high = values[len(values) // 4], values[len(values) // 2]
    for tree in (("and", (">=", column, low), ("<=", column, high)), ("and", (">", column, low), ("<", column, high))):
        plan = _check(index, rows, tree, used=True if column == "id" else None)
        if column == "id":  # clustered: the range's files only
            assert 0 < len(plan.files) < plan.total_files, plan.files
    empty = _check(index, rows, ("and", (">", column, high), ("<", column, low)), used=True)
    assert empty.files == []  # merged into one empty range: no file, no scan


def test_between_sql(index, rows):
    tree = ("and", (">=", "id", 100), ("<=", "id", 180))
    plan = index.plan("id BETWEEN 100 AND 180")
    assert plan.index_used and plan.files == index.plan(to_sql(tree)).files
    assert ids(index.read("id BETWEEN 100 AND 180")) == ids(matching(rows, tree))


@pytest.mark.parametrize(
    ("pattern", "used"),
    [
        ("ali%", True),
        ("S%", True),
        ("São%", True),
        ("🙂%", None),  # a prefix above every other key: the cost model sees the whole file
        ("x%", True),
        ("%a%", None),  # no prefix: every key
        ("under_score", True),
        ("", None),
        ("%", None),
        ("it's%", True),
        ("B_b", True),
    ],
)
def test_like(index, rows, pattern, used):
    # Every file holds most names, so a LIKE on name cannot remove files here (a prefix on
    # region can: see below); with a prefix, the index is still read and names exactly the
    # files holding a match.
    _check(index, rows, ("like", "name", pattern), used=used)


@pytest.mark.parametrize("pattern", ["Sã%", "e%"])
def test_like_on_a_partition_column_keeps_its_files(index, rows, pattern):
    plan = _check(index, rows, ("like", "region", pattern), used=True)
    assert len(plan.files) == 3 < plan.total_files  # the files of one region of four


def test_like_prefix_reads_the_index(typed_lake, rows, monkeypatch):
    """A LIKE with a literal prefix is a key range: a cold lookup reads the index file's
    footer and the chunks holding the prefix (not the whole file), a warm one nothing (the
    footer and the decoded chunks are kept)."""
    from lakeseek.caches import clear_cache
    from lakeseek.kinds.keys import KeyRange
    from lakeseek.kinds.sorted_index.index_file import read_footer

    # This lake's index files are small: read whole by cost (test_locate checks that choice).
    monkeypatch.setattr("lakeseek.kinds.sorted_index.cost.CHUNK_OVERHEAD_BYTES", 0)
    clear_cache()
    index = lakeseek.open_index(typed_lake)  # a new handle, nothing cached: no footer read yet
    (info,) = index.root.content.indexes["name"].files
    footer = read_footer(index.storage, f"{index.index_dir}/{info.path}", info, pa.string(), False)
    prefix = KeyRange("ali", "alj", True, False)
    chunks = sum(prefix.overlaps(low, high) for low, high in zip(footer.chunk_min, footer.chunk_max, strict=True))
    assert 1 <= chunks < info.chunks
    stats = index.storage.stats
    before = stats.snapshot()
    plan = index.plan("name LIKE 'ali%'")
    after = stats.snapshot()
    assert plan.index_used and plan.indexed_columns_used == ("name",)
    assert after["reads"] - before["reads"] == 1 + chunks
    assert 0 < after["bytes_read"] - before["bytes_read"] < info.size
    before = stats.snapshot()
    assert index.files("name LIKE 'ali%'") == files_with(rows, ("like", "name", "ali%"))
    assert stats.snapshot()["reads"] == before["reads"]


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
