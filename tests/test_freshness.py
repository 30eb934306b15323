"""A lake changed after indexing: answers stay those of a full scan."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeseek
from tests.lakes import all_rows, data_files, ids, matching, region_dir, to_sql, typed_rows, write_file

pytestmark = pytest.mark.spark

QUERIES = [
    ("=", "id", 5),
    ("=", "id", 100_000),
    ("=", "name", "it's"),
    ("in", "code", [7, 8, 9]),
    ("is null", "small"),
    ("=", "region", "west"),
    ("or", ("=", "id", 200), ("=", "id", 100_001)),
]


def _assert_exact(lake: str) -> None:
    index = lakeseek.open_index(lake)
    rows = all_rows(lake)
    for tree in QUERIES:
        where = to_sql(tree)
        assert ids(index.read(where)) == ids(matching(rows, tree)), where
        assert set(index.files(where)) >= {r["__file"] for r in matching(rows, tree)}, where


def test_added_removed_and_rewritten_files(lake_copy):
    files = data_files(lake_copy)
    rng = random.Random(9)
    # added: new ids, and a new partition value
    write_file(f"{lake_copy}/{region_dir('north')}/part-new.parquet", typed_rows(rng, 100_000, 50))
    # removed
    os.remove(files[0])
    # rewritten in place: same path, other rows (id 5 may move out, 200 moves in)
    write_file(files[1], typed_rows(rng, 200, 40))
    status = lakeseek.open_index(lake_copy).status()
    assert (len(status.new_files), len(status.changed_files), len(status.removed_files)) == (1, 1, 1)
    _assert_exact(lake_copy)
    plan = lakeseek.open_index(lake_copy).plan("id = 5")
    assert plan.unindexed_files == 2 and plan.removed_files == 1


def test_rewritten_file_of_the_same_size_is_detected_by_mtime(lake_copy):
    target = data_files(lake_copy)[2]
    table = pq.read_table(target)
    # Same values in another order: same size, other mtime.
    pq.write_table(table.take(pa.array(range(table.num_rows - 1, -1, -1))), target)
    stat = os.stat(target)
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert lakeseek.open_index(lake_copy).status().changed_files == [os.path.relpath(target, lake_copy)]
    _assert_exact(lake_copy)


def test_every_file_removed(lake_copy):
    for path in data_files(lake_copy):
        os.remove(path)
    index = lakeseek.open_index(lake_copy)
    assert index.files("id = 5") == []
    assert index.read("id = 5").num_rows == 0


def test_listing_once_reuses_the_first_listing(lake_copy):
    index = lakeseek.open_index(lake_copy, lake_listing="once")
    assert index.read("id = 5").num_rows == 1
    os.remove(index.files("id = 5")[0])  # the snapshot does not see it go
    assert index.lake_state().is_fresh
    assert lakeseek.open_index(lake_copy).read("id = 5").num_rows == 0
    with pytest.raises(ValueError, match="lake_listing"):
        lakeseek.open_index(lake_copy, lake_listing="sometimes")


def test_large_lakes_keep_the_lineage_in_a_manifest(tmp_path, typed_lake, spark, monkeypatch):
    import shutil

    from lakeseek.lifecycle import operations

    lake = str(tmp_path / "lake")
    shutil.copytree(typed_lake, lake, ignore=shutil.ignore_patterns("_lakeseek"))
    monkeypatch.setattr(operations, "INLINE_LINEAGE_MAX_FILES", 3)
    lakeseek.create_index(lake, ["id", "name"], spark=spark)
    index = lakeseek.open_index(lake)
    (part,) = index.root.lineage.parts
    assert part.inline is None and part.path.endswith(".parquet")
    os.remove(data_files(lake)[0])
    _assert_exact(lake)
