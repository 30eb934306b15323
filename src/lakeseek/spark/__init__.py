"""Everything that runs on Spark. The only package that imports pyspark at module level."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(spark: SparkSession) -> None:
    """Register the ``lakeseek`` data source format on ``spark`` (see :mod:`lakeseek.spark.datasource`).

    Imported on call: ``import lakeseek`` loads this package, and lookups must keep
    working where pyspark cannot be imported.
    """
    from lakeseek.spark.datasource import register as register_format

    register_format(spark)


__all__ = ["register"]
