"""Generated histories of a lake whose partition values change the type Spark infers for the
partition column: directories of whole numbers, zero-padded numbers, text, fractions, dates,
timestamps and Hive's NULL come and go, with refreshes of every mode between. After every
step the partition values lakeseek reads, and equality and NULL predicates on the partition
column, go through a fresh handle and one kept since the create, against Spark reading the
lake then (``spark.read.parquet``), which infers the column's type from the directories."""

from __future__ import annotations

import datetime as dt
import math
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import lakeseek
from lakeseek.exceptions import LakeseekError, UnsupportedColumnError
from tests.lakes import sql_literal

pytestmark = pytest.mark.spark

FUZZ_EXAMPLES = os.environ.get("LAKESEEK_FUZZ_EXAMPLES")
# Directory values as Spark writes them (a timestamp's colons escaped).
VALUES = [
    "7", "007", "-3", "2147483648", "x", "2.5", "2024-01-01", "2024-01-02",
    "2024-01-02 03%3A04%3A05", "__HIVE_DEFAULT_PARTITION__", "true", "10",
]  # fmt: skip
_STEPS = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(VALUES)),
    st.tuples(st.just("remove"), st.integers(0, 20)),
    st.tuples(st.just("refresh"), st.sampled_from(["incremental", "quick", "full"])),
)


def _plain(value):
    """A value as both sides return it: timestamps naive in UTC, floats and decimals as floats."""
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def _check(spark, root: str, handles: list[lakeseek.Index]) -> None:
    frame = spark.read.parquet(root)
    truth = sorted((row["id"], _plain(row["p"])) for row in frame.collect())
    values = sorted({p for _, p in truth if p is not None}, key=repr)
    predicates = ["p IS NULL", "p IS NOT NULL"] + [f"p = {sql_literal(value)}" for value in values]
    for index in handles:
        rows = index.read("id >= 0", columns=["id", "p"])
        assert sorted((row["id"], _plain(row["p"])) for row in rows.to_pylist()) == truth
        for where in predicates:
            expected = sorted(row["id"] for row in frame.where(where).collect())
            try:
                found = sorted(index.read(where, columns=["id"]).column("id").to_pylist())
            except LakeseekError as error:  # refused in one line: not a wrong answer
                note(f"{where}: {error}")
                continue
            assert found == expected, where


@settings(
    max_examples=int(FUZZ_EXAMPLES or 10),
    derandomize=FUZZ_EXAMPLES is None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    start=st.lists(st.sampled_from(VALUES), min_size=1, max_size=3),
    steps=st.lists(_STEPS, min_size=1, max_size=5),
    indexed=st.sampled_from([["id"], ["id", "p"]]),
)
def test_partition_values_that_retype_the_column_stay_exact(spark, tmp_path_factory, start, steps, indexed):
    root = str(tmp_path_factory.mktemp("partitions") / "lake")
    written: list[str] = []

    def add(value: str) -> None:
        number = len(written)
        path = f"{root}/p={value}/part-{number}.parquet"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(pa.table({"id": [2 * number, 2 * number + 1]}), path)
        written.append(path)

    for value in start:
        add(value)
    try:
        lakeseek.create_index(root, indexed, engine="local")
    except UnsupportedColumnError:  # p is a DOUBLE now: indexed it cannot be
        lakeseek.create_index(root, ["id"], engine="local")
    kept = lakeseek.open_index(root)
    for step, argument in steps:
        note(f"{step} {argument}")
        present = [path for path in written if os.path.exists(path)]
        if step == "add":
            add(argument)
        elif step == "remove" and len(present) > 1:
            path = present[argument % len(present)]
            os.remove(path)
            if not os.listdir(os.path.dirname(path)):
                shutil.rmtree(os.path.dirname(path))
        elif step == "refresh":
            try:
                lakeseek.refresh_index(root, argument, engine="local")
            except UnsupportedColumnError as error:  # p became a DOUBLE: the index stays as it was
                note(str(error))
        _check(spark, root, [lakeseek.open_index(root), kept])


@pytest.mark.parametrize("mode", ["full", "incremental"])
def test_partition_directories_that_appear_or_go_are_the_lakes_columns_after_a_refresh(spark, tmp_path, mode):
    """Found by a hunt on the service: a partition directory added to a flat lake (Spark then
    reads only the partitioned files, with the partition column) kept the index's columns,
    even through a full refresh: `p = 1` was "unknown column 'p'" for good. A full or an
    incremental refresh now takes the lake's partition columns as a create would."""
    root = tmp_path / "lake"
    root.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "v": ["a", "b"]}), root / "a.parquet")
    lakeseek.create_index(str(root), ["id"], engine="local")

    def assert_as_spark(where: str) -> None:
        expected = spark.read.parquet(str(root)).where(where)
        answer = lakeseek.open_index(str(root)).read(where)
        assert answer.column_names == expected.columns
        rows = sorted(tuple(row) for row in expected.collect())
        assert sorted(zip(*answer.to_pydict().values(), strict=True)) == rows

    (root / "p=1").mkdir()
    pq.write_table(pa.table({"id": [7000], "v": ["x"]}), root / "p=1" / "x.parquet")
    lakeseek.refresh_index(str(root), mode, engine="local")
    assert_as_spark("p = 1")
    assert_as_spark("id = 7000")
    shutil.rmtree(root / "p=1")
    lakeseek.refresh_index(str(root), mode, engine="local")
    assert_as_spark("id >= 0")
