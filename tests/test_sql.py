from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from lakeseek.exceptions import PredicateParseError, PredicateTypeError, UnknownColumnError, UnsupportedPredicateError
from lakeseek.expressions import And, Comparison, Constant, In, IsNull, Like, Literal, Not, Or
from lakeseek.expressions.binding import bind
from lakeseek.expressions.sql import parse_where, to_spark_sql


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = 1", Comparison("=", "a", Literal("int", 1))),
        ("1 < a", Comparison(">", "a", Literal("int", 1))),
        ("a <> -2.50", Comparison("<>", "a", Literal("decimal", Decimal("-2.50")))),
        ("a != 1e3", Comparison("<>", "a", Literal("float", 1000.0))),
        ("name = 'it''s'", Comparison("=", "name", Literal("string", "it's"))),
        ("name = 'a\\b'", Comparison("=", "name", Literal("string", "a\\b"))),
        ("`my col` = ''", Comparison("=", "my col", Literal("string", ""))),
        # Double quotes make a string, as in Spark (spark.sql.ansi.doubleQuotedIdentifiers is off): they named a column.
        ('name = "it\'s"', Comparison("=", "name", Literal("string", "it's"))),
        ('name = "a""b"', Comparison("=", "name", Literal("string", 'a"b'))),
        ('name = "a\\b"', Comparison("=", "name", Literal("string", "a\\b"))),  # no escapes, as in single quotes
        ("name = 'a\"\"b'", Comparison("=", "name", Literal("string", 'a""b'))),
        ("b = X'00ff'", Comparison("=", "b", Literal("hex", b"\x00\xff"))),
        ('b = x"00FF"', Comparison("=", "b", Literal("hex", b"\x00\xff"))),  # Spark's other quote: it was refused
        ("d = DATE '2024-01-02'", Comparison("=", "d", Literal("date", "2024-01-02"))),
        ("t = TIMESTAMP '2024-01-02 03:04:05'", Comparison("=", "t", Literal("timestamp", "2024-01-02 03:04:05"))),
        ("a IN (1, NULL)", In("a", (Literal("int", 1), Literal("null", None)))),
        ("a IS NULL", IsNull("a")),
        ("a IS NOT NULL", Not(IsNull("a"))),
        ("a NOT IN (1)", Not(In("a", (Literal("int", 1),)))),
        ("a BETWEEN 1 AND 3", And(Comparison(">=", "a", Literal("int", 1)), Comparison("<=", "a", Literal("int", 3)))),
        ("name LIKE 'ab%'", Like("name", "ab%")),
        (
            "(a = 1 OR b = 2) AND NOT c = 3",
            And(
                Or(Comparison("=", "a", Literal("int", 1)), Comparison("=", "b", Literal("int", 2))),
                Not(Comparison("=", "c", Literal("int", 3))),
            ),
        ),
        ("TRUE", Constant(True)),
    ],
)
def test_parse(text, expected):
    assert parse_where(text) == expected


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", PredicateParseError),
        ("   ", PredicateParseError),
        ("a =", PredicateParseError),
        ("a = 'open", PredicateParseError),
        ("a = 1; b = 2", PredicateParseError),
        ("a IN (SELECT 1)", UnsupportedPredicateError),
        ("a LIKE b", UnsupportedPredicateError),
        ("a IS 5", UnsupportedPredicateError),
        ("a LIKE 'x\\'", PredicateParseError),
        # An interval past Spark's BIGINT of microseconds was an OverflowError traceback (a 500 from the service).
        ("d = DATE '2024-01-01' - INTERVAL 1000000000 DAY", PredicateParseError),
        ("t = TIMESTAMP '2024-01-01 00:00:00' + INTERVAL 999999999999999999999 SECOND", PredicateParseError),
        ("a LIKE 'x\\y'", PredicateParseError),
        ("a LIKE 'x%\\'", PredicateParseError),
        ("lower(a) = 'x'", UnsupportedPredicateError),
        ("a = -'x'", UnsupportedPredicateError),
        ("f = 1e400", PredicateParseError),  # Spark: out of the range of DOUBLE, not infinity
        ("f < -2E309", PredicateParseError),
    ],
)
def test_parse_errors(text, error):
    with pytest.raises(error):
        parse_where(text)


def test_spark_sql_keeps_lakeseek_quoting():
    assert to_spark_sql("name = 'it''s' OR name = 'a\\b'") == "name = 'it\\'s' OR name = 'a\\\\b'"


SCHEMA = pa.schema(
    [
        ("i", pa.int32()),
        ("s", pa.string()),
        ("b", pa.binary()),
        ("d", pa.date32()),
        ("t", pa.timestamp("us", tz="UTC")),
        ("n", pa.timestamp("us")),
        ("m", pa.decimal128(6, 2)),
        ("f", pa.bool_()),
        ("CamelCase", pa.int64()),
    ]
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("i = 7", 7),
        ("i = 7.0", 7),
        ("s = 'x'", "x"),
        ("b = 'ab'", b"ab"),
        ("b = X'0a'", b"\n"),
        ("d = '2024-02-29'", dt.date(2024, 2, 29)),
        ("t = TIMESTAMP '2024-01-01 10:00:00'", dt.datetime(2024, 1, 1, 10, tzinfo=dt.timezone.utc)),
        ("t = '2024-01-01T12:00:00+02:00'", dt.datetime(2024, 1, 1, 10, tzinfo=dt.timezone.utc)),
        ("n = '2024-01-01 10:00:00'", dt.datetime(2024, 1, 1, 10)),
        ("m = 12.5", Decimal("12.50")),
        ("f = FALSE", False),
        ("camelcase = 1", 1),
    ],
)
def test_bind_coerces_literals(text, value):
    bound = bind(parse_where(text), SCHEMA)
    assert bound.literal.value == value and type(bound.literal.value) is type(value)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("i = 'x'", PredicateTypeError),
        ("i = '5.0'", PredicateTypeError),
        ("s = 1", PredicateTypeError),
        ("d = '2024-02-30'", PredicateTypeError),
        ("d = '2024-W01-1'", PredicateTypeError),
        ("d = '20240101'", PredicateTypeError),
        ("n = '2024-01-01 1000'", PredicateTypeError),
        ("t = 'yesterday'", PredicateTypeError),
        ("f = 1", PredicateTypeError),
        ("i = d", PredicateTypeError),
        ("s LIKE 'x%' AND i LIKE '1'", PredicateTypeError),
        ("zz = 1", UnknownColumnError),
    ],
)
def test_bind_errors(text, error):
    with pytest.raises(error):
        bind(parse_where(text), SCHEMA)


def test_comparisons_with_null_are_unknown():
    assert bind(parse_where("i = NULL"), SCHEMA) == Constant(None)
    assert bind(parse_where("i IN (NULL)"), SCHEMA) == Constant(None)
    assert bind(parse_where("i IN (1, NULL)"), SCHEMA) == Or(
        In("i", (Literal("value", 1, pa.int32()),)), Constant(None)
    )


@pytest.mark.parametrize(
    ("op", "value", "kept"),
    [
        (">", 1.0, [5.0, "nan"]),
        (">=", 5.0, [5.0, "nan"]),
        ("<", 5.0, [1.0, -0.0]),
        ("=", 0.0, [-0.0]),
        ("<>", 1.0, [5.0, -0.0, "nan"]),
        ("=", float("nan"), ["nan"]),
        (">", float("nan"), []),
        ("<=", float("nan"), [1.0, 5.0, -0.0, "nan"]),
    ],
)
def test_float_comparisons_order_nan_as_spark_does(op, value, kept):
    import pyarrow as pa

    from lakeseek.expressions import Comparison, Literal, Not
    from lakeseek.expressions.arrow import to_arrow

    schema = pa.schema([("x", pa.float64())])
    table = pa.table({"x": [1.0, 5.0, -0.0, float("nan"), None]})
    predicate = Comparison(op, "x", Literal("value", value))

    def shown(filtered):
        return ["nan" if v != v else v for v in filtered.column("x").to_pylist()]

    assert shown(table.filter(to_arrow(predicate, schema))) == kept
    # NOT keeps the other non-NULL rows: NULL stays unknown.
    others = [v for v in [1.0, 5.0, -0.0, "nan"] if v not in kept]
    assert shown(table.filter(to_arrow(Not(predicate), schema))) == others


def test_float_in_treats_the_zeros_as_equal():
    import pyarrow as pa

    from lakeseek.expressions import In, Literal
    from lakeseek.expressions.arrow import to_arrow

    schema = pa.schema([("x", pa.float64())])
    table = pa.table({"x": [0.0, -0.0, 1.0, None]})
    kept = table.filter(to_arrow(In("x", (Literal("value", 0.0), Literal("value", 2.0))), schema))
    assert kept.column("x").to_pylist() == [0.0, -0.0]
