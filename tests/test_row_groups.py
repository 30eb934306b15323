"""Row-group precision: entries point at row groups, and reads skip the others."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeseek
from lakeseek.spark import locate_spark

pytestmark = pytest.mark.spark

ROWS_PER_GROUP = 50
GROUPS_PER_FILE = 6


def _write(root: str, number: int, rng: random.Random) -> None:
    start = number * ROWS_PER_GROUP * GROUPS_PER_FILE
    count = ROWS_PER_GROUP * GROUPS_PER_FILE
    table = pa.table(
        {
            "id": pa.array(range(start, start + count), pa.int64()),
            "user": pa.array([f"u{rng.randrange(60)}" if rng.random() > 0.05 else None for _ in range(count)]),
            "amount": pa.array([rng.random() for _ in range(count)]),
        }
    )
    os.makedirs(root, exist_ok=True)
    pq.write_table(table, f"{root}/part-{number:03d}.parquet", row_group_size=ROWS_PER_GROUP)


def _oracle(root: str) -> list[dict]:
    rows = []
    for name in sorted(os.listdir(root)):
        if name.endswith(".parquet"):
            for position, row in enumerate(pq.read_table(f"{root}/{name}").to_pylist()):
                rows.append({**row, "__file": name, "__group": position // ROWS_PER_GROUP})
    return rows


@pytest.fixture(scope="module")
def lake(tmp_path_factory, spark):
    root = str(tmp_path_factory.mktemp("row_groups") / "lake")
    rng = random.Random(7)
    for number in range(4):
        _write(root, number, rng)
    lakeseek.create_index(root, "id,user", spark=spark, row_groups=True, chunk_rows=64, entries_per_index_file=300)
    return root


def _check(index, rows, where, keep):
    expected = [r for r in rows if keep(r)]
    plan = index.plan(where)
    assert plan.index_used, where
    groups = {}
    for row in expected:
        groups.setdefault(row["__file"], set()).add(row["__group"])
    # Exactly the row groups holding a match, no more.
    assert {path: set(g) for path, g in plan.row_groups.items()} == groups, where
    got = index.read(where)
    assert sorted(got.column("id").to_pylist()) == sorted(r["id"] for r in expected), where


def test_points_ranges_and_like_name_exact_row_groups(lake):
    index = lakeseek.open_index(lake)
    assert index.root.content.config.row_groups
    rows = _oracle(lake)
    for target in (0, 49, 50, 333, 1199):
        _check(index, rows, f"id = {target}", lambda r, t=target: r["id"] == t)
    _check(index, rows, "id BETWEEN 120 AND 260", lambda r: 120 <= r["id"] <= 260)
    _check(index, rows, "user = 'u7'", lambda r: r["user"] == "u7")
    _check(index, rows, "user IN ('u1', 'u59')", lambda r: r["user"] in ("u1", "u59"))
    _check(index, rows, "user IS NULL", lambda r: r["user"] is None)
    _check(index, rows, "user LIKE 'u5%'", lambda r: r["user"] is not None and r["user"].startswith("u5"))
    _check(
        index,
        rows,
        "id = 70 AND user IS NOT NULL OR id = 900",
        lambda r: r["id"] in (70, 900) and (r["user"] is not None or r["id"] == 900),
    )


def test_locate_names_row_groups_and_spark_gives_the_same_pairs(lake, spark):
    index = lakeseek.open_index(lake)
    rows = _oracle(lake)
    keys = ["u1", "u7", "nobody"]
    found = index.locate(keys, column="user")
    expected = {(r["user"], r["__file"], r["__group"]) for r in rows if r["user"] in keys}
    columns = [found.column(name).to_pylist() for name in ("key", "file", "row_group")]
    got = zip(*columns, strict=True)
    assert {(k, f.rsplit("/", 1)[1], g) for k, f, g in got} == expected
    frame = locate_spark(index, spark.createDataFrame([(k,) for k in keys], "k string"), column="user")
    pairs = [(r["key"], r["file"].rsplit("/", 1)[1]) for r in frame.collect()]
    assert sorted(pairs) == sorted({(k, f) for k, f, _ in expected})  # one pair per file, not per row group


def test_reads_only_the_chosen_row_groups(lake):
    from lakeseek.lake.files import open_dataset

    index = lakeseek.open_index(lake)
    plan = index.plan("id = 333")
    assert len(plan.files) == 1 and len(plan.row_groups[plan.files[0]]) == 1
    # What read() scans: the chosen row group alone, not the whole file.
    dataset = open_dataset(index.lake, plan.files, index.schema, (), plan.row_groups)
    scanned = dataset.to_table()
    assert scanned.num_rows == ROWS_PER_GROUP and 333 in scanned.column("id").to_pylist()


def test_row_groups_survive_refresh_and_optimize(lake, tmp_path, spark):
    import shutil

    copy = str(tmp_path / "lake")
    shutil.copytree(lake, copy)
    _write(copy, 4, random.Random(8))
    os.remove(f"{copy}/part-001.parquet")
    lakeseek.refresh_index(copy, "incremental", engine="local")
    rows = _oracle(copy)
    index = lakeseek.open_index(copy)
    for where, keep in (
        ("id = 1230", lambda r: r["id"] == 1230),
        ("user = 'u3'", lambda r: r["user"] == "u3"),
        ("id >= 1400", lambda r: r["id"] >= 1400),
    ):
        _check(index, rows, where, keep)
    lakeseek.optimize_index(copy, "full", spark=spark)
    index = lakeseek.open_index(copy)
    assert len(index.root.content.indexes["user"].segments) == 1
    _check(index, rows, "user = 'u3'", lambda r: r["user"] == "u3")
    _check(index, rows, "id BETWEEN 1190 AND 1210", lambda r: 1190 <= r["id"] <= 1210)


@pytest.mark.parametrize("where", ["id = 99999", "user = 'nobody'", "id IS NULL", "id > 1199", "user > 'zzz'"])
def test_lookup_that_finds_no_entry_reads_nothing(lake, where):
    """No entry found (a missing key, IS NULL on a column without NULLs, past the maximum):
    an empty plan and empty answers, not an error."""
    index = lakeseek.open_index(lake)
    plan = index.plan(where)
    assert plan.index_used and plan.files == [] and plan.row_groups == {}, where
    assert index.files(where) == []
    assert index.read(where).num_rows == 0
    assert index.read(where).schema == index.scan(where).schema
