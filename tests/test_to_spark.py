"""to_spark: Spark over the candidate files gives the rows of Spark over the whole lake."""

from __future__ import annotations

import pytest

import lakeseek
from lakeseek.expressions.sql import to_spark_sql

pytestmark = pytest.mark.spark


def _rows(frame):
    return sorted(tuple(row) for row in frame.collect())


@pytest.mark.parametrize(
    "where",
    [
        "id = 17",
        "name = 'it''s'",
        "name IN ('São Paulo', 'back\\slash', 'nope')",
        "payload = X'0001'",
        "day = DATE '2024-02-29' AND region = 'east'",
        "ts = TIMESTAMP '2024-01-01 12:30:15.123456'",
        "amount = -12.50 OR small IS NULL",
        "region IS NULL",
        "code = 7 AND score > 0",
        "id = -1",
    ],
)
def test_same_rows_as_spark_over_the_lake(spark, typed_lake, where):
    index = lakeseek.open_index(typed_lake)
    full = spark.read.parquet(typed_lake).where(to_spark_sql(where))
    assert _rows(index.to_spark(spark, where)) == _rows(full)
    assert index.to_spark(spark, where).schema == full.schema


def test_same_rows_as_spark_after_the_lake_changed(spark, lake_copy):
    import os

    from tests.lakes import data_files

    os.remove(data_files(lake_copy)[0])
    index = lakeseek.open_index(lake_copy)
    for where in ("id = 3", "id = 200", "code = 7"):
        assert _rows(index.to_spark(spark, where)) == _rows(spark.read.parquet(lake_copy).where(where))
