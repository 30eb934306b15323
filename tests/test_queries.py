"""Index answers against the full-scan oracle on a lake of every supported type."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeseek
from tests.lakes import INDEXABLE, files_with, ids, matching, predicate_trees, to_sql

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("column", INDEXABLE)
def test_equality_on_every_value_of_every_column(index, rows, column):
    values = {row[column] for row in rows}
    assert len(values) > 1
    for value in values:
        tree = ("is null", column) if value is None else ("=", column, value)
        where = to_sql(tree)
        table, plan = index.query(where)
        assert ids(table) == ids(matching(rows, tree)), where
        # An exact index on a fresh lake names exactly the files holding the value.
        assert index.files(where) == files_with(rows, tree), where
        assert plan.index_used


def test_large_columns_split_into_several_index_files_and_chunks(index):
    for name in ("id", "code"):
        files = index.root.content.indexes[name].files
        assert len(files) > 1 and all(f.chunks > 1 for f in files), name


@pytest.mark.parametrize(
    "tree",
    [
        ("=", "id", 10**12),
        ("=", "id", -5),
        ("=", "name", "no such name"),
        ("=", "code", 49_000),
        ("=", "payload", b"\x42\x42"),
        ("=", "day", dt.date(2000, 1, 1)),
        ("=", "ts", dt.datetime(2024, 1, 1, 0, 0, 1, tzinfo=dt.timezone.utc)),
        ("=", "amount", Decimal("99.99")),
        ("in", "code", [1000, 2000]),
    ],
)
def test_absent_values_read_no_data_file(index, rows, tree):
    where = to_sql(tree)
    assert index.files(where) == []
    assert index.read(where).num_rows == 0


def test_cold_lookup_reads_at_most_three_and_warm_one(typed_lake, rows):
    stats = lakeseek.open_index(typed_lake).storage.stats
    before = stats.snapshot()["reads"]
    cold = lakeseek.open_index(typed_lake)
    target = rows[len(rows) // 2]["id"]
    assert cold.files(f"id = {target}") == files_with(rows, ("=", "id", target))
    assert stats.snapshot()["reads"] - before <= 3
    before = stats.snapshot()["reads"]
    assert cold.files(f"id = {target + 1}") == files_with(rows, ("=", "id", target + 1))
    assert stats.snapshot()["reads"] - before <= 1
    before = stats.snapshot()["reads"]
    assert cold.files("id = 999999999") == []
    assert stats.snapshot()["reads"] - before == 0


# (tree, index used?, files pruned?). Used: the predicate's lookups go through the index
# (False where it cannot serve them: NOT, <>, an OR with an unindexed side; None where only
# the cost model decides, for a lookup that could not remove a file here). Pruned: the data
# allow fewer files than the lake's, and the index names exactly the files holding a match.
MIXED = [
    (("or", ("=", "id", 3), ("=", "name", "it's")), True, False),
    (("and", ("=", "code", 7), ("=", "region", "São Paulo")), True, True),
    (("and", ("=", "code", 7), ("<", "score", 1.0)), True, False),
    (("or", ("=", "code", 7), (">", "score", 1.0)), False, False),
    (("in", "name", ["alice", "naïve café", None]), True, False),
    (("not in", "code", [1, 2, 3]), False, False),
    (("not", ("in", "code", [1, 2, None])), False, False),
    (("is null", "region"), True, True),
    (("and", ("is not null", "payload"), ("=", "flag", False)), True, False),
    (("like", "name", "%a%"), None, False),
    (("not", ("=", "name", None)), False, False),
    ((">=", "ts", dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.timezone.utc)), None, False),
    (("<>", "amount", Decimal("3.10")), False, False),
]


@pytest.mark.parametrize(("tree", "used", "pruned"), MIXED)
def test_mixed_predicates(index, rows, tree, used, pruned):
    where = to_sql(tree)
    assert ids(index.read(where)) == ids(matching(rows, tree)), where
    plan = index.plan(where)
    files = index.files(where)
    assert set(files) >= set(files_with(rows, tree)), where
    if used is not None:
        assert plan.index_used == used, (where, plan.reason)
    if not plan.index_used:
        assert plan.reason and len(files) == plan.total_files, where
    if pruned:
        assert files == files_with(rows, tree) and len(files) < plan.total_files, where


def test_or_with_unindexed_side_reads_every_file(index, rows):
    plan = index.plan("id = 3 OR score > 1")
    assert not plan.index_used and len(plan.files) == plan.total_files


def test_read_returns_whole_rows_with_partition_values(index, rows):
    plan = index.plan("region = 'São Paulo'")
    assert plan.index_used and index.files("region = 'São Paulo'") == files_with(rows, ("=", "region", "São Paulo"))
    assert len(plan.files) == 3 < plan.total_files  # the region's files only
    expected = sorted(matching(rows, ("=", "region", "São Paulo")), key=lambda r: r["id"])
    got = sorted(index.read("region = 'São Paulo'").to_pylist(), key=lambda r: r["id"])
    assert [dict(r, __file=None) for r in got] == [dict(r, __file=None) for r in expected]


def test_read_selects_columns(index):
    table = index.read("id = 5", columns=["name", "ID"])
    assert table.column_names == ["name", "id"]
    assert table.num_rows == 1


# -- hypothesis: random predicate trees ----------------------------------------------------------
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_predicates_match_the_oracle(index, rows, data):
    tree = data.draw(predicate_trees(rows))
    where = to_sql(tree)
    assert ids(index.read(where)) == ids(matching(rows, tree)), where
    plan = index.plan(where)
    assert set(index.files(where)) >= set(files_with(rows, tree)), where
    assert plan.index_used or (plan.reason and len(plan.files) == plan.total_files), where
    if tree[0] == "=" and tree[1] in INDEXABLE:
        # A point lookup on an indexed column: exactly the files holding the value.
        assert plan.index_used and index.files(where) == files_with(rows, tree), where
