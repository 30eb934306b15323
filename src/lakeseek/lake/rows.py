"""Arrow tables of a lake's rows, put together."""

from __future__ import annotations

import pyarrow as pa


def concat_rows(tables: list[pa.Table]) -> pa.Table:
    """The rows of ``tables`` (of one schema) in order. Tables of no column (a read of no column,
    which counts rows) keep their row counts, which ``pa.concat_tables`` drops."""
    if tables and not tables[0].num_columns:
        return pa.table({"rows": pa.nulls(sum(table.num_rows for table in tables))}).select([])
    return pa.concat_tables(tables)
