"""lakeseek: needle-in-a-haystack lookups on Parquet data lakes, through an index stored in the lake.

``create_index`` builds an index with Spark; ``open_index`` opens one for lookups, which
need no Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakeseek.exceptions import (
    CommitFailedError,
    IndexAlreadyExistsError,
    IndexCorruptError,
    IndexFormatError,
    IndexNotFoundError,
    LakeNotFoundError,
    LakeseekError,
    PredicateError,
    PredicateParseError,
    PredicateTypeError,
    SparkJobError,
    UnknownColumnError,
    UnsupportedColumnError,
    UnsupportedPredicateError,
)
from lakeseek.index import Index, open_index

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__version__ = "0.1.0"


def create_index(
    source: str,
    columns: list[str] | str,
    index: str | None = None,
    spark: SparkSession | None = None,
    **options: Any,
) -> Index:
    """Build an index of ``columns`` over the Parquet lake at ``source`` with Spark.

    See :func:`lakeseek.spark.build.create_index` for the options.
    """
    from lakeseek.spark.build import create_index as build

    return build(source, columns, index, spark, **options)


__all__ = [
    "CommitFailedError",
    "Index",
    "IndexAlreadyExistsError",
    "IndexCorruptError",
    "IndexFormatError",
    "IndexNotFoundError",
    "LakeNotFoundError",
    "LakeseekError",
    "PredicateError",
    "PredicateParseError",
    "PredicateTypeError",
    "SparkJobError",
    "UnknownColumnError",
    "UnsupportedColumnError",
    "UnsupportedPredicateError",
    "__version__",
    "create_index",
    "open_index",
]
