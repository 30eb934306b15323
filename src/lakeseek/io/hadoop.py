"""Paths as Hadoop (and so Spark) reads them."""

from __future__ import annotations

import re

_GLOB_METACHARACTERS = re.compile(r"([\\{}\[\]*?])")


def literal_path(uri: str) -> str:
    """``uri`` as a path that ``spark.read.parquet`` reads as itself.

    Spark expands Hadoop glob patterns in the paths it is given (``*``, ``?``, ``[...]``,
    ``{a,b}``), so the file ``part-[1].parquet`` would name ``part-1.parquet``. A backslash
    makes Hadoop's glob take the next character as itself (and the match found is the path
    unescaped, so partition discovery and ``basePath`` see the real path).
    """
    return _GLOB_METACHARACTERS.sub(r"\\\1", uri)
