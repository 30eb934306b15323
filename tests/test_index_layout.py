"""Index files are named one way by every operation (docs/format.md): ``data/<operation>/c<n>-<uuid>.parquet``,
whatever the column's name (and the increment filter file ``data/<operation>/filters-<crc32>-<size>.parquet``)."""

from __future__ import annotations

import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeseek

pytestmark = pytest.mark.spark

INDEX_FILE = re.compile(r"data/[0-9a-f]{32}/(c[0-9]+-[0-9a-f]{32}|filters-[0-9a-f]{8}-[0-9]+)\.parquet")
LONG_NAME = "x" * 200  # as hex (the former name of folded files) past a 255-byte file name


def _index_files(lake: str) -> list[str]:
    data = f"{lake}/_lakeseek/default/data"
    return [os.path.relpath(os.path.join(d, f), f"{lake}/_lakeseek/default") for d, _, fs in os.walk(data) for f in fs]


def test_every_operation_names_index_files_alike(spark, tmp_path):
    lake = str(tmp_path / "lake")
    os.makedirs(lake)
    for n in range(3):
        table = pa.table({"id": pa.array(range(n * 10, n * 10 + 10), pa.int64()), LONG_NAME: [f"v{n}"] * 10})
        pq.write_table(table, f"{lake}/part-{n}.parquet")
    lakeseek.create_index(lake, ["id", LONG_NAME], spark=spark)
    for n in range(3, 5):
        pq.write_table(pa.table({"id": pa.array([100 + n], pa.int64()), LONG_NAME: ["w"]}), f"{lake}/part-{n}.parquet")
        lakeseek.refresh_index(lake, "incremental", engine="local")
    lakeseek.optimize_index(lake, "quick")
    index = lakeseek.optimize_index(lake, "full")
    assert index.root.content.segments == 1
    names = _index_files(lake)
    assert names and [name for name in names if not INDEX_FILE.fullmatch(name)] == []
    assert index.read(f"{LONG_NAME} = 'w'").num_rows == 2 and index.read("id = 103").num_rows == 1
