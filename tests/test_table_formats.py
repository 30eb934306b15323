"""Table formats lakeseek does not read yet are refused, never read as plain Parquet: a table's
directory keeps files the table removed, and read as Parquet (as ``spark.read.parquet`` does)
it gives rows the table no longer has. Delta tables are read as sources (tests/test_delta.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeseek


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
