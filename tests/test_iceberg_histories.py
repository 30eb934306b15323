"""Generated Iceberg table histories: whatever pyiceberg does to the table under the index,
queries stay exact.

Hypothesis draws an index kind and a sequence of table changes made by pyiceberg itself
(appends, row deletes, overwrites, columns added, dropped, widened from int to long and
renamed, indexed ones dropped and added again or another renamed to one's name, older
snapshots expired and the schemas none uses removed) interleaved with refreshes of every
mode. After every step, generated predicates over the table's columns (an added column no
file holds yet among them: NULL in every row) go through a fresh
``open_index`` and through one handle kept since the create, and one of them through Spark
(``to_spark`` and the JVM ``lakeseek`` format); each must return the rows DuckDB finds in the
table as pyiceberg scans it. The tables lakeseek refuses, those that dropped a column and
added another under its name or renamed one, must be a one-line error, never rows.
"""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pytest
from hypothesis import example, given, note
from hypothesis import strategies as st

import lakeseek
from tests.lakes import check_spark_front_ends, column_predicates, forget_old_schemas, fuzz_settings

pytest.importorskip("pyiceberg")
pytestmark = pytest.mark.spark

INDEXED = ["id", "name", "small"]
EXTRAS = ["extra_long", "extra_text"]  # columns a history may add (and drop, and add again)
DROPPABLE = ["name", "small", *EXTRAS]
# An indexed column dropped may come back, and another column may be renamed to an indexed
# one's name: either way another column (another field id) under the name the index holds.
ADDABLE = [*EXTRAS, "name", "small"]
RENAMES = [("name", "label"), ("extra_text", "extra_word"), ("extra_text", "name")]
WORDS = ["ant", "bee", "cat", "Cat", "dög", "", "a%b", "x_y"]
# Another column's words: renamed to an indexed column's name, it holds values the index never saw.
EXTRA_WORDS = ["emu", "fox", "gnu", "Gnu", "bee"]


def _column(name: str, arrow_type: pa.DataType, rng: random.Random, count: int) -> pa.Array:
    def value():
        if rng.random() < 0.2:
            return None
        if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
            return rng.choice(EXTRA_WORDS if name.startswith("extra") else WORDS)
        if pa.types.is_int32(arrow_type):
            return rng.randint(-5, 5)
        return rng.choice([-(2**40), -1, 0, 3, 7, 2**40])

    return pa.array([value() for _ in range(count)], arrow_type)


class IcebergHistory:
    def __init__(self, directory: str, kind: str) -> None:
        from pyiceberg.catalog.sql import SqlCatalog

        self.catalog = SqlCatalog("h", uri=f"sqlite:///{directory}/catalog.db", warehouse=f"file://{directory}/wh")
        self.catalog.create_namespace("ns")
        schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("small", pa.int32())])
        self.table = self.catalog.create_table("ns.events", schema=schema)
        self.location = self.table.location().removeprefix("file://")
        self.next_id = 0
        self.kind = kind
        self.kept: lakeseek.Index | None = None
        self.refused: str | None = None  # why lakeseek refuses the table now, once it does

    def _rows(self, count: int, seed: int) -> pa.Table:
        rng = random.Random(seed)
        schema = self.table.schema().as_arrow()
        ids = pa.array(range(self.next_id, self.next_id + count), pa.int64())
        self.next_id += count
        columns = [ids] + [_column(f.name, f.type, rng, count) for f in schema if f.name != "id"]
        return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(f.name != "id") for f in schema]))

    def apply(self, step: tuple) -> None:
        from pyiceberg.types import IntegerType, LongType, StringType

        note(f"step {step}")
        action, number, seed = step
        self.table = self.catalog.load_table("ns.events")
        names = self.table.schema().column_names
        if action == "append":
            self.table.append(self._rows(1 + number % 40, seed))
        elif action == "delete" and self.next_id:
            low = number % self.next_id
            self.table.delete(f"id >= {low} and id < {low + 1 + seed % 15}")
        elif action == "overwrite" and self.next_id:
            low = number % self.next_id
            self.table.overwrite(self._rows(1 + seed % 10, seed), overwrite_filter=f"id >= {low} and id < {low + 8}")
        elif action == "add_column":
            name = ADDABLE[number % len(ADDABLE)]
            if name not in names:
                types = {"extra_long": LongType(), "small": IntegerType()}
                with self.table.update_schema() as update:
                    update.add_column(name, types.get(name, StringType()))
        elif action == "drop_column":
            present = [name for name in DROPPABLE if name in names]
            if present:
                with self.table.update_schema() as update:
                    update.delete_column(present[number % len(present)])
        elif action == "widen" and "small" in names:
            if isinstance(self.table.schema().find_field("small").field_type, IntegerType):
                with self.table.update_schema() as update:
                    update.update_column("small", LongType())
        elif action == "rename":  # a column renamed, or renamed back
            pairs = [
                (old, new) for old, new in RENAMES + [(b, a) for a, b in RENAMES] if old in names and new not in names
            ]
            if pairs:
                with self.table.update_schema() as update:
                    update.rename_column(*pairs[number % len(pairs)])
        elif action == "forget":  # older snapshots expired, schemas no snapshot uses removed
            forget_old_schemas(self.catalog, "ns.events")
        elif action == "refresh":
            self._lakeseek(
                lambda: lakeseek.refresh_index(self.location, REFRESHES[number % len(REFRESHES)], engine="local")
            )

    def _lakeseek(self, call):
        """``call``'s result, or None when lakeseek refuses the table in one line (kept as the reason)."""
        try:
            return call()
        except lakeseek.LakeseekError as error:
            message = str(error).strip()
            assert "\n" not in message, message
            assert isinstance(error, lakeseek.UnsupportedLakeError), message  # a name dropped and added again
            self.refused = message
            return None

    def create(self) -> None:
        options = {"chunk_rows": 16} if self.kind == "sorted" else {}
        self._lakeseek(lambda: lakeseek.create_index(self.location, INDEXED, kind=self.kind, engine="local", **options))
        self.kept = self._lakeseek(lambda: lakeseek.open_index(self.location))

    def check(self, seed: int, spark) -> None:
        table = self.catalog.load_table("ns.events").scan().to_arrow()
        rows = table  # noqa: F841  (DuckDB reads it by name)
        fresh = self._lakeseek(lambda: lakeseek.open_index(self.location))
        predicates = column_predicates(table, random.Random(seed))
        for where in predicates:
            expected = sorted(row[0] for row in duckdb.sql(f"SELECT id FROM rows WHERE {where}").fetchall())
            for handle in (fresh, self.kept):
                if handle is None:
                    continue
                answer = self._lakeseek(lambda h=handle, w=where: h.read(w, columns=["id"]))
                if answer is not None:
                    assert sorted(answer.column("id").to_pylist()) == expected, where
        if fresh is not None and self.refused is None:
            where = predicates[0]
            expected = sorted(row[0] for row in duckdb.sql(f"SELECT id FROM rows WHERE {where}").fetchall())
            check_spark_front_ends(fresh, spark, self.location, where, expected)


REFRESHES = ["incremental", "full", "quick"]
STEPS = st.tuples(
    st.sampled_from(
        ["append", "append", "delete", "overwrite", "add_column", "drop_column", "widen", "rename", "forget", "refresh"]
    ),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
)


@fuzz_settings(6)
# A rename the table's metadata no longer shows: only the data files' field ids tell it.
# A handle kept from before reads the state a fresh one took after it (its source had planned
# an older version): it answered with the old names, reading the renamed column as NULL.
@example(kind="sorted", steps=[("rename", 0, 0), ("forget", 0, 0), ("append", 5, 3)], seed=7)
# Another column renamed to an indexed column's name, the old schemas removed: a quick or
# incremental refresh took the table's new schema as the index's, and its entries of the
# column that had the name answered for the one that has it now (a file left out, no row).
@example(
    kind="sorted",
    steps=[
        ("add_column", 1, 0),
        ("append", 30, 11),
        ("append", 30, 12),
        ("append", 30, 13),
        ("refresh", 0, 0),
        ("rename", 0, 0),
        ("rename", 1, 0),
        ("forget", 0, 0),
        ("refresh", 2, 0),
    ],
    seed=19,
)
@example(
    kind="skipping",
    steps=[("add_column", 0, 0), ("append", 5, 1), ("drop_column", 2, 0), ("add_column", 0, 0), ("forget", 0, 0)],
    seed=3,
)
@given(
    kind=st.sampled_from(["sorted", "skipping", "cuckoo", "covering"]),
    steps=st.lists(STEPS, min_size=2, max_size=7),
    seed=st.integers(0, 10**6),
)
def test_generated_iceberg_histories_stay_exact(tmp_path_factory, jvm_spark, kind, steps, seed):
    history = IcebergHistory(str(tmp_path_factory.mktemp("iceberg")), kind)
    history.apply(("append", 30, seed))
    history.apply(("append", 25, seed + 1))
    history.create()
    history.check(seed, jvm_spark)
    for number, step in enumerate(steps):
        history.apply(step)
        history.check(seed + number, jvm_spark)
