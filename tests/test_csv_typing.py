"""CSV columns typed and read as Spark types and reads them: hypothesis draws columns of text
(whole numbers of every width and sign, numbers of scale 0, Java's doubles and Spark's words for
them, dates, Spark's lenient timestamps with zones, booleans in any case, other text), writes
them as a CSV file, and compares lakeseek's lake schema and rows with ``spark.read.csv(header,
inferSchema)`` of the same file: the full scan a Spark user would run."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import math
import os
import re

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeseek
from lakeseek.exceptions import DataFileError
from lakeseek.lake.formats import spark_csv

FUZZ_EXAMPLES = os.environ.get("LAKESEEK_FUZZ_EXAMPLES")
_REGION = re.compile(r"[0-9](UTC|GMT)?[ ]?[A-Za-z]{3,}")

_DIGITS = st.text("0123456789", min_size=1, max_size=22)
_WHOLE = st.builds(lambda sign, digits: sign + digits, st.sampled_from(["", "", "-", "+"]), _DIGITS)
_SCALE_ZERO = st.sampled_from(["1.", "1.5e1", "15.0e1", "12345678901234567890", "-9223372036854775809", "0.0e1"])
_DOUBLES = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1d", "2.5F", " 5", "7 ", "0x1p3", "Infinity", "-Infinity", "NaN", "Inf", "-Inf", "1e400", ".5"]),
)
_DATES = st.dates(dt.date(1000, 1, 1), dt.date(9999, 12, 31)).map(str)
_TIMESTAMPS = st.builds(
    lambda moment, separator, fraction, zone: moment.strftime(f"%Y-%m-%d{separator}%H:%M:%S") + fraction + zone,
    st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1)),
    st.sampled_from([" ", "T"]),
    st.sampled_from(["", ".5", ".123456", ".1234567"]),
    st.sampled_from(["", "Z", "+08:00", "-0530", " UTC", "GMT+8", "America/New_York", " PST", "+8:00"]),
)
_LENIENT = st.sampled_from(["2020-1-1", "2020-01", "2020-01-01 10", "2020-01-01 10:0", " 2020-01-01", "+2020-01-01"])
_BOOLEANS = st.sampled_from(["true", "false", "TRUE", "False", "tRuE"])
_OTHER = st.sampled_from(["x", "0x10", "inf", "nan", "1,000", "2020-02-30", "2021-13-01", "yes", "TRUE ", "NaNd"])
_VALUES = st.one_of(_WHOLE, _SCALE_ZERO, _DOUBLES, _DATES, _TIMESTAMPS, _LENIENT, _BOOLEANS, _OTHER)
# Columns mostly of one family, so that every type is reached, with a stray value now and then.
_FAMILIES = [_WHOLE, _SCALE_ZERO, _DOUBLES, _DATES, _TIMESTAMPS, _LENIENT, _BOOLEANS]
_COLUMN = st.one_of(
    *(st.lists(st.one_of(family, st.just("")), min_size=1, max_size=6) for family in _FAMILIES),
    st.lists(st.one_of(_VALUES, st.just("")), min_size=1, max_size=6),
)


def _spark_type(data_type) -> pa.DataType:
    name = data_type.simpleString()
    if name.startswith("decimal"):
        return pa.decimal128(data_type.precision, data_type.scale)
    known = {
        "int": spark_csv.INT, "bigint": spark_csv.BIGINT, "double": spark_csv.DOUBLE, "date": spark_csv.DATE,
        "timestamp": spark_csv.TIMESTAMP, "boolean": spark_csv.BOOLEAN, "string": spark_csv.STRING,
    }  # fmt: skip
    return known[name]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        return a.replace(tzinfo=None) == b.replace(tzinfo=None)
    if isinstance(a, decimal.Decimal) and isinstance(b, decimal.Decimal):
        return a == b
    return a == b


@settings(
    max_examples=int(FUZZ_EXAMPLES or 25),
    derandomize=FUZZ_EXAMPLES is None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(columns=st.lists(_COLUMN, min_size=1, max_size=6))
def test_csv_columns_are_typed_and_read_as_spark_reads_them(spark, tmp_path_factory, columns):
    root = tmp_path_factory.mktemp("csv-typing") / "lake"
    root.mkdir()
    rows = max(len(column) for column in columns)
    with open(root / "a.csv", "w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([f"c{i}" for i in range(len(columns))] + ["row"])
        for r in range(rows):
            writer.writerow([column[r] if r < len(column) else "" for column in columns] + [r])
    lake = lakeseek.open_lake(str(root), source_format="csv")
    try:
        index = lakeseek.create_index(lake, ["row"], engine="local")
    except DataFileError as error:  # Java's and Python's rules for region zones differ: refused
        assert "region time zones" in str(error) and any(_REGION.search(v) for c in columns for v in c), error
        return
    ours = index.read("row >= 0")
    frame = spark.read.options(header="true", inferSchema="true", multiLine="true", escape='"').csv(str(root))
    for field, column in zip(frame.schema.fields, columns, strict=False):
        if field.name == "row":
            continue
        expected = _spark_type(field.dataType)
        got = ours.schema.field(field.name).type
        assert got == expected or (pa.types.is_null(got) and expected == pa.string()), (field.name, column)
    theirs = {row["row"]: row for row in frame.collect()}
    for found in ours.to_pylist():
        truth = theirs[found["row"]]
        for name in ours.column_names:
            assert _same(found[name], truth[name]), (name, found[name], truth[name], columns)


def test_files_merge_as_spark_merges_them(spark, tmp_path):
    """Types that differ across files: INT and DOUBLE to DOUBLE, INT and BIGINT to BIGINT, INT
    and DECIMAL(20, 0) to the decimal, DATE and TIMESTAMP to TIMESTAMP, INT and BOOLEAN to
    STRING (whose text is each file's own: ``007`` stays ``007``)."""
    root = tmp_path / "lake"
    root.mkdir()
    (root / "a.csv").write_text("row,d,l,dec,t,s\n0,1,1,1,2020-01-02,007\n")
    (root / "b.csv").write_text("row,d,l,dec,t,s\n1,2.5,3000000000,12345678901234567890,2020-01-02 10:00:00,true\n")
    index = lakeseek.create_index(lakeseek.open_lake(str(root), source_format="csv"), ["row"], engine="local")
    ours = index.read("row >= 0")
    frame = spark.read.options(header="true", inferSchema="true", multiLine="true", escape='"').csv(str(root))
    assert [ours.schema.field(f.name).type for f in frame.schema.fields] == [
        _spark_type(f.dataType) for f in frame.schema.fields
    ]
    theirs = {row["row"]: row for row in frame.collect()}
    for found in ours.to_pylist():
        assert all(_same(found[name], theirs[found["row"]][name]) for name in ours.column_names), found
    assert index.read("s = '007'").column("row").to_pylist() == [0]
    assert index.read("t = TIMESTAMP '2020-01-02 00:00:00'").column("row").to_pylist() == [0]
