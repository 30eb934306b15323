"""The skipping kind: per-file sketches against a full scan, and what they prune.

Generated predicates over every indexable type (with NULLs, value lists and bloom filters)
must read exactly a full scan's rows and never leave out a file holding a match; the
pruning itself is checked where it is known exactly (min/max of a clustered column, value
lists); the lifecycle (refresh, optimize, added columns, removed files) keeps it exact,
and a damaged sketch file costs a full scan, never rows. Generated histories of lake
changes and index operations cover this kind too (tests/test_histories.py).
"""

from __future__ import annotations

import os
import random
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import lakeseek
from lakeseek.cli.main import main
from lakeseek.exceptions import LakeseekError
from tests.lakes import (
    INDEXABLE,
    all_rows,
    check_generated_predicates,
    files_with,
    fuzz_settings,
    ids,
    make_typed_lake,
    matching,
    to_sql,
)


@pytest.fixture(scope="module")
def sketched_lake(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("skipping") / "lake")
    make_typed_lake(root, files_per_region=4, rows_per_file=40, seed=3)
    # value_list=4: columns of a few values keep lists; the others (id, code, ...) bloom filters.
    lakeseek.create_index(root, INDEXABLE, kind="skipping", engine="local", value_list=4)
    return root, all_rows(root)


@pytest.fixture(scope="module")
def row_group_sketched_lake(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("skipping_row_groups") / "lake")
    make_typed_lake(root, files_per_region=3, rows_per_file=40, seed=9, row_group_size=8)
    lakeseek.create_index(root, INDEXABLE, kind="skipping", engine="local", value_list=4, row_groups=True)
    return root, all_rows(root)


@fuzz_settings(60)
@given(st.data())
def test_generated_predicates_read_a_full_scans_rows(sketched_lake, data):
    root, rows = sketched_lake
    check_generated_predicates(lakeseek.open_index(root), rows, data)


@fuzz_settings(60)
@given(st.data())
def test_row_group_sketches_read_a_full_scans_rows(row_group_sketched_lake, data):
    root, rows = row_group_sketched_lake
    check_generated_predicates(lakeseek.open_index(root), rows, data)


def test_row_group_sketches_narrow_reads_to_row_groups(row_group_sketched_lake):
    root, _ = row_group_sketched_lake
    index = lakeseek.open_index(root)
    assert index.root.content.config.row_groups
    plan = index.plan("id = 45")  # ids rise within a file: one row group of 8 holds it
    assert plan.index_used and len(plan.files) == 1
    assert plan.row_groups == {plan.files[0]: (0,)}  # the second file's first row group (ids 40-47)
    assert ids(index.read("id = 45", columns=["id"])) == [45]
    assert ids(index.read("id BETWEEN 44 AND 57", columns=["id"])) == list(range(44, 58))


def test_a_value_outside_every_file_reads_nothing(sketched_lake):
    root, _ = sketched_lake
    index = lakeseek.open_index(root)
    absent = index.plan("id = 1000000")
    assert absent.index_used and absent.files == []
    assert index.explain("id = 1000000").candidate_files == 0


def test_a_range_on_a_clustered_column_reads_the_min_max_floor(tmp_path):
    root = str(tmp_path / "clustered")
    os.makedirs(root)
    for number in range(12):
        ids_ = list(range(number * 100, number * 100 + 100))
        # Even files hold tags a and c, odd ones b and d: only the value lists tell b from the range [a, c].
        tags = ["a", "c"] if number % 2 == 0 else ["b", "d"]
        table = pa.table({"id": ids_, "v": [i % 3 for i in ids_], "tag": [tags[i % 2] for i in ids_]})
        pq.write_table(table, f"{root}/part-{number:02d}.parquet")
    lakeseek.create_index(root, ["id", "v", "tag"], kind="skipping", engine="local")
    index = lakeseek.open_index(root)
    plan = index.plan("id >= 250 AND id < 420")
    assert sorted(plan.files) == ["part-02.parquet", "part-03.parquet", "part-04.parquet"]
    assert index.read("id >= 250 AND id < 420").num_rows == 170
    odd = [f"part-{number:02d}.parquet" for number in range(1, 12, 2)]
    assert sorted(index.plan("tag = 'b'").files) == odd
    assert sorted(index.plan("tag IN ('b', 'x')").files) == odd
    assert sorted(index.plan("tag LIKE 'b%'").files) == odd
    assert index.read("tag = 'b'").num_rows == 300  # half the rows of the 6 odd files
    # Every file holds every value of v: nothing to skip, and the planner says so.
    assert not index.plan("v = 1").index_used


@pytest.mark.parametrize("row_groups", [False, True])
def test_lifecycle_steps_stay_exact(tmp_path, row_groups):
    root = str(tmp_path / "lake")
    make_typed_lake(root, files_per_region=2, rows_per_file=30, seed=5, row_group_size=7)
    lakeseek.create_index(root, ["code", "name"], kind="skipping", engine="local", value_list=2, row_groups=row_groups)
    rng = random.Random(5)
    steps = [
        ("append", lambda: _append(root, rng, "new-1")),
        ("refresh", lambda: lakeseek.refresh_index(root, "incremental", engine="local")),
        ("append", lambda: _append(root, rng, "new-2")),
        ("refresh", lambda: lakeseek.refresh_index(root, "incremental", engine="local")),
        ("add column", lambda: lakeseek.create_index(root, ["day"], engine="local")),
        ("remove", lambda: os.remove(sorted(_files(root))[0])),
        ("refresh", lambda: lakeseek.refresh_index(root, "incremental", engine="local")),
        ("optimize quick", lambda: lakeseek.optimize_index(root, "quick", engine="local")),
        ("optimize full", lambda: lakeseek.optimize_index(root, "full", engine="local")),
        ("refresh full", lambda: lakeseek.refresh_index(root, "full", engine="local")),
    ]
    for label, step in steps:
        step()
        index = lakeseek.open_index(root)
        rows = all_rows(root)
        for tree in [
            ("=", "code", 7),
            ("in", "code", [1, 30]),
            ("is null", "name"),
            ("=", "name", "Bob"),
            ("like", "name", "a%"),
            ("<", "code", 5),
            ("is null", "day"),
        ]:
            where = to_sql(tree)
            assert ids(index.read(where, columns=["id"])) == ids(matching(rows, tree)), (label, where)
            assert set(index.files(where)) >= set(files_with(rows, tree)), (label, where)
    final = lakeseek.open_index(root)
    assert final.status().is_fresh and len(final.root.content.segments) == 1
    assert sorted(final.columns) == ["code", "day", "name"] and final.root.kind == "skipping"


def _append(root: str, rng: random.Random, name: str) -> None:
    from tests.lakes import typed_rows, write_file

    write_file(f"{root}/region=east/{name}.parquet", typed_rows(rng, 10_000 + len(name) * 1000, 25))


def _files(root: str) -> list[str]:
    return [p for p in (os.path.join(d, n) for d, _, ns in os.walk(root) for n in ns) if "_lakeseek" not in p]


def test_a_damaged_sketch_file_costs_a_full_scan_not_rows(tmp_path, sketched_lake):
    source, rows = sketched_lake
    root = str(tmp_path / "lake")
    shutil.copytree(source, root)
    from tests.lakes import restamp_indexes

    restamp_indexes(root)
    index = lakeseek.open_index(root)
    segment = index.root.content.segments[0]
    with open(f"{index.index_dir}/{segment.path}", "r+b") as damaged:
        damaged.truncate(segment.size // 2)
    fresh = lakeseek.open_index(root)
    plan = fresh.plan("code = 7")
    assert not plan.index_used and "damaged" in plan.reason
    assert ids(fresh.read("code = 7", columns=["id"])) == ids(matching(rows, ("=", "code", 7)))
    assert any("sketch file" in problem for problem in fresh.status().problems)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"chunk_rows": 5}, "the skipping index has no option 'chunk_rows'"),
        ({"value_list": -1}, "value_list must be a whole number from 0 to 4,096"),
        ({"bloom": "yes"}, "bloom must be true or false"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path, options, message):
    root = str(tmp_path / "lake")
    make_typed_lake(root, files_per_region=1, rows_per_file=5)
    with pytest.raises(LakeseekError, match=message):
        lakeseek.create_index(root, ["code"], kind="skipping", engine="local", **options)


def test_the_cli_creates_a_skipping_index_with_its_options(tmp_path):
    root = str(tmp_path / "lake")
    make_typed_lake(root, files_per_region=1, rows_per_file=20)
    runner = CliRunner()
    created = runner.invoke(
        main,
        [
            "create",
            root,
            "--columns",
            "code,name",
            "--kind",
            "skipping",
            "--option",
            "value_list=0",
            "--option",
            "bloom=false",
            "--engine",
            "local",
        ],
    )
    assert created.exit_code == 0, created.output
    content = lakeseek.open_index(root).root.content
    assert content.config.value_list == 0 and content.config.bloom is False
    bad = runner.invoke(main, ["create", root, "--columns", "id", "--kind", "skipping", "--option", "nonsense"])
    assert bad.exit_code != 0 and "KEY=VALUE" in bad.output and "Traceback" not in bad.output
