"""Several indexes of one lake: every query planned with each, run through the cheapest.

Generated predicates over a lake with a sorted and a skipping index on overlapping columns
must read a full scan's rows, never leave out a file holding a match, and go through the
index whose estimate is lowest; explain reports every index weighed with what it read, the
files it left and (analyze) how many hold no match; a damaged index gives way to the next.
"""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import lakeseek
from lakeseek.cli.main import main
from lakeseek.exceptions import IndexLogUnreadableError, IndexNotFoundError
from tests.lakes import (
    all_rows,
    data_files,
    files_with,
    fuzz_settings,
    ids,
    make_typed_lake,
    matching,
    predicate_trees,
    restamp_indexes,
    to_sql,
)


@pytest.fixture(scope="module")
def two_kinds(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("choice") / "lake")
    make_typed_lake(root, files_per_region=4, rows_per_file=40, seed=5)
    lakeseek.create_index(root, ["id", "code", "name", "day"], name="exact", engine="local")
    lakeseek.create_index(
        root, ["id", "small", "name", "ts", "amount", "region"], name="sketches", kind="skipping", engine="local"
    )
    return root, all_rows(root)


@pytest.fixture
def clustered(tmp_path):
    """ids sorted across files (ranges narrow by min/max), users scattered (needles need the sorted index)."""
    root = str(tmp_path / "clustered")
    os.makedirs(root)
    for number in range(16):
        ids_ = list(range(number * 100, number * 100 + 100))
        users = [f"u{(i * 7919) % 997}" for i in ids_]
        pq.write_table(pa.table({"id": ids_, "user": users}), f"{root}/part-{number:02d}.parquet")
    lakeseek.create_index(root, ["user"], name="by_user", engine="local")
    lakeseek.create_index(root, ["id", "user"], name="sketches", kind="skipping", engine="local", bloom=False)
    return root


@fuzz_settings(40)
@given(st.data())
def test_generated_predicates_go_through_the_cheapest_index_and_read_a_full_scans_rows(two_kinds, data):
    root, rows = two_kinds
    indexes = lakeseek.open_indexes(root)
    for _ in range(4):
        tree = data.draw(predicate_trees(rows))
        where = to_sql(tree)
        table, plan = indexes.query(where, columns=["id"])
        assert ids(table) == ids(matching(rows, tree)), where
        assert set(indexes.files(where)) >= set(files_with(rows, tree)), where
        explained = indexes.explain(where)
        chosen = [a for a in explained.alternatives if a.chosen]
        assert len(chosen) == 1 and chosen[0].index == plan.index == explained.index, where
        assert chosen[0].estimated == min(a.estimated for a in explained.alternatives), where
        assert chosen[0].candidate_files == len(plan.files), where


def test_each_query_goes_through_the_index_that_narrows_it(clustered):
    indexes = lakeseek.open_indexes(clustered)
    assert [index.name for index in indexes.indexes] == ["by_user", "sketches"]
    ranged = indexes.plan("id >= 250 AND id < 420")
    assert ranged.index == "sketches"
    assert ranged.files == ["part-02.parquet", "part-03.parquet", "part-04.parquet"]
    # Every file holds some user between u1 and u9: only the sorted index narrows a needle.
    needle = indexes.plan("user = 'u17'")
    assert needle.index == "by_user" and needle.index_used
    assert (
        indexes.read("user = 'u17'").num_rows
        == lakeseek.open_index(clustered, name="by_user").scan("user = 'u17'").num_rows
    )


@pytest.mark.parametrize("where", ["user = 'u17'", "user = 'u17' AND user <> 'u1'", "user = 'u17' OR user = 'u3'"])
def test_an_index_of_row_groups_that_narrows_no_part_is_weighed_as_the_scan_it_is(clustered, where):
    """An index of row groups on another column was estimated to cost nothing (its candidates,
    row groups, are not weighed) and chosen, reading every file (found by the docs hunt)."""
    lakeseek.create_index(clustered, ["id"], name="groups", kind="skipping", row_groups=True, engine="local")
    indexes = lakeseek.open_indexes(clustered)
    plan = indexes.plan(where)
    assert plan.index == "by_user" and plan.index_used and len(plan.files) < 16, where
    explained = {a.index: a for a in indexes.explain(where).alternatives}
    assert explained["groups"].estimated >= explained["by_user"].estimated


def test_explain_weighs_every_index_with_its_reads_and_false_positives(clustered):
    indexes = lakeseek.open_indexes(clustered)
    explained = indexes.explain("user = 'u17' AND id < 800", analyze=True)
    assert {a.index for a in explained.alternatives} == {"by_user", "sketches"}
    truth = {
        path
        for path in lakeseek.open_index(clustered, name="by_user").plan("user = 'u17' AND id < 800").files
        if pq.read_table(f"{clustered}/{path}")
        .filter((pa.compute.field("user") == "u17") & (pa.compute.field("id") < 800))
        .num_rows
    }
    for alternative in explained.alternatives:
        plan = lakeseek.open_index(clustered, name=alternative.index).plan("user = 'u17' AND id < 800")
        assert alternative.candidate_files == len(plan.files)
        assert alternative.false_positives == len(set(plan.files) - truth)
    assert explained.rows == indexes.read("user = 'u17' AND id < 800").num_rows
    lines = "\n".join(explained.lines())
    assert "indexes weighed (2" in lines and "without a match" in lines


def test_a_damaged_index_gives_way_to_the_next(clustered, tmp_path):
    root = str(tmp_path / "copy")
    shutil.copytree(clustered, root)
    restamp_indexes(root)
    sketches = lakeseek.open_index(root, name="sketches")
    segment = sketches.root.content.segments[0]
    with open(f"{sketches.index_dir}/{segment.path}", "r+b") as damaged:
        damaged.truncate(segment.size // 2)
    indexes = lakeseek.open_indexes(root)
    plan = indexes.plan("id >= 250 AND id < 420")
    assert plan.index == "by_user" and plan.fallback is not lakeseek.Fallback.DAMAGED and len(plan.files) == 16
    assert ids(indexes.read("id >= 250 AND id < 420", columns=["id"])) == list(range(250, 420))


def test_an_index_whose_log_is_wholly_damaged_is_left_out(clustered):
    """The other indexes answer (the library, the CLI); asked for by name, it is an error."""
    for entry in os.listdir(f"{clustered}/_lakeseek/sketches/log"):
        with open(f"{clustered}/_lakeseek/sketches/log/{entry}", "w") as damaged:
            damaged.write("")
    indexes = lakeseek.open_indexes(clustered)
    assert [index.name for index in indexes.indexes] == ["by_user"]
    assert ids(indexes.read("id >= 250 AND id < 420", columns=["id"])) == list(range(250, 420))
    assert ids(indexes.read("user = 'u17'", columns=["id"])) == [i for i in range(1600) if (i * 7919) % 997 == 17]
    answered = CliRunner().invoke(main, ["query", clustered, "--where", "id = 300"])
    assert answered.exit_code == 0 and "1 row" in answered.output, answered.output
    asked = lakeseek.open_indexes(clustered, names=["sketches"])  # its stand-in reads every file
    plan = asked.plan("id >= 250 AND id < 420")
    assert plan.fallback is lakeseek.Fallback.DAMAGED and len(plan.files) == 16 and "damaged" in plan.reason
    assert ids(asked.read("id >= 250 AND id < 420", columns=["id"])) == list(range(250, 420))


def _damage_every_entry(index_dir: str) -> None:
    for entry in os.listdir(f"{index_dir}/log"):
        with open(f"{index_dir}/log/{entry}", "w") as damaged:
            damaged.write("{")


@pytest.fixture(scope="module")
def unreadable(tmp_path_factory):
    """A partitioned lake whose only index has no log entry that reads whole."""
    root = str(tmp_path_factory.mktemp("unreadable") / "lake")
    make_typed_lake(root, files_per_region=2, rows_per_file=40, seed=11)
    lakeseek.create_index(root, ["id", "name"], engine="local")
    lakeseek.refresh_index(root, engine="local")  # a second entry: none of them reads whole
    _damage_every_entry(f"{root}/_lakeseek/default")
    return root, all_rows(root)


@fuzz_settings(5)
@given(st.data())
def test_a_lake_whose_only_index_log_is_wholly_damaged_reads_a_full_scans_rows(unreadable, data):
    """Never a failed query: the library, every handle kind, reads every file and says why."""
    root, rows = unreadable
    for handle in (lakeseek.open_index(root), lakeseek.open_indexes(root), lakeseek.open_index(root).reload()):
        tree = data.draw(predicate_trees(rows))
        where = to_sql(tree)
        table, plan = handle.query(where, columns=["id"])
        assert ids(table) == ids(matching(rows, tree)), where
        assert plan.fallback is lakeseek.Fallback.DAMAGED and len(plan.files) == len(data_files(root)), where
        assert "every entry of the index log" in plan.reason and f"{root}/_lakeseek/default" in plan.reason


def test_an_unreadable_index_in_the_cli_answers_and_its_status_is_an_error(unreadable):
    root, rows = unreadable
    runner = CliRunner()
    answered = runner.invoke(main, ["query", root, "--where", "region = 'eu' AND id < 30", "--columns", "id"])
    expected = sorted(row["id"] for row in rows if row["region"] == "eu" and row["id"] < 30)
    assert answered.exit_code == 0 and f"{len(expected)} row" in answered.output, answered.output
    assert "every file is read" in answered.output, answered.output
    located = lakeseek.open_index(root).locate([3, 41], "id")
    assert sorted(located.column("key").to_pylist()) == [3, 41]
    for command in (["status", root], ["refresh", root, "--engine", "local"]):
        failed = runner.invoke(main, command)
        assert failed.exit_code == 1 and failed.output.strip().count("\n") == 0, failed.output
        assert "every entry of the index log" in failed.output and "remove the directory" in failed.output
        assert "refresh --mode full" not in failed.output  # which cannot repair it
    with pytest.raises(IndexLogUnreadableError, match="every entry"):
        lakeseek.open_index(root).status()


def test_an_index_whose_log_is_unreadable_is_listed_beside_the_others(clustered):
    """`lakeseek indexes` lists every index, an unreadable one by name and state, and exits 1
    with the error that says how to repair it."""
    _damage_every_entry(f"{clustered}/_lakeseek/sketches")
    listed = {index.name: index.root.state for index in lakeseek.list_indexes(clustered)}
    assert listed == {"by_user": "active", "sketches": "unreadable"}
    runner = CliRunner()
    table = runner.invoke(main, ["indexes", clustered])
    assert table.exit_code == 1, table.output
    rows = {
        line.split()[0]: line.split()[1]
        for line in table.stdout.splitlines()
        if line.split()[:1] in (["by_user"], ["sketches"])
    }
    assert rows["by_user"] == "active" and rows["sketches"].startswith("unread"), table.output  # rich may cut it
    assert table.stderr.count("\n") == 1 and "every entry of the index log" in table.stderr, table.stderr
    as_json = runner.invoke(main, ["indexes", clustered, "--format", "json"])
    states = {entry["name"]: entry["state"] for entry in json.loads(as_json.stdout)}
    assert as_json.exit_code == 1 and states == {"by_user": "active", "sketches": "unreadable"}


def test_a_deleted_index_is_weighed_last_and_names_are_checked(clustered):
    lakeseek.delete_index(clustered, name="sketches")
    indexes = lakeseek.open_indexes(clustered)
    plan = indexes.plan("id >= 250 AND id < 420")
    assert plan.index == "by_user" and len(plan.files) == 16
    only = lakeseek.open_indexes(clustered, names=["sketches"])
    assert only.plan("id >= 250 AND id < 420").fallback is lakeseek.Fallback.DELETED
    with pytest.raises(IndexNotFoundError, match="no lakeseek index 'nope'"):
        lakeseek.open_indexes(clustered, names=["nope"])


def test_the_cli_weighs_every_index_without_a_name(clustered):
    runner = CliRunner()
    explained = runner.invoke(main, ["explain", clustered, "--where", "id >= 250 AND id < 420"])
    assert explained.exit_code == 0, explained.output
    assert "index: sketches" in explained.output and "indexes weighed (2" in explained.output
    listed = runner.invoke(main, ["files", clustered, "--where", "user = 'u17'"])
    assert listed.exit_code == 0 and listed.output.strip()
    named = runner.invoke(main, ["explain", clustered, "--name", "sketches", "--where", "user = 'u17'"])
    assert named.exit_code == 0 and "indexes weighed" not in named.output
    rows = runner.invoke(main, ["query", clustered, "--where", "id = 1234", "--format", "csv"])
    assert rows.exit_code == 0 and rows.output.splitlines()[1].startswith("1234,")
