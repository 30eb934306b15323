"""Batch lookups (locate): exact (key, file) pairs, with and without Spark."""

from __future__ import annotations

import os
import random

import pytest

import lakeseek
from lakeseek.exceptions import LakeseekError
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


def test_locate_seeks_or_scans_each_index_file(typed_lake):
    index = lakeseek.open_index(typed_lake)
    stats = index.storage.stats
    before = stats.snapshot()
    keys = list(range(0, 1800, 3))  # every chunk of every index file: each is read whole, once
    found = index.locate(keys, column="id")
    assert sorted(set(found.column("key").to_pylist())) == keys
    files = index.root.content.indexes["id"].files
    assert stats.snapshot()["reads"] - before["reads"] <= 2 * len(files)  # footer, then the whole file
    before = stats.snapshot()
    index.locate([900, 901, 902], column="id")  # adjacent keys: one chunk, read alone
    assert stats.snapshot()["reads"] - before["reads"] == 1
    assert stats.snapshot()["bytes_read"] - before["bytes_read"] < min(f.size for f in files) / 2


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
