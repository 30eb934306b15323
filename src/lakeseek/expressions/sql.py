"""SQL predicate text -> :mod:`lakeseek.expressions` (the only module that imports sqlglot).

The dialect is Spark SQL's (backquoted identifiers, strings in single or double quotes,
``X'..'`` hex, ``DATE '..'``) with standard SQL string quoting: ``'it''s'`` is ``it's`` and a
backslash is a plain character (Spark itself reads backslash escapes, and concatenates
``'it''s'`` into ``its``).
:func:`to_spark_sql` re-writes a predicate in Spark's own dialect so Spark reads it the
same way lakeseek does.
"""

from __future__ import annotations

import functools
import math
import re
import sys
import threading
from decimal import ROUND_HALF_UP, Context, Decimal

import pyarrow as pa
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, SqlglotError
from sqlglot.tokens import Token, TokenType

from lakeseek.exceptions import PredicateParseError, UnsupportedPredicateError
from lakeseek.expressions import (
    FLIPPED,
    And,
    ColumnComparison,
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
from lakeseek.expressions.java_text import SPARK_BLANKS
from lakeseek.expressions.types import (
    MICROS_PER_DAY,
    date_text,
    epoch_days,
    epoch_micros,
    exact_decimal,
    integer_literal_type,
    parse_date,
    parse_timestamp,
    spark_double,
    timestamp_text,
)


class LakeseekDialect(Spark):
    class Tokenizer(Spark.Tokenizer):
        # Spark's two string quotes (for bytes in hex too), each escaped by doubling it; only
        # backquotes name columns.
        QUOTES = ["'", '"']  # noqa: RUF012 (sqlglot's own class attribute convention)
        STRING_ESCAPES = ["'", '"']  # noqa: RUF012
        IDENTIFIERS = ["`"]  # noqa: RUF012
        HEX_STRINGS = [("X'", "'"), ("x'", "'"), ('X"', '"'), ('x"', '"')]  # noqa: RUF012


_COMPARISONS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


# sqlglot parses and prints nested SQL recursively: deep predicates run in a thread with a
# deep stack; past these limits a predicate is refused with a message, not a traceback.
MAX_NESTING = 2_000
_DEEP_RECURSION = 40 * MAX_NESTING
_DEEP_STACK_BYTES = 512 * 1024 * 1024


def parse_tree(text: str) -> exp.Expr:
    if not text or not text.strip():
        raise PredicateParseError("the predicate is empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:  # bytes that are not UTF-8, kept by Python as surrogates
        raise PredicateParseError(f"the predicate is not valid UTF-8 text (at character {error.start})") from None
    try:
        tokens = _DIALECT.tokenize(text)
        _refuse_what_spark_refuses(tokens)
        trees = _deeply(_DIALECT.parser().parse, tokens, text)
    except SqlglotError as error:
        raise PredicateParseError(f"malformed predicate {_shown(text)}: {_parse_error(error)}") from error
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise PredicateParseError(f"malformed predicate {_shown(text)}: expected one boolean expression")
    named = trees[0].find(exp.Alias)
    if named is not None:
        # Spark reads `a = 1 x` as `a = 1` named x, so a typo there silently drops what follows.
        raise PredicateParseError(
            f"malformed predicate {_shown(text)}: unexpected {named.alias!r} after {_written(named.this)!r}"
        )
    return _signed_typed_numbers(trees[0])


_DIALECT = LakeseekDialect()


def _refuse_what_spark_refuses(tokens: list[Token]) -> None:
    """sqlglot takes a ``;`` anywhere and a list with an empty member (``(1,)``, ``(1,,2)``,
    ``(,1)``), dropping it; Spark's parser refuses them, but for the ``;`` ending a statement
    (``... WHERE a = 5;;``)."""
    statement_end = len(tokens)
    while statement_end and tokens[statement_end - 1].token_type == TokenType.SEMICOLON:
        statement_end -= 1
    if not statement_end:
        return  # nothing but ';': no expression, as the parser says
    empty_member = {
        (TokenType.COMMA, TokenType.R_PAREN),
        (TokenType.COMMA, TokenType.COMMA),
        (TokenType.L_PAREN, TokenType.COMMA),
    }
    for at, token in enumerate(tokens[:statement_end]):
        following = tokens[at + 1].token_type if at + 1 < statement_end else None
        if token.token_type == TokenType.SEMICOLON or (token.token_type, following) in empty_member:
            culprit = tokens[at + 1] if token.token_type == TokenType.L_PAREN else token
            raise ParseError(f"Unexpected '{culprit.text}'. Line {culprit.line}, Col: {culprit.col}")


def _signed_typed_numbers(tree: exp.Expr) -> exp.Expr:
    """``tree`` with each ``-`` before a typed number (``-128Y``, ``-9223372036854775808L``,
    which sqlglot reads as ``-CAST(128 AS TINYINT)``) moved into the number, as Spark's lexer
    reads it: the smallest value of a type is a literal of that type."""
    for negation in list(tree.find_all(exp.Neg)):
        cast = negation.this
        if isinstance(cast, exp.Cast) and isinstance(cast.this, exp.Literal) and not cast.this.is_string:
            negative = cast.copy()
            negative.set("this", exp.Literal.number(f"-{cast.this.this}"))
            negation.replace(negative)
    return tree


def parse_where(text: str) -> Predicate:
    """Parse a SQL ``WHERE`` predicate (a text parsed before is not parsed again: predicates
    are immutable, and a service repeats its queries' texts)."""
    if not isinstance(text, str) or len(text) > _KEPT_TEXT:
        return _deeply(_convert, parse_tree(text))
    return _parsed(text)


_KEPT_TEXT = 4096  # longer texts (large IN lists) are parsed each time rather than kept


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Predicate:
    return _deeply(_convert, parse_tree(text))


def to_spark_sql(text: str) -> str:
    """The predicate as Spark SQL text that Spark reads exactly as lakeseek does."""
    return _deeply(parse_tree(text).sql, dialect="spark")


def _deeply(function, *args, **kwargs):
    """``function(*args, **kwargs)``, in a thread with a deep stack if it runs out of recursion."""
    try:
        return function(*args, **kwargs)
    except RecursionError:
        pass
    outcome: dict[str, object] = {}

    def run() -> None:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, _DEEP_RECURSION))
        try:
            outcome["value"] = function(*args, **kwargs)
        except RecursionError:
            outcome["error"] = PredicateParseError(
                f"the predicate nests too deeply (lakeseek takes up to about {MAX_NESTING:,} levels)"
            )
        except Exception as error:
            outcome["error"] = error
        finally:
            sys.setrecursionlimit(limit)

    with _STACK_SIZE_LOCK:
        previous = threading.stack_size(_DEEP_STACK_BYTES)
        try:
            worker = threading.Thread(target=run, name="lakeseek-deep-predicate")
            worker.start()
        finally:
            threading.stack_size(previous)
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


_STACK_SIZE_LOCK = threading.Lock()


def _shown(text: str) -> str:
    """The predicate for a one-line message: shortened if long."""
    shown = repr(text)
    return shown if len(shown) <= 200 else shown[:160] + f"... ({len(text):,} characters)"


# sqlglot names a missing operand by its expression class and argument.
_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*\.(\w+)'>\.?")
_OPERATORS = {"EQ": "=", "NEQ": "<>", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<=", "NullSafeEQ": "<=>", "Neg": "-"}
_UNARY = {"NOT", "-"}
_OPERANDS = {
    "this": "its left side",
    "expression": "its right side",
    "low": "its lower bound",
    "high": "its upper bound",
}


def _parse_error(error: SqlglotError) -> str:
    """sqlglot's message in the predicate's words: "'=' lacks its right side (at character 4)"."""
    message = _first_line(error)
    missing = _MISSING.search(message)
    if missing is not None:
        argument, operator = missing.groups()
        operator = _OPERATORS.get(operator, operator.upper())
        operand = "its operand" if operator in _UNARY else _OPERANDS.get(argument, f"its {argument}")
        message = message.replace(missing.group(0), f"'{operator}' lacks {operand}")
    return re.sub(r"\.? Line (\d+), Col: (\d+)\.?$", lambda m: f" (at character {m[2]})", message)


def _written(node: exp.Expr) -> str:
    """A part of a predicate for a message, as Spark writes it (sqlglot's own SQL says
    ``TRY_CAST(1 AS TEXT)`` for ``CAST(1 AS STRING)``)."""
    return node.sql(dialect=LakeseekDialect)


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _convert(node: exp.Expr) -> Predicate:
    negated = False
    while isinstance(node, exp.Paren | exp.Not):  # NOT NOT x is x in three-valued logic too
        negated ^= isinstance(node, exp.Not)
        node = node.this
    converted = _convert_one(node)
    return Not(converted) if negated else converted


def _convert_one(node: exp.Expr) -> Predicate:
    if isinstance(node, exp.And | exp.Or):
        operands = [_convert(operand) for operand in _chain(node, type(node))]
        return balanced(operands, And if isinstance(node, exp.And) else Or)
    if isinstance(node, exp.Boolean):
        return Constant(bool(node.this))
    if isinstance(node, exp.Null):
        return Constant(None)
    if _is_column(node):  # a bare boolean column
        return Comparison("=", _column(node), Literal("bool", True))
    if isinstance(node, exp.Is):
        return _is(node)
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("unnest") or not node.expressions:
            raise UnsupportedPredicateError(f"unsupported predicate {_written(node)!r}: IN needs a list of literals")
        return In(_column(node.this), tuple(_literal(v) for v in node.expressions))
    if isinstance(node, exp.Between):
        column = _column(node.this)
        return And(
            Comparison(">=", column, _literal(node.args["low"])),
            Comparison("<=", column, _literal(node.args["high"])),
        )
    if isinstance(node, exp.Like) and not isinstance(node, exp.ILike):
        if node.args.get("escape"):
            raise UnsupportedPredicateError(f"unsupported predicate {_written(node)!r}: LIKE ... ESCAPE")
        pattern = _literal(node.expression)
        if pattern.kind != "string":
            raise UnsupportedPredicateError(f"unsupported predicate {_written(node)!r}: LIKE needs a string pattern")
        like = Like(_column(node.this), _checked_like(pattern.value))
        return Not(like) if node.args.get("negate") else like  # sqlglot reads `a NOT LIKE p` as a negated Like
    if isinstance(node, exp.Escape):
        raise UnsupportedPredicateError(f"unsupported predicate {_written(node)!r}: LIKE ... ESCAPE")
    if isinstance(node, exp.NullSafeEQ | exp.NullSafeNEQ):
        return _null_safe(node)
    op = _COMPARISONS.get(type(node))
    if op is not None:
        left, right = node.left, node.right
        if _is_column(left) and _is_column(right):
            return ColumnComparison(op, _column(left), _column(right))
        if _is_column(left):
            return Comparison(op, _column(left), _literal(right))
        if _is_column(right):
            return Comparison(FLIPPED[op], _column(right), _literal(left))
        raise UnsupportedPredicateError(f"unsupported predicate {_written(node)!r}: compare a column with a literal")
    raise UnsupportedPredicateError(f"unsupported predicate {_written(node)!r}")


def _chain(node: exp.Expr, kind: type) -> list[exp.Expr]:
    """The operands of a chain of one operator (``a AND b AND c``, parenthesised or not), in order."""
    operands = []
    pending = [node]
    while pending:
        current = pending.pop()
        while isinstance(current, exp.Paren) and isinstance(current.this, kind):
            current = current.this
        if isinstance(current, kind):
            pending += [current.right, current.left]
        else:
            operands.append(current)
    return operands


def balanced(operands: list[Predicate], kind: type) -> Predicate:
    """``operands`` joined by ``kind`` (And or Or) in a tree of logarithmic depth, so that a
    flat chain of thousands of comparisons binds, plans and filters without deep recursion."""
    while len(operands) > 1:
        operands = [
            kind(operands[n], operands[n + 1]) if n + 1 < len(operands) else operands[n]
            for n in range(0, len(operands), 2)
        ]
    return operands[0]


def _is(node: exp.Is) -> Predicate:
    """``IS [NOT] NULL``, ``IS [NOT] TRUE | FALSE`` (never NULL themselves)."""
    if isinstance(node.expression, exp.Null):
        return IsNull(_column(node.this))
    if isinstance(node.expression, exp.Boolean):
        column = _column(node.this)
        return And(Not(IsNull(column)), Comparison("=", column, Literal("bool", bool(node.expression.this))))
    raise UnsupportedPredicateError(f"unsupported predicate {_written(node)!r}: only IS [NOT] NULL, TRUE or FALSE")


def _null_safe(node: exp.Expr) -> Predicate:
    """``a <=> v`` (``IS NOT DISTINCT FROM``) is never NULL; ``IS DISTINCT FROM`` is its negation."""
    left, right = node.left, node.right
    if not _is_column(left):
        left, right = right, left
    if not _is_column(left):
        raise UnsupportedPredicateError(f"unsupported predicate {_written(node)!r}: compare a column with a literal")
    if _is_column(right):  # both NULL, or both not NULL and equal
        a, b = _column(left), _column(right)
        both_null = And(IsNull(a), IsNull(b))
        same = Or(both_null, And(And(Not(IsNull(a)), Not(IsNull(b))), ColumnComparison("=", a, b)))
    else:
        column, literal = _column(left), _literal(right)
        same = IsNull(column) if literal.kind == "null" else And(Not(IsNull(column)), Comparison("=", column, literal))
    return same if isinstance(node, exp.NullSafeEQ) else Not(same)


def _checked_like(pattern: str) -> str:
    """The pattern, if its escapes are Spark's: a backslash before ``%``, ``_`` or a backslash."""
    escaped = False
    for char in pattern:
        if escaped and char not in "%_\\":
            raise PredicateParseError(
                f"invalid LIKE pattern {pattern!r}: the escape character may not precede {char!r}"
            )
        escaped = not escaped and char == "\\"
    if escaped:
        raise PredicateParseError(f"invalid LIKE pattern {pattern!r}: it may not end with the escape character")
    return pattern


def _is_column(node: exp.Expr) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Column)


def _column(node: exp.Expr) -> str:
    if isinstance(node, exp.Paren):
        return _column(node.this)
    if not isinstance(node, exp.Column):
        raise UnsupportedPredicateError(f"expected a column name, found {_written(node)!r}")
    if node.table:
        # Spark reads a.b as the field b of the struct column a (a column named 'a.b' is
        # `a.b`): never the top-level column 'a.b', whose values are another column's.
        path = ".".join(part.name for part in node.parts)
        raise UnsupportedPredicateError(
            f"'{path}' names a field of a struct column '{node.parts[0].name}': struct fields are not supported "
            f"(a column named '{path}' is written `{path}`)"
        )
    return node.name


_NUMERIC_TYPES = {
    exp.DataType.Type.TINYINT: pa.int8(),
    exp.DataType.Type.SMALLINT: pa.int16(),
    exp.DataType.Type.INT: pa.int32(),
    exp.DataType.Type.BIGINT: pa.int64(),
    exp.DataType.Type.FLOAT: pa.float32(),
    exp.DataType.Type.DOUBLE: pa.float64(),
}
_TIMESTAMP_KINDS = {
    exp.DataType.Type.TIMESTAMP: "timestamp",
    exp.DataType.Type.TIMESTAMPTZ: "timestamp",
    exp.DataType.Type.TIMESTAMPLTZ: "timestamp",
    exp.DataType.Type.TIMESTAMPNTZ: "timestamp_ntz",
}


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
        return _negated(_literal(node.this), node.this)
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal | exp.Neg | exp.Paren):
        return _typed(node)
    if isinstance(node, exp.Add | exp.Sub):
        return _date_arithmetic(node)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Literal("string", node.this)
        return _number(node.this)
    raise UnsupportedPredicateError(f"expected a literal, found {_written(node)!r}")


def _negated(literal: Literal, node: exp.Expr) -> Literal:
    if literal.kind not in ("int", "decimal", "float"):
        raise UnsupportedPredicateError(f"cannot negate {_written(node)!r}")
    negated = literal.value.copy_negate() if isinstance(literal.value, Decimal) else -literal.value
    # An integer keeps its type when negated (an untyped one is INT, BIGINT or DECIMAL by its value).
    typed = literal.type or (integer_literal_type(literal.value) if literal.kind == "int" else None)
    if typed is not None and pa.types.is_integer(typed) and not _fits(negated, typed):
        raise PredicateParseError(f"{_written(node)!r} negated overflows {typed} (Spark: ARITHMETIC_OVERFLOW)")
    return Literal(literal.kind, negated, literal.type)


def _fits(value: int, integer_type: pa.DataType) -> bool:
    try:
        pa.scalar(value, integer_type)
    except (pa.ArrowException, OverflowError):
        return False
    return True


def _typed(node: exp.Cast) -> Literal:
    """``DATE '..'``, ``TIMESTAMP '..'``, and numbers with a type (``10L``, ``0.1F``, ``1.5BD``, CAST)."""
    target = node.to.this
    inner = _literal(node.this)
    if target == exp.DataType.Type.DATE and inner.kind == "string":
        return Literal("date", inner.value)
    if target in _TIMESTAMP_KINDS and inner.kind == "string":
        return Literal(_TIMESTAMP_KINDS[target], inner.value)
    arrow_type = _NUMERIC_TYPES.get(target)
    if arrow_type is not None and pa.types.is_floating(arrow_type) and inner.kind == "string":
        try:  # CAST('NaN' AS DOUBLE), CAST('-Infinity' AS FLOAT)
            return _float(spark_double(inner.value), arrow_type)
        except ValueError as error:
            raise PredicateParseError(f"malformed number {inner.value!r}") from error
    if target == exp.DataType.Type.DECIMAL and inner.kind == "string":
        number = Literal("decimal", exact_decimal(inner.value))  # '1E-10' of 1E-10BD is exact
    else:
        number = _number(inner.value.strip(SPARK_BLANKS)) if inner.kind == "string" else inner
    if number.kind not in ("int", "decimal", "float"):
        raise UnsupportedPredicateError(f"unsupported literal {_written(node)!r}")
    if number.kind == "float" and not math.isfinite(number.value) and target != exp.DataType.Type.DOUBLE:
        raise PredicateParseError(f"the literal {_written(node)!r} has no value of that type")
    if arrow_type is not None:
        if pa.types.is_floating(arrow_type):
            return _float(float(number.value), arrow_type)
        if inner.kind == "string" and number.kind != "int":  # Spark: CAST_INVALID_INPUT
            raise PredicateParseError(f"the string {inner.value!r} cannot be cast to {arrow_type}")
        whole = int(number.value)  # Spark's cast of a fraction to an integer type drops the fraction
        if not _fits(whole, arrow_type):
            raise PredicateParseError(f"the literal {_written(node)!r} is out of the range of {arrow_type}")
        return Literal("int", whole, arrow_type)
    if target == exp.DataType.Type.DECIMAL:
        return _decimal(number.value, node)
    raise UnsupportedPredicateError(f"unsupported literal {_written(node)!r}")


def _decimal(value: int | Decimal | float, node: exp.Cast) -> Literal:
    """``CAST(value AS DECIMAL(p, s))`` (DECIMAL alone: (10, 0)) as Spark makes it: rounded half
    up to ``s`` digits; more than ``p - s`` digits before the point is an error, as in Spark."""
    params = [param.this for param in node.to.expressions]
    try:
        precision, scale = (int(params[0].this), int(params[1].this if len(params) > 1 else 0)) if params else (10, 0)
    except (AttributeError, ValueError) as error:
        raise UnsupportedPredicateError(f"unsupported decimal type in {_written(node)!r}") from error
    if not 0 <= scale <= precision <= 38 or precision == 0:
        written = _written(node)
        raise PredicateParseError(f"DECIMAL({precision}, {scale}) in {written!r} is not a decimal type Spark has")
    exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)  # a double as Spark prints it
    rounded = exact.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP, context=Context(prec=80))
    if rounded.adjusted() >= precision - scale and rounded != 0:
        written = _written(node)
        raise PredicateParseError(f"the literal {written!r} is out of the range of DECIMAL({precision}, {scale})")
    return Literal("decimal", rounded, pa.decimal128(precision, scale))


def _float(value: float, arrow_type: pa.DataType) -> Literal:
    """A FLOAT or DOUBLE literal, rounded to its type (``0.1F`` is 0.100000001490116...)."""
    return Literal("float", pa.scalar(value, pa.float64()).cast(arrow_type, safe=False).as_py(), arrow_type)


# Microseconds per unit of an interval.
_INTERVAL_UNITS = {"DAY": MICROS_PER_DAY, "WEEK": 7 * MICROS_PER_DAY, "HOUR": 3_600_000_000, "MINUTE": 60_000_000}
_INTERVAL_UNITS |= {"SECOND": 1_000_000}
_INTERVAL_UNITS |= {f"{unit}S": micros for unit, micros in _INTERVAL_UNITS.items()}


def _date_arithmetic(node: exp.Add | exp.Sub) -> Literal:
    """A date or timestamp literal plus or minus an ``INTERVAL n unit``, folded to a literal."""
    base, interval = node.this, node.expression
    if isinstance(base, exp.Interval) and isinstance(node, exp.Add):
        base, interval = interval, base
    start = _literal(base)
    if start.kind not in ("date", "timestamp", "timestamp_ntz") or not isinstance(interval, exp.Interval):
        raise UnsupportedPredicateError(f"expected a literal, found {_written(node)!r}")
    unit = str(interval.unit.this if interval.unit else "").upper()
    amount = _literal(interval.this)
    if amount.kind == "string":
        amount = _number(amount.value.strip())
    if amount.kind != "int" or unit not in _INTERVAL_UNITS:
        raise UnsupportedPredicateError(f"unsupported interval {interval.sql()!r}: use INTERVAL n DAY|WEEK|HOUR|...")
    # In numbers (days, microseconds), so that dates beyond Python's years 1..9999 take intervals too.
    micros = amount.value * _INTERVAL_UNITS[unit] * (-1 if isinstance(node, exp.Sub) else 1)
    if not -(2**63) <= micros < 2**63:  # Spark's day-time interval is a count of microseconds in a BIGINT
        raise PredicateParseError(f"the interval {interval.sql()!r} is out of range")
    if start.kind == "date" and micros % MICROS_PER_DAY == 0:
        return Literal("date", date_text(epoch_days(parse_date(start.value)) + micros // MICROS_PER_DAY))
    moment = parse_timestamp(start.value, zoned=start.kind == "timestamp")
    kind = "timestamp_ntz" if start.kind == "timestamp_ntz" else "timestamp"
    return Literal(kind, timestamp_text(epoch_micros(moment) + micros))


def _number(text: str) -> Literal:
    if any(c in text for c in "eE"):
        try:
            value = float(text)
        except ValueError as error:
            raise PredicateParseError(f"malformed number {text!r}") from error
        if math.isinf(value):  # as Spark: a DOUBLE literal out of its range is an error, not infinity
            raise PredicateParseError(f"the number {text!r} does not fit in a DOUBLE")
        return Literal("float", value)
    if "." in text:
        return Literal("decimal", exact_decimal(text))
    try:
        return Literal("int", int(text))
    except ValueError as error:
        raise PredicateParseError(f"malformed number {text!r}") from error
