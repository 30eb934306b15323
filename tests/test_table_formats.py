"""Table formats lakeseek does not read yet are refused, never read as plain Parquet.

A Delta table written by ``deltalake`` that deleted rows keeps the removed files in its
directory: read as Parquet (as ``spark.read.parquet`` does) it gives rows the table no longer
has. Until Delta, Iceberg and Hudi are versioned sources, every entry point says so in one line.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from click.testing import CliRunner

import lakeseek
from lakeseek.cli.main import main


@pytest.fixture()
def delta_table(tmp_path):
    from deltalake import DeltaTable, write_deltalake

    path = str(tmp_path / "table")
    write_deltalake(path, pa.table({"id": pa.array(range(10), pa.int64()), "v": [f"r{n}" for n in range(10)]}))
    write_deltalake(path, pa.table({"id": pa.array(range(10, 20), pa.int64()), "v": ["x"] * 10}), mode="append")
    DeltaTable(path).delete("id < 5")  # rewrites the first file: the old one stays in the directory
    assert DeltaTable(path).to_pyarrow_table().num_rows == 15
    return path


def test_a_delta_table_is_refused_everywhere(delta_table):
    for call in (
        lambda: lakeseek.create_index(delta_table, ["id"]),
        lambda: lakeseek.open_index(delta_table),
        lambda: lakeseek.list_indexes(delta_table),
    ):
        with pytest.raises(lakeseek.UnsupportedLakeError, match="is a Delta Lake table"):
            call()
    result = CliRunner().invoke(main, ["create", delta_table, "--columns", "id"])
    assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "Delta Lake table" in result.stderr and not os.path.exists(f"{delta_table}/_lakeseek")


@pytest.mark.parametrize(
    ("marker", "table_format"),
    [(".hoodie/hoodie.properties", "Apache Hudi"), ("metadata/v1.metadata.json", "Apache Iceberg")],
)
def test_hudi_and_iceberg_tables_are_refused(tmp_path, marker, table_format):
    import pyarrow.parquet as pq

    lake = tmp_path / "table"
    (lake / "data").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1]}), lake / "data" / "part-0.parquet")
    (lake / marker).parent.mkdir(parents=True, exist_ok=True)
    (lake / marker).write_text("{}")
    with pytest.raises(lakeseek.UnsupportedLakeError, match=f"is an {table_format} table"):
        lakeseek.open_index(str(lake))
