"""SQL predicate text -> :mod:`lakeseek.expressions` (the only module that imports sqlglot).

The dialect is Spark SQL's (backquoted identifiers, ``X'..'`` hex, ``DATE '..'``) with
standard SQL string quoting: ``'it''s'`` is ``it's`` and a backslash is a plain character
(Spark itself reads backslash escapes, and concatenates ``'it''s'`` into ``its``).
:func:`to_spark_sql` re-writes a predicate in Spark's own dialect so Spark reads it the
same way lakeseek does.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import SqlglotError

from lakeseek.exceptions import PredicateParseError, UnsupportedPredicateError
from lakeseek.expressions import (
    FLIPPED,
    And,
    Comparison,
    Constant,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    Predicate,
)


class LakeseekDialect(Spark):
    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES = ["'"]  # noqa: RUF012 (sqlglot's own class attribute convention)
        IDENTIFIERS = ["`", '"']  # noqa: RUF012


_COMPARISONS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


def parse_tree(text: str) -> exp.Expr:
    if not text or not text.strip():
        raise PredicateParseError("the predicate is empty")
    try:
        trees = sqlglot.parse(text, read=LakeseekDialect)
    except SqlglotError as error:
        raise PredicateParseError(f"malformed predicate {text!r}: {_first_line(error)}") from error
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise PredicateParseError(f"malformed predicate {text!r}: expected one boolean expression")
    return trees[0]


def parse_where(text: str) -> Predicate:
    """Parse a SQL ``WHERE`` predicate."""
    return _convert(parse_tree(text))


def to_spark_sql(text: str) -> str:
    """The predicate as Spark SQL text that Spark reads exactly as lakeseek does."""
    return parse_tree(text).sql(dialect="spark")


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _convert(node: exp.Expr) -> Predicate:
    if isinstance(node, exp.Paren):
        return _convert(node.this)
    if isinstance(node, exp.And):
        return And(_convert(node.left), _convert(node.right))
    if isinstance(node, exp.Or):
        return Or(_convert(node.left), _convert(node.right))
    if isinstance(node, exp.Not):
        return Not(_convert(node.this))
    if isinstance(node, exp.Boolean):
        return Constant(bool(node.this))
    if isinstance(node, exp.Null):
        return Constant(None)
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise UnsupportedPredicateError(f"unsupported predicate {node.sql()!r}: only IS [NOT] NULL")
        return IsNull(_column(node.this))
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("unnest") or not node.expressions:
            raise UnsupportedPredicateError(f"unsupported predicate {node.sql()!r}: IN needs a list of literals")
        return In(_column(node.this), tuple(_literal(v) for v in node.expressions))
    if isinstance(node, exp.Between):
        column = _column(node.this)
        return And(
            Comparison(">=", column, _literal(node.args["low"])),
            Comparison("<=", column, _literal(node.args["high"])),
        )
    if isinstance(node, exp.Like) and not isinstance(node, exp.ILike):
        if node.args.get("escape"):
            raise UnsupportedPredicateError(f"unsupported predicate {node.sql()!r}: LIKE ... ESCAPE")
        pattern = _literal(node.expression)
        if pattern.kind != "string":
            raise UnsupportedPredicateError(f"unsupported predicate {node.sql()!r}: LIKE needs a string pattern")
        return Like(_column(node.this), pattern.value)
    if isinstance(node, exp.Escape):
        raise UnsupportedPredicateError(f"unsupported predicate {node.sql()!r}: LIKE ... ESCAPE")
    op = _COMPARISONS.get(type(node))
    if op is not None:
        left, right = node.left, node.right
        if isinstance(left, exp.Column) and not isinstance(right, exp.Column):
            return Comparison(op, _column(left), _literal(right))
        if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
            return Comparison(FLIPPED[op], _column(right), _literal(left))
        raise UnsupportedPredicateError(f"unsupported predicate {node.sql()!r}: compare one column with one literal")
    raise UnsupportedPredicateError(f"unsupported predicate {node.sql()!r}")


def _column(node: exp.Expr) -> str:
    if isinstance(node, exp.Paren):
        return _column(node.this)
    if not isinstance(node, exp.Column):
        raise UnsupportedPredicateError(f"expected a column name, found {node.sql()!r}")
    if node.table:
        return f"{node.table}.{node.name}"
    return node.name


def _literal(node: exp.Expr) -> Literal:
    if isinstance(node, exp.Paren):
        return _literal(node.this)
    if isinstance(node, exp.Null):
        return Literal("null", None)
    if isinstance(node, exp.Boolean):
        return Literal("bool", bool(node.this))
    if isinstance(node, exp.HexString):
        try:
            return Literal("hex", bytes.fromhex(node.this))
        except ValueError as error:
            raise PredicateParseError(f"malformed hex literal X'{node.this}'") from error
    if isinstance(node, exp.Neg):
        inner = _literal(node.this)
        if inner.kind not in ("int", "decimal", "float"):
            raise UnsupportedPredicateError(f"cannot negate {node.this.sql()!r}")
        return Literal(inner.kind, -inner.value)
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        target = node.to.this
        if target == exp.DataType.Type.DATE:
            return Literal("date", node.this.this)
        if target in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.TIMESTAMPNTZ):
            return Literal("timestamp", node.this.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Literal("string", node.this)
        return _number(node.this)
    raise UnsupportedPredicateError(f"expected a literal, found {node.sql()!r}")


def _number(text: str) -> Literal:
    try:
        if any(c in text for c in "eE"):
            return Literal("float", float(text))
        if "." in text:
            return Literal("decimal", Decimal(text))
        return Literal("int", int(text))
    except (ValueError, InvalidOperation) as error:
        raise PredicateParseError(f"malformed number {text!r}") from error
