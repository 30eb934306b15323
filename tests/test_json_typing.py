"""JSON lines lakes typed and read as Spark's JSON reader types and reads them: hypothesis draws
objects (whole numbers of every size, fractions, text, booleans, NULLs, absent fields, nested
objects and lists) over one or two files, and compares lakeseek's rows with ``spark.read.json``
of the same files, column by column. A lake lakeseek refuses (values of different kinds in one
field, which Spark reads as text) must be refused in one line, never answered."""

from __future__ import annotations

import decimal
import json
import math
import os

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import lakeseek
from lakeseek.exceptions import LakeseekError

pytestmark = pytest.mark.spark

FUZZ_EXAMPLES = os.environ.get("LAKESEEK_FUZZ_EXAMPLES")

_WHOLE = st.one_of(
    st.integers(-(2**31), 2**31),
    st.integers(-(2**64), 2**64),
    st.sampled_from([2**63 - 1, -(2**63), 2**63, -(2**63) - 1]),
)
_SCALARS = st.one_of(
    _WHOLE,
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text(max_size=6),
    st.booleans(),
    st.none(),
)
# Fields mostly of one kind, so that each kind is reached alone and in merges.
_FIELD_VALUES = st.one_of(
    st.lists(st.one_of(_WHOLE, st.none()), min_size=1, max_size=4),
    st.lists(st.one_of(_WHOLE, st.floats(allow_nan=False, allow_infinity=False), st.none()), min_size=1, max_size=4),
    st.lists(st.one_of(st.text(max_size=6), st.none()), min_size=1, max_size=4),
    st.lists(st.one_of(st.booleans(), st.none()), min_size=1, max_size=4),
    st.lists(st.one_of(st.fixed_dictionaries({"x": _WHOLE}), st.none()), min_size=1, max_size=4),
    st.lists(st.one_of(st.lists(st.integers(-5, 5), max_size=3), st.none()), min_size=1, max_size=4),
    st.lists(_SCALARS, min_size=1, max_size=4),
)


def _plain(value):
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@settings(
    max_examples=int(FUZZ_EXAMPLES or 20),
    derandomize=FUZZ_EXAMPLES is None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(fields=st.lists(_FIELD_VALUES, min_size=1, max_size=4), split=st.integers(0, 4))
def test_json_lines_are_typed_and_read_as_spark_reads_them(spark, tmp_path_factory, fields, split):
    root = tmp_path_factory.mktemp("json-typing") / "lake"
    root.mkdir()
    rows = max(len(values) for values in fields)
    objects = []
    for r in range(rows):
        row = {"row": r}
        for i, values in enumerate(fields):
            if r < len(values):
                row[f"c{i}"] = values[r]
        objects.append(row)
    cut = min(split, rows)
    for name, part in (("a.json", objects[:cut]), ("b.json", objects[cut:])):
        if part:
            (root / name).write_text("".join(json.dumps(row) + "\n" for row in part))
    try:
        index = lakeseek.create_index(lakeseek.open_lake(str(root), source_format="json"), ["row"], engine="local")
        ours = index.read("row >= 0").to_pylist()
    except LakeseekError as error:  # refused: one line
        assert "\n" not in str(error).strip()
        event(f"refused: {type(error).__name__}")
        return
    event("answered")
    frame = spark.read.json(str(root))
    theirs = {row["row"]: row.asDict() for row in frame.collect()}
    spark_columns = set(frame.columns)
    for found in ours:
        truth = theirs[found["row"]]
        for name, value in found.items():
            if name not in spark_columns:  # a field Spark drops (an object or list with nothing in it)
                continue
            assert _plain(value) == _plain(truth[name]), (name, value, truth[name], fields)
