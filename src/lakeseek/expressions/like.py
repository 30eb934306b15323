"""SQL LIKE as Spark reads it (escapes ``\\%``, ``\\_``, ``\\\\``): matching, and the
prefix every match starts with, which an index can look up as a key range."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc


def like(strings: pc.Expression | pa.Array | pa.ChunkedArray, pattern: str):
    r"""Which ``strings`` match the SQL LIKE ``pattern`` (Spark's escapes ``\%``, ``\_``, ``\\``).

    Through a regular expression, not pyarrow's ``match_like``, whose prefix, suffix and
    substring shortcuts take escaped text literally.
    """
    return pc.match_substring_regex(strings, pattern=like_regex(pattern))


def like_tokens(pattern: str) -> Iterator[tuple[str, bool]]:
    """The pattern's characters, each with whether it is a wildcard (escapes resolved)."""
    escaped = False
    for char in pattern:
        if not escaped and char == "\\":
            escaped = True
            continue
        yield char, not escaped and char in "%_"
        escaped = False


def like_regex(pattern: str) -> str:
    """An RE2 expression matching what the LIKE ``pattern`` matches (escapes were validated by the parser)."""
    parts = [
        (".*" if char == "%" else ".") if wildcard else char if char.isalnum() else f"\\x{{{ord(char):x}}}"
        for char, wildcard in like_tokens(pattern)
    ]
    return "(?s)^" + "".join(parts) + "$"


def like_prefix(pattern: str) -> str:
    """Literal text every string matching a LIKE ``pattern`` starts with (escapes resolved)."""
    prefix = []
    for char, wildcard in like_tokens(pattern):
        if wildcard:
            break
        prefix.append(char)
    return "".join(prefix)


def prefix_successor(prefix: str) -> str | None:
    """The smallest string above every string starting with ``prefix`` (None: there is none)."""
    chars = list(prefix)
    while chars:
        code = ord(chars.pop()) + 1
        if 0xD800 <= code <= 0xDFFF:
            code = 0xE000  # surrogates are not valid text
        if code <= 0x10FFFF:
            return "".join(chars) + chr(code)
    return None
