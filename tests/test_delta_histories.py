"""Generated Delta table histories: whatever deltalake does to the table under the index,
every front end stays exact.

Hypothesis draws an index kind, whether the table is partitioned, and a sequence of table
changes made by deltalake (delta-rs) itself: appends, deletes and updates that rewrite files,
replaceWhere overwrites, appends that add a column, overwrites that replace the schema,
compaction, z-ordering, checkpoints, vacuums and restores, interleaved with lakeseek's
refreshes, optimizes and vacuums. After every step, generated predicates go through a fresh
``open_index`` and a handle kept since the create, and one of them through Spark (``to_spark``
and the JVM ``lakeseek`` format); each must return the rows DuckDB finds in the table as
deltalake reads it. ``locate`` of a few ids must pair them with the files holding them.
"""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import lakeseek
from tests.lakes import check_spark_front_ends, column_predicates, fuzz_settings

deltalake = pytest.importorskip("deltalake")
pytestmark = pytest.mark.spark

INDEXED = ["id", "name"]
REGIONS = ["eu", "us west", "a/p=1%"]  # partition values delta-rs escapes in paths
NAMES = ["ant", "bee", "Cat", "", "a%b", "x_y"]


class DeltaHistory:
    def __init__(self, path: str, kind: str, partitioned: bool) -> None:
        self.path = path
        self.kind = kind
        self.partition_by = ["region"] if partitioned else None
        self.next_id = 0
        self.kept: lakeseek.Index | None = None

    def _table(self) -> deltalake.DeltaTable:
        return deltalake.DeltaTable(self.path)

    def _rows(self, ids: range, seed: int, schema: pa.Schema | None = None) -> pa.Table:
        """Rows of ``ids`` with the table's columns now (or ``schema``'s)."""
        rng = random.Random(seed)
        schema = schema or pa.schema(
            [pa.field(f.name, _plain(f.type)) for f in pa.schema(self._table().schema().to_arrow())]
        )
        columns = []
        for field in schema:
            if field.name == "id":
                columns.append(pa.array(ids, pa.int64()))
            elif field.name == "region":
                columns.append(pa.array([rng.choice(REGIONS) for _ in ids], field.type))
            elif pa.types.is_integer(field.type):
                columns.append(pa.array([rng.choice([None, -3, 0, 7, 2**40]) for _ in ids], field.type))
            else:
                columns.append(pa.array([rng.choice([None, *NAMES]) for _ in ids], field.type))
        return pa.Table.from_arrays(columns, schema=schema)

    def start(self, seed: int) -> None:
        schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("region", pa.string())])
        deltalake.write_deltalake(self.path, self._rows(range(40), seed, schema), partition_by=self.partition_by)
        self.next_id = 40
        self.apply(("append", 25, seed + 1))

    def _new_ids(self, count: int) -> range:
        ids = range(self.next_id, self.next_id + count)
        self.next_id += count
        return ids

    def apply(self, step: tuple) -> None:
        note(f"step {step}")
        action, number, seed = step
        table = self._table()
        low = number % max(self.next_id, 1)
        if action == "append":
            rows = self._rows(self._new_ids(1 + number % 30), seed)
            deltalake.write_deltalake(self.path, rows, mode="append", partition_by=self.partition_by)
        elif action == "delete":
            table.delete(f"id >= {low} AND id < {low + 1 + seed % 12}")
        elif action == "update":
            table.update(updates={"name": "'upd'"}, predicate=f"id >= {low} AND id < {low + 1 + seed % 20}")
        elif action == "replace_where":
            rows = self._rows(range(low, low + 1 + seed % 6), seed)
            deltalake.write_deltalake(
                self.path,
                rows,
                mode="overwrite",
                predicate=f"id >= {low} AND id < {low + 8}",
                partition_by=self.partition_by,
            )
        elif action == "add_column":
            schema = self._rows(range(0), seed).schema
            if f"extra{number % 3}" not in schema.names:
                schema = schema.append(pa.field(f"extra{number % 3}", pa.int64()))
            rows = self._rows(self._new_ids(1 + seed % 10), seed, schema)
            deltalake.write_deltalake(
                self.path, rows, mode="append", schema_mode="merge", partition_by=self.partition_by
            )
        elif action == "replace_schema":
            # Every column but the key and the partition column may go; one may come back as text.
            kept = [f for f in self._rows(range(0), seed).schema if f.name in ("id", "region") or seed % 2]
            schema = pa.schema([*kept, pa.field("name", pa.string())] if "name" not in [f.name for f in kept] else kept)
            rows = self._rows(self._new_ids(1 + number % 20), seed, schema)
            deltalake.write_deltalake(
                self.path, rows, mode="overwrite", schema_mode="overwrite", partition_by=self.partition_by
            )
        elif action == "compact":
            table.optimize.compact()
        elif action == "z_order":
            table.optimize.z_order(["id"])
        elif action == "checkpoint":
            table.create_checkpoint()
        elif action == "vacuum":
            table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
        elif action == "restore":
            version = table.version()
            if version:
                try:
                    table.restore(number % version)
                except Exception as error:  # a version whose files a vacuum removed
                    note(f"restore refused by deltalake: {error}")
        elif action == "refresh":
            lakeseek.refresh_index(self.path, ["incremental", "full", "quick"][number % 3], engine="local")
        elif action == "optimize":
            lakeseek.optimize_index(self.path, ["quick", "full"][number % 2], engine="local")
        elif action == "vacuum_index":
            lakeseek.vacuum_index(self.path)

    def create(self) -> None:
        options = {"chunk_rows": 16} if self.kind == "sorted" else {}
        lakeseek.create_index(self.path, INDEXED, kind=self.kind, engine="local", **options)
        self.kept = lakeseek.open_index(self.path)

    def check(self, seed: int, spark) -> None:
        rows = self._table().to_pyarrow_table()
        fresh = lakeseek.open_index(self.path)
        rng = random.Random(seed)
        predicates = column_predicates(rows, rng)
        for where in predicates:
            expected = sorted(row[0] for row in duckdb.sql(f"SELECT id FROM rows WHERE {where}").fetchall())
            for handle, which in ((fresh, "fresh handle"), (self.kept, "kept handle")):
                got = sorted(handle.read(where, columns=["id"]).column("id").to_pylist())
                assert got == expected, f"{which}: {where}"
        where = predicates[0]
        expected = sorted(row[0] for row in duckdb.sql(f"SELECT id FROM rows WHERE {where}").fetchall())
        check_spark_front_ends(fresh, spark, self.path, where, expected)
        self._check_locate(fresh, rows, rng)

    def _check_locate(self, index: lakeseek.Index, rows: pa.Table, rng: random.Random) -> None:
        ids = rows.column("id").to_pylist()
        keys = [*rng.sample(ids, min(3, len(ids))), self.next_id + 1]
        expected = set()
        for uri in self._table().file_uris():
            path = uri.removeprefix("file://")
            held = {row[0] for row in duckdb.sql(f"SELECT id FROM read_parquet('{path}')").fetchall()}
            expected |= {(key, path) for key in keys if key in held}
        pairs = index.locate(keys, column="id").to_pylist()
        assert {(pair["key"], pair["file"]) for pair in pairs} == expected, f"locate {keys}"


def _plain(arrow_type: pa.DataType) -> pa.DataType:
    """deltalake's view types as the plain ones it writes from."""
    if pa.types.is_string_view(arrow_type) or pa.types.is_large_string(arrow_type):
        return pa.string()
    return arrow_type


STEPS = st.tuples(
    st.sampled_from(
        [
            "append",
            "append",
            "delete",
            "update",
            "replace_where",
            "add_column",
            "replace_schema",
            "compact",
            "z_order",
            "checkpoint",
            "vacuum",
            "restore",
            "refresh",
            "refresh",
            "optimize",
            "vacuum_index",
        ]
    ),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
)


@fuzz_settings(5)
@given(
    kind=st.sampled_from(["sorted", "skipping", "cuckoo", "covering"]),
    partitioned=st.booleans(),
    steps=st.lists(STEPS, min_size=2, max_size=8),
    seed=st.integers(0, 10**6),
)
def test_generated_delta_histories_stay_exact(tmp_path_factory, jvm_spark, kind, partitioned, steps, seed):
    history = DeltaHistory(str(tmp_path_factory.mktemp("delta") / "table"), kind, partitioned)
    history.start(seed)
    history.create()
    history.check(seed, jvm_spark)
    for number, step in enumerate(steps):
        history.apply(step)
        history.check(seed + number, jvm_spark)
