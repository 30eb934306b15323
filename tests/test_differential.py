"""Generated differential queries: lakeseek against Spark SQL over the same files.

A lake of every comparable Arrow type (several integer widths, decimals of small and
full precision, floats, dates, timestamps of two units with and without a time zone,
strings, binary, booleans), holding each type's edge values, spread over files so the
index prunes. Hypothesis draws predicates with literals of every kind and spelling
(``10L``, ``0.1F``, ``1.5BD``, ``1E308``, strings cast to the column, ``DATE``,
``TIMESTAMP`` with digits finer than the column, ``TIMESTAMP_NTZ``, offsets, LIKE with
escapes) under every operator and AND/OR/NOT. Spark evaluates a batch of predicates on
every row in one query (``SELECT id, (p1), (p2), ...``); lakeseek's ``read`` must return
exactly the rows where a predicate is TRUE, and ``files`` every file holding one.
Predicates Spark rejects must be rejected by lakeseek too, with a LakeseekError.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import urllib.request
from decimal import Context, Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeseek
from lakeseek.exceptions import LakeseekError
from lakeseek.expressions.sql import to_spark_sql
from lakeseek.spark import locate_spark, spark_schema, to_spark
from tests.servers import start_lakeseek_serve

pytestmark = pytest.mark.spark
UTC = dt.timezone.utc

TYPES = {
    "i8": pa.int8(),
    "i16": pa.int16(),
    "i32": pa.int32(),
    "i64": pa.int64(),
    "u64": pa.uint64(),  # Spark's DECIMAL(20, 0)
    "dec": pa.decimal128(9, 2),
    "dec20": pa.decimal128(20, 0),
    "dec38": pa.decimal128(38, 1),
    "frac": pa.decimal128(20, 20),  # compared with a BIGINT in DECIMAL(38, 18): rounded half up
    "f32": pa.float32(),
    "f64": pa.float64(),
    "d": pa.date32(),
    "ts": pa.timestamp("us", tz="UTC"),
    "ms": pa.timestamp("ms", tz="UTC"),
    "ntz": pa.timestamp("us"),
    "s": pa.string(),
    "b": pa.binary(),
    "flag": pa.bool_(),
    # Physical variety, read as Spark reads it: a dictionary-encoded string column, a column
    # that is int32 in some files and int64 in others, one spelled in another case in some, and
    # text and bytes whose files' Arrow schemas say view types in some, large ones in others
    # (as Arrow-Rust writers record them).
    "sd": pa.string(),
    "wide": pa.int64(),
    "mixed": pa.int32(),
    "sv": pa.string(),
    "bv": pa.binary(),
}
INDEXED = [name for name in TYPES if name not in ("f32", "f64")]


def _physical(name: str, number: int) -> tuple[str, pa.DataType]:
    """How file ``number`` writes column ``name``: its spelling and Arrow type."""
    if name == "sd":
        return name, pa.dictionary(pa.int32(), pa.string())
    if name == "wide" and number % 2 == 0:
        return name, pa.int32()
    if name == "mixed" and (number % 2 == 0 or number == VIEWS_WITHOUT_NULL):
        return "Mixed", pa.int32()
    if name == "sv":
        return name, pa.string_view() if number % 2 else pa.large_string()
    if name == "bv":
        return name, pa.binary_view() if number % 2 else pa.large_binary()
    return name, TYPES[name]


BASE = dt.datetime(2024, 3, 10, 2, 0, 0, 456000)

EDGES = {
    "i8": [-128, -1, 0, 1, 5, 114, 127],
    "i16": [-32768, -300, 0, 300, 32767],
    "i32": [-(2**31), -5, 0, 5, 114, 115, 2**31 - 1],
    "i64": [-(2**63), -(2**53) - 1, 0, 12, 2**32 + 12, 2**53 + 1, 2**63 - 1],
    "u64": [0, 5, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1],
    # 99.99 is one whose double Arrow's own decimal cast rounds wrongly (99.99000000000001).
    "dec": [Decimal(text) for text in ("-9999999.99", "-0.01", "0.00", "0.10", "114.50", "99.99")],
    "dec20": [Decimal(-(10**20) + 1), Decimal(0), Decimal(9007199254740992), Decimal(9007199254740993)],
    "dec38": [Decimal("-1234567890123456789012345678.9"), Decimal("-1234567890123456789012345679.0"), Decimal("0.1")],
    "frac": [Decimal(text) for text in ("0.99999999999999999999", "0.9999999999999999995", "1E-20", "0", "-0.5")],
    "f32": [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 0.1, 1.0, 3.4e38, 16777216.0],
    "f64": [float("nan"), float("inf"), float("-inf"), -0.0, 0.1, 1e308, 9007199254740993.0],
    # Days of the Gregorian calendar Java's hybrid one lacks (1582-10-05 to 14).
    "d": [dt.date(1970, 1, 1), dt.date(2024, 1, 1), dt.date(2024, 2, 29), dt.date(9999, 12, 31), dt.date(1582, 10, 10)],
    "ts": [
        BASE.replace(tzinfo=UTC),
        dt.datetime(1970, 1, 1, tzinfo=UTC),
        dt.datetime(2262, 4, 11, tzinfo=UTC),
        dt.datetime(1582, 10, 10, 1, tzinfo=UTC),
    ],
    "ms": [BASE.replace(tzinfo=UTC), dt.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC)],
    "ntz": [BASE, BASE.replace(hour=7), dt.datetime(1970, 1, 1)],
    "s": ["a", "a%", "a\\b", "ab", "it's", "", "é", "z" * 20, "line\nbreak", "5", " 5"],
    "b": [b"", b"\x00", b"ab", b"\xff\xfe", b"5"],
    "flag": [True, False],
    "sd": ["a", "a%", "a\\b", "", "é", "5"],
    "wide": [-5, 0, 114, 2**31 - 1, 5_000_000_000, -(2**40)],
    "mixed": [-(2**31), 0, 5, 114],
    "sv": ["a", "a%", "", "é", "it's", "5", "z" * 20],
    "bv": [b"", b"\x00", b"ab", b"\xff\xfe"],
}


FILES = 7
NAN_PAIRS = FILES - 1  # the file whose float row groups hold NaN beside one value
VIEWS_WITHOUT_NULL = 1  # a file writing view types (an odd one) whose sv and bv hold no NULL


def _column_values(name: str, count: int, seed: int) -> list:
    edges = EDGES[name]
    if seed == NAN_PAIRS and name in ("f32", "f64"):
        # Statistics leave NaN out of min/max, so such a row group looks like the value alone.
        return [float("nan") if i % 2 == 0 else edges[1 + (i // 2) % (len(edges) - 1)] for i in range(count)]
    if name == "wide" and seed % 2 == 0:  # the files that write it as int32
        edges = [value for value in edges if -(2**31) <= value < 2**31]
    # A view-typed column without NULL reads another way in pyarrow (with no kernel comparing it
    # with the lake's literal) than one with a NULL: one file writes them so, spelling every column
    # as the lake does (a file read under other spellings is read whole first, and cast).
    nulls = not (name in ("sv", "bv") and seed == VIEWS_WITHOUT_NULL)
    return [None if nulls and (seed + i) % 7 == 3 else edges[(seed * 3 + i) % len(edges)] for i in range(count)]


@pytest.fixture(scope="module")
def differential_lake(tmp_path_factory, spark):
    root = str(tmp_path_factory.mktemp("differential") / "lake")
    os.makedirs(root)
    row_id = 0
    for number in range(FILES):
        count = 9
        fields, columns = [pa.field("id", pa.int64())], [list(range(row_id, row_id + count))]
        for name in TYPES:
            spelling, arrow_type = _physical(name, number)
            fields.append(pa.field(spelling, arrow_type))
            columns.append(_column_values(name, count, number))
        row_id += count
        row_group_size = 2 if number == NAN_PAIRS else None
        table = pa.table(columns, schema=pa.schema(fields))
        pq.write_table(table, f"{root}/part-{number}.parquet", row_group_size=row_group_size)
    index = lakeseek.create_index(root, INDEXED, spark=spark, chunk_rows=8, entries_per_index_file=16)
    # The same columns sketched: value lists where a file holds at most 2 values, bloom filters elsewhere.
    lakeseek.create_index(root, INDEXED, kind="skipping", name="skipping", spark=spark, value_list=2)
    # And filtered: one slot per bucket, so filters grow; every query also through all three at once.
    lakeseek.create_index(root, INDEXED, kind="cuckoo", name="cuckoo", spark=spark, slots=1)
    # And copied: every column carried, so reads are answered from the index's rows.
    lakeseek.create_index(
        root, INDEXED, kind="covering", name="covering", spark=spark, include=["id", "f32", "f64"], chunk_rows=4
    )
    # Spark reads this lake with the widened schema given (its own inference stops at the
    # first file's int32, and mergeSchema refuses int32 with int64).
    frame = spark.read.schema(spark_schema(index)).parquet(root)
    frame.createOrReplaceTempView("differential")
    return root


# -- literals of every kind and spelling ----------------------------------------------------------
def _integer_literals(value: int) -> st.SearchStrategy[str]:
    # Spark folds a BIGINT compared with a decimal beyond the BIGINT range to TRUE or FALSE
    # even for NULL, where SQL (and lakeseek, and DuckDB) says NULL: not drawn.
    fractions = [f"{value}.5", f"{value - 1}.999"] if -(2**63) < value < 2**63 - 1 else []
    return st.sampled_from(
        [
            str(value),
            f"{value}L",
            f"{value}.0",
            *fractions,
            f"{value}E0",
            f"{value}.5E0",
            f"'{value}'",
            f'"{value}"',
            f"{value}BD",
            f"CAST({value} AS BIGINT)",
            f"CAST({value}.7 AS BIGINT)",  # the fraction dropped
        ]
        + ([f"{value}F"] if abs(value) < 2**62 else [])  # compared as DOUBLE, not FLOAT
        + ([f"{value}Y"] if -128 <= value < 128 else [])
        + ([f"{value}S"] if -32768 <= value < 32768 else [])
    )


def _number_literals(value: object) -> st.SearchStrategy[str]:
    if isinstance(value, float):
        if math.isnan(value):
            return st.sampled_from(["CAST('NaN' AS DOUBLE)", "0.1E0", "0.1F"])
        if math.isinf(value):
            return st.sampled_from(["1E308", "-1E308", "CAST('Infinity' AS DOUBLE)", "3.4E38"])
        # An integer one past a FLOAT's value: equal as FLOAT, not as the DOUBLE Spark compares in.
        past = [str(int(value) + 1)] if value.is_integer() and abs(value) < 2**31 else []
        spelled = repr(value) + "E0" if "e" not in repr(value) else repr(value)
        return st.sampled_from([spelled, "0.1", "0.1F", "1", *past])
    if isinstance(value, Decimal):
        text = str(value)
        # Half a unit toward zero (away from zero, for 0), which Spark's cast rounds half up back to the value.
        half = Decimal(5).scaleb(value.as_tuple().exponent - 1)
        exact = Context(prec=80)
        rounded = exact.subtract(value, half) if value > 0 else exact.add(value, half) if value < 0 else half - half / 5
        scale = -value.as_tuple().exponent
        cast = f"CAST({rounded} AS DECIMAL(38, {scale}))"
        return st.sampled_from(
            [text, f"{text}0", f"{text}1", f"{text}E0", f"'{text}'", f'"{text}"', f"{text}BD", f"{text}D", cast]
        )
    return _integer_literals(value)


def _temporal_literals(value: object) -> st.SearchStrategy[str]:
    if isinstance(value, dt.datetime):
        moment = value.replace(tzinfo=None)
        text = moment.isoformat(sep=" ")
        finer = (moment + dt.timedelta(microseconds=1)).isoformat(sep=" ")
        return st.sampled_from(
            [
                f"TIMESTAMP '{text}'",
                f'TIMESTAMP "{text}"',
                f"TIMESTAMP '{finer}'",
                f"TIMESTAMP '{moment.isoformat(sep=' ', timespec='milliseconds')}1'",
                f"TIMESTAMP_NTZ '{text}'",
                f"'{text}'",
                f"'{text}-05:00'",
                f'"{text}-05:00"',
                f"'{moment.date().isoformat()}'",
                f"DATE '{moment.date().isoformat()}'",
            ]
        )
    day = value.isoformat()
    return st.sampled_from(
        [
            f"DATE '{day}'",
            f"'{day}'",
            f'"{day}"',
            f"'{day} 10:00'",
            f"TIMESTAMP '{day} 00:00:00'",
            f"TIMESTAMP '{day} 12:00:00'",
            f"DATE '{day}' - INTERVAL 1 DAY",
        ]
    )


def _quoted(text: str) -> st.SearchStrategy[str]:
    """``text`` as a string literal in either of Spark's quotes, a quote inside doubled."""
    return st.sampled_from(["'", '"']).map(lambda quote: quote + text.replace(quote, quote * 2) + quote)


# Around a string cast to the column's type: characters Spark's casts trim (those up to the
# space, DEL for most types; Java's trim for DOUBLE and DECIMAL) and ones they keep and refuse.
_PADDING = ["", " ", "  ", "\t", "\n", "\r", "\x00", "\x01", "\x1f", "\x7f", "\u00a0", "\u2003", "\u3000", "\u0085"]


def _padded(value: object) -> st.SearchStrategy[str]:
    if isinstance(value, float):
        text = repr(value).replace("nan", "NaN").replace("inf", "Infinity")
    elif isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, dt.datetime):
        text = value.replace(tzinfo=None).isoformat(sep=" ")
    elif isinstance(value, dt.date):
        text = value.isoformat()
    else:
        text = str(value)
    pads = st.sampled_from(_PADDING)
    return st.tuples(pads, pads).map(lambda p: f"'{p[0]}{text}{p[1]}'")


def _literal(name: str, *, strings: bool = True) -> st.SearchStrategy[str]:
    if not strings:
        return _spelled_literal(name).filter(lambda text: not text.startswith(("'", '"')))
    return _any_literal(name)


def _any_literal(name: str) -> st.SearchStrategy[str]:
    literals = _spelled_literal(name)
    if pa.types.is_string(TYPES[name]) or pa.types.is_binary(TYPES[name]):
        return literals
    return st.one_of(literals, literals, literals, st.sampled_from(EDGES[name]).flatmap(_padded))


def _spelled_literal(name: str) -> st.SearchStrategy[str]:
    t = TYPES[name]
    values = [v for v in EDGES[name] if v is not None]
    if pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_floating(t):
        return st.sampled_from(values).flatmap(_number_literals)
    if pa.types.is_temporal(t):
        return st.sampled_from(values).flatmap(_temporal_literals)
    if pa.types.is_string(t):
        return st.sampled_from(values).flatmap(_quoted)
    if pa.types.is_binary(t):
        return st.sampled_from(values).flatmap(
            lambda v: st.one_of(
                st.sampled_from([f"X'{v.hex()}'", f'X"{v.hex()}"']), *([_quoted(v.decode())] if v.isascii() else [])
            )
        )
    return st.sampled_from(["TRUE", "FALSE"])


_LIKE_PATTERNS = ["a%", "a\\%", "a\\\\b", "a_", "%b", "%", "it''s", "a\\_%", "_", "%\\\\%", "é%"]


_INTEGER_COLUMNS = ["i32", "i64", "wide", "mixed"]
_FLOAT_COLUMNS = ["f32", "f64"]


def _comparison(name: str) -> st.SearchStrategy[str]:
    column = st.just(name)
    simple = st.tuples(column, st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), _literal(name)).map(" ".join)
    members = st.lists(_literal(name), min_size=1, max_size=3).map(", ".join)
    choices = [
        simple,
        st.tuples(column, members).map(lambda p: f"{p[0]} IN ({p[1]})"),
        column.map(lambda c: f"{c} IS NULL"),
        column.map(lambda c: f"{c} IS NOT NULL"),
        # Spark 4 answers NOT (ts BETWEEN .. AND '<string>') wrongly (no row): strings left out.
        st.tuples(column, _literal(name, strings=False), _literal(name, strings=False)).map(
            lambda p: f"{p[0]} BETWEEN {p[1]} AND {p[2]}"
        ),
        st.tuples(column, _literal(name)).map(lambda p: f"{p[0]} <=> {p[1]}"),
    ]
    if name in _INTEGER_COLUMNS:  # one column against another, NULL-safe or not
        others = st.sampled_from([*_INTEGER_COLUMNS, "frac", "dec"])
        operators = st.sampled_from(["=", "<", "<=>", "IS DISTINCT FROM", "IS NOT DISTINCT FROM"])
        choices.append(st.tuples(operators, others).map(lambda p: f"{name} {p[0]} {p[1]}"))
    if name in _FLOAT_COLUMNS:  # NaN equals NaN and is above every number; -0.0 equals 0.0
        others = st.sampled_from([*_FLOAT_COLUMNS, "i32"])
        operators = st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "<=>", "IS DISTINCT FROM"])
        choices.append(st.tuples(operators, others).map(lambda p: f"{name} {p[0]} {p[1]}"))
    if pa.types.is_string(TYPES[name]):
        patterns = st.sampled_from(_LIKE_PATTERNS).map(lambda p: p.replace("''", "'")).flatmap(_quoted)
        choices.append(patterns.map(lambda p: f"{name} LIKE {p}"))
    if pa.types.is_boolean(TYPES[name]):
        choices += [st.just(name), st.just(f"NOT {name}"), st.just(f"{name} IS TRUE")]
    return st.one_of(choices)


# frac is drawn as the other side of a column comparison only: most literals would make Spark
# round its values to fewer places, which lakeseek refuses (docs/predicates.md).
_leaves = st.sampled_from([name for name in TYPES if name != "frac"]).flatmap(_comparison)
predicates = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda p: f"({p[0]}) AND ({p[1]})"),
        st.tuples(inner, inner).map(lambda p: f"({p[0]}) OR ({p[1]})"),
        inner.map(lambda p: f"NOT ({p})"),
    ),
    max_leaves=3,
)


# -- the comparison ------------------------------------------------------------------------------
def _spark_truth(spark, wheres: list[str]) -> list[set[int] | Exception]:
    """Per predicate, the ids of the rows where Spark finds it TRUE (or Spark's error)."""
    # Spark reads the text as written unless it holds a backslash or a doubled quote, where
    # lakeseek's quoting (standard SQL) differs from Spark's (backslash escapes): then it reads
    # lakeseek's rendering in Spark's quoting.
    wheres = [to_spark_sql(where) if re.search(r"\\|''|\"\"", where) else where for where in wheres]
    columns = ", ".join(f"({where}) AS p{n}" for n, where in enumerate(wheres))
    # Parquet filter pushdown makes Spark drop NaN rows of `f = NaN` (parquet-mr's statistics
    # order NaN wrongly): the oracle is Spark's SQL semantics, evaluated on every row.
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        try:
            rows = spark.sql(f"SELECT id, {columns} FROM differential").collect()
            return [{row["id"] for row in rows if row[f"p{n}"] is True} for n in range(len(wheres))]
        except Exception:
            pass
        answers: list[set[int] | Exception] = []
        for where in wheres:  # one by one, to tell which predicates Spark rejects
            try:
                query = f"SELECT id FROM differential WHERE {where}"
                answers.append({row["id"] for row in spark.sql(query).collect()})
            except Exception as error:
                answers.append(error)
        return answers
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")


# CI runs a fixed set of examples; `make fuzz` sets LAKESEEK_FUZZ_EXAMPLES for a longer run with new seeds.
FUZZ_EXAMPLES = os.environ.get("LAKESEEK_FUZZ_EXAMPLES")


@settings(
    max_examples=int(FUZZ_EXAMPLES or 12),
    deadline=None,
    derandomize=FUZZ_EXAMPLES is None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(predicates, min_size=20, max_size=20))
def test_read_and_files_agree_with_spark(differential_lake, spark, wheres):
    indexes = [
        lakeseek.open_index(differential_lake),
        lakeseek.open_index(differential_lake, name="skipping"),
        lakeseek.open_index(differential_lake, name="cuckoo"),
        lakeseek.open_index(differential_lake, name="covering"),
        lakeseek.open_indexes(differential_lake),
    ]
    rows = pq.read_table(differential_lake, columns=["id"]).num_rows
    for where, expected in zip(wheres, _spark_truth(spark, wheres), strict=True):
        for index in indexes:
            if isinstance(expected, Exception):
                with pytest.raises(LakeseekError):
                    index.read(where)
                continue
            got = index.read(where, columns=["id"]).column("id").to_pylist()
            assert sorted(got) == sorted(expected), (index, where)
            assert len(got) <= rows
            holding = {path.rsplit("/", 1)[-1] for path in index.files(where)}
            needed = {f"part-{row_id // 9}.parquet" for row_id in expected}
            assert needed <= holding, (index, where)


def _files_holding(root: str, column: str, value: object) -> set[str]:
    table = pq.read_table(root, columns=[column])  # whole lake, one column
    held = set()
    for number in range(FILES):
        part = pq.read_table(f"{root}/part-{number}.parquet", columns=[column]).column(column).to_pylist()
        if value in part:
            held.add(f"part-{number}.parquet")
    assert table.num_rows
    return held


@pytest.mark.parametrize(
    ("column", "keys", "exact"),
    [
        ("i64", [1.5, 12, 12.0, 2**32 + 12, 2**53 + 1], [12, 2**32 + 12, 2**53 + 1]),
        ("i32", [114.5, 5, 2**32 + 5], [5]),
        (
            "d",
            [dt.datetime(2024, 1, 1, 12), dt.datetime(2024, 1, 1), dt.date(2024, 2, 29)],
            [dt.date(2024, 1, 1), dt.date(2024, 2, 29)],
        ),
        (
            "dec20",
            [9007199254740992.0, Decimal(9007199254740993), Decimal("0.5")],
            [Decimal(9007199254740992), Decimal(9007199254740993)],
        ),
    ],
)
def test_locate_pairs_only_keys_some_value_equals(differential_lake, column, keys, exact):
    """``locate`` converts no key lossily: 1.5 pairs nothing on an integer column, a
    datetime past midnight nothing on a date column."""
    index = lakeseek.open_index(differential_lake)
    found = index.locate(keys, column).to_pylist()
    got = {(pair["key"], pair["file"].rsplit("/", 1)[-1]) for pair in found}
    expected = {(key, path) for key in exact for path in _files_holding(differential_lake, column, key)}
    assert got == expected


@pytest.mark.parametrize(
    ("keys", "key_type", "exact"),
    [
        ([2**32 + 5, 5, -(2**31) - 1], "bigint", [5]),
        (["5", " 5", "05"], "string", [5]),
    ],
)
def test_locate_spark_pairs_only_keys_some_value_equals(differential_lake, spark, keys, key_type, exact):
    """Keys of another type than the column's pair as Spark compares them with it: never
    wrapped, a string cast to BIGINT (trimmed), each pair once."""
    index = lakeseek.open_index(differential_lake)
    frame = spark.createDataFrame([(key,) for key in keys], f"key {key_type}")
    got = sorted((row["key"], row["file"].rsplit("/", 1)[-1]) for row in locate_spark(index, frame, "i32").collect())
    expected = sorted((key, path) for key in exact for path in _files_holding(differential_lake, "i32", key))
    assert got == expected  # a list: ' 5' and '05' must not pair 5's files again


# -- sequences of queries on one handle per front end --------------------------------------------
@pytest.fixture(scope="module")
def front_ends(differential_lake, spark, jvm_source, tmp_path_factory):
    """One long-lived handle per front end, reused by every query of every example, and one
    ``lakeseek serve`` process (its workers keep their handles between requests).

    ``lakeseek`` is the JVM data source where a JDK is at hand (``jvm_source``), else the
    Python one: the views then test the Python source twice."""
    spark.read.format("lakeseek").load(differential_lake).createOrReplaceTempView("differential_jvm")
    spark.read.format("lakeseek_python").load(differential_lake).createOrReplaceTempView("differential_python")
    spark.sql("DROP TABLE IF EXISTS differential_table")
    spark.sql(f"CREATE TABLE differential_table USING lakeseek OPTIONS (path '{differential_lake}')")
    service = start_lakeseek_serve(tmp_path_factory.mktemp("differential-serve"), {"differential": differential_lake})
    yield {
        "index": lakeseek.open_index(differential_lake),
        "frame": spark.read.format("lakeseek").load(differential_lake),
        "service": service.endpoint,
    }
    service.stop()
    spark.sql("DROP TABLE IF EXISTS differential_table")


def _served_ids(endpoint: str, where: str) -> list[int]:
    """The ids of the rows ``lakeseek serve`` answers (an Arrow stream), through every index at once."""
    request = urllib.request.Request(
        f"{endpoint}/v1/lakes/differential/rows",
        data=json.dumps({"where": where, "columns": ["id"]}).encode(),
        headers={"Accept": "application/vnd.apache.arrow.stream", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return sorted(pa.ipc.open_stream(answer.read()).read_all().column("id").to_pylist())


def _ids_of(frame) -> list[int]:
    return sorted(row["id"] for row in frame.select("id").collect())


@settings(
    max_examples=int(FUZZ_EXAMPLES or 3),
    deadline=None,
    derandomize=FUZZ_EXAMPLES is None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(predicates, min_size=6, max_size=6), st.randoms(use_true_random=False))
def test_query_sequences_on_one_handle_per_front_end(differential_lake, spark, front_ends, wheres, order):
    """The same predicates in a random order on one Index, one DataFrame, two views, one
    table and the service: state kept between queries (pushed filters, listings, caches)
    must never leak."""
    truth = dict(zip(wheres, _spark_truth(spark, wheres), strict=True))
    answered = [where for where in wheres if not isinstance(truth[where], Exception)]
    steps = [
        (front_end, where) for where in answered for front_end in ("index", "to_spark", "frame", "views", "service")
    ]
    order.shuffle(steps)
    index, frame = front_ends["index"], front_ends["frame"]
    for front_end, where in steps:
        expected, spark_where = sorted(truth[where]), to_spark_sql(where)
        if front_end == "index":
            got = sorted(index.read(where, columns=["id"]).column("id").to_pylist())
        elif front_end == "to_spark":
            got = _ids_of(to_spark(index, spark, where))
        elif front_end == "frame":
            got = _ids_of(frame.where(spark_where))
        elif front_end == "service":
            got = _served_ids(front_ends["service"], where)
        else:
            for view in ("differential_jvm", "differential_python", "differential_table"):
                assert _ids_of(spark.sql(f"SELECT id FROM {view} WHERE {spark_where}")) == expected, (view, where)
                assert spark.sql(f"SELECT count(*) AS n FROM {view}").first()["n"] == 9 * FILES, view
            continue
        assert got == expected, (front_end, where)


# Literals Spark types otherwise than their spelling suggests: FLOAT with an integer is DOUBLE,
# a decimal's double is correctly rounded, CAST to DECIMAL(p, s) rounds half up, CAST of a
# fraction to an integer type drops it, and the smallest BIGINT is a literal.
LITERAL_TYPING = [
    "i32 = 5;;",
    # A BIGINT and a DECIMAL(20, 20) compare in DECIMAL(38, 18): 0.99999999999999999999 is 1 there.
    "i64 >= frac",
    "i32 < frac",
    "frac = mixed",
    "i32 = 2147483647F",
    "i32 < 2147483647F",
    "i32 IN (2147483647F, 5)",
    "i64 = CAST(9007199254740993 AS FLOAT)",
    "f32 = 16777217",
    "f32 >= 16777217L",
    "f32 IN (16777217, 0.1F)",
    "dec = 99.99D",
    "dec > 99.99E0",
    "dec <> 99.99D",
    "dec IN (0.1E0, 99.99)",
    "dec = CAST(0.095 AS DECIMAL(9,2))",
    "dec = CAST('114.495' AS DECIMAL(5,2))",
    "dec = CAST(-0.005 AS DECIMAL(4,2))",
    "dec <= CAST(0.1 AS DECIMAL)",
    "dec38 = CAST(-1234567890123456789012345678.94 AS DECIMAL(38,1))",
    "i32 = CAST(5.7 AS INT)",
    "i32 = CAST(-5.7E0 AS INT)",
    "i64 = -9223372036854775808L",
    # Past 38 digits Spark keeps the integer digits and rounds the rest (0.104 is not 0.10).
    "dec = 0.1040000000000000000000000000000001",
    "i32 = 0.0000000000000000000000000000000000001",
    "dec < dec38",
    "dec >= dec38",
    # A string cast to DOUBLE as Java parses it; in an IN list, to the type the other members make.
    "f64 = '1.5d'",
    "f64 <= '0x1p3'",
    "f64 <> '\x01 1.5'",  # Java's trim takes every character up to the space
    "f64 <> ' Inf '",
    # Spark trims a string it casts to an integer, a date or a timestamp of the characters up
    # to the space and DEL; one it casts to DECIMAL as Java trims.
    "i32 <> '\x015\x7f'",
    "d >= '\x7f2024-01-01\t'",
    "ts < '\x1f1970-01-01 00:00:01\x7f'",
    "dec <> '\x0099.99 '",
    "i32 = CAST('\x7f5' AS INT)",
    "ts <= '1970-01-01 00:00:01\t+01:00'",
    "i32 IN ('5.0', 0.3D)",
    "i32 NOT IN (1.5, '114')",
    # With a decimal member, a string is cast to the exact decimal the list makes, not to a
    # double (2**53 + 1 is 2**53 as a double).
    "i64 IN ('9007199254740992', 1.5)",
    "i64 NOT IN ('9007199254740993', 1.5)",
    "i64 IN (' 9007199254740993 ', 2.55)",
    "i32 IN ('114.45', 0.5)",
    # Left to right: after a decimal member a string makes DOUBLE (2**53 + 1 equals 2**53 then).
    "i64 IN (1.5, '9007199254740992')",
    "i16 IN (0.5, 'Infinity', '300')",
    "i64 IN ('9007199254740993', 0.9999999999999999999999999999999999999)",
    # A uint64 column is Spark's DECIMAL(20, 0): a string is compared with it as a double.
    "u64 = '9223372036854775807'",
    "u64 <> '9223372036854775807'",
    "u64 = '5.0'",
]

# Predicates Spark refuses, which lakeseek must refuse too rather than answer.
SPARK_REFUSES = [
    "i32 = -(-2147483648)",
    "i8 = -(-128Y)",
    "f64 = '1_000'",
    "f64 = '-nan'",  # Java's NaN has a sign, Spark's nan none
    "f64 = '\u00a01.5'",  # not a space to Java
    "i32 = '\u20035'",  # nor to Spark's trim
    "d = '2024-01-01\u3000'",
    "dec = '\x7f99.99'",
    "ts = '1970-01-01 00:00:00\u00a0'",  # a zone, or what follows the time, is trimmed as Java trims
    "ts > '1970-01-01\u2003'",
    "dec > '1_0'",
    "i32 = CAST('5.0' AS INT)",
    "i32 IN (1,)",
    "i32 IN (1, 2,)",
    "; i32 = 5",
    "i32 = 5; i32 = 6",
    "i32 IN (1,,2)",
    "i32 IN (,1)",
    "i32 NOT IN (1,,2)",
]


@pytest.mark.parametrize("where", SPARK_REFUSES)
def test_what_spark_refuses_is_refused(differential_lake, spark, front_ends, where):
    (found,) = _spark_truth(spark, [where])
    assert isinstance(found, Exception), found
    with pytest.raises(LakeseekError):
        front_ends["index"].read(where)


@pytest.mark.parametrize("where", LITERAL_TYPING)
def test_literals_are_typed_as_spark_types_them(differential_lake, spark, front_ends, where):
    expected, index = _spark_ids(spark, where), front_ends["index"]
    assert _read_ids(index, where) == expected
    assert sorted(index.scan(where, columns=["id"]).column("id").to_pylist()) == expected
    assert _served_ids(front_ends["service"], where) == expected  # every index kind weighed


def _spark_ids(spark, where: str) -> list[int]:
    """The ids of the rows Spark finds ``where`` TRUE for, sorted (Spark must answer it)."""
    (found,) = _spark_truth(spark, [where])
    assert not isinstance(found, Exception), found
    return sorted(found)


def _read_ids(index, where: str) -> list[int]:
    return sorted(index.read(where, columns=["id"]).column("id").to_pylist())


SIGNED_ZEROS_AND_NANS = [
    "f32 = 0.0",
    "f32 IN (0.0E0)",
    "f32 = -0.0",
    "f64 = 0.0",
    "f64 IN (-0.0, 1.0)",
    "f32 = CAST('NaN' AS FLOAT)",
    "f64 = CAST('NaN' AS DOUBLE)",
    "f32 >= 0.0 AND f32 <= 0.0",
    "f64 <> 0.0",
    "(dec = 0.10) AND ((dec20 = 9007199254740993) AND (f32 IN (0.0E0)))",
    "f64 = f64",
    "f64 <> f64",
    "f32 = f64",
    "f32 < f64",
    "f64 >= f32",
    "NOT (f32 > f64)",
    "f32 <=> f64",
    "f32 <= i32 OR f64 IS DISTINCT FROM f32",
]
# Spark's Parquet reader skipped the row groups holding these: it hands Parquet the literal
# through Java's hybrid calendar, where the files hold proleptic Gregorian days.
BEFORE_THE_GREGORIAN_CALENDAR = [
    "d = DATE '1582-10-10'",
    "d IN ('1582-10-10', DATE '1970-01-01')",
    "ts = TIMESTAMP '1582-10-10 01:00:00'",
    "NOT (ts <> TIMESTAMP '1582-10-10 01:00:00')",
]
# Past the years Python holds: the JVM data source failed with an OverflowError. (PySpark's
# Python data source API fails on them before lakeseek_python sees its filters: README.)
PAST_PYTHONS_YEARS = [
    "d < DATE '+10000-01-01'",
    "ts > TIMESTAMP '-0001-01-01 00:00:00'",
    "d IN (DATE '2024-01-01', DATE '+10000-01-01')",
]


@pytest.mark.parametrize("where", SIGNED_ZEROS_AND_NANS + BEFORE_THE_GREGORIAN_CALENDAR + PAST_PYTHONS_YEARS)
def test_signed_zeros_nans_and_old_days_through_every_front_end(differential_lake, spark, front_ends, where):
    """-0.0 equals 0.0, NaN equals NaN and is above every number (Spark's SQL): Spark's Parquet
    reader, filtering row groups by their dictionaries, compared floats by their bits and
    dropped -0.0 for `= 0.0`; two columns were compared by IEEE's rules (NaN = NaN false). And
    days before 1582-10-15 are found (see BEFORE_THE_GREGORIAN_CALENDAR)."""
    expected, spark_where = _spark_ids(spark, where), to_spark_sql(where)
    assert _read_ids(front_ends["index"], where) == expected
    assert _ids_of(to_spark(front_ends["index"], spark, where)) == expected
    assert _ids_of(front_ends["frame"].where(spark_where)) == expected
    views = ["differential_jvm", "differential_table"] + (
        ["differential_python"] if where not in PAST_PYTHONS_YEARS else []
    )
    for view in views:
        assert _ids_of(spark.sql(f"SELECT id FROM {view} WHERE {spark_where}")) == expected, view
    assert _served_ids(front_ends["service"], where) == expected
