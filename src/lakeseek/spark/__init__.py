"""lakeseek's Spark front ends: the ``lakeseek`` data source formats (:func:`register`), and an
index's answers as DataFrames (:func:`to_spark`, :func:`covering_frame`, :func:`locate_spark`). Where index builds
run on Spark is :mod:`lakeseek.engine`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakeseek.spark.dataframes import covering_frame, locate_spark, spark_schema, to_spark

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PYTHON_FORMAT = "lakeseek_python"


def register(spark: SparkSession) -> bool:
    """Register the ``lakeseek`` data source format on ``spark``; True when it runs on the JVM.

    ``lakeseek`` is the JVM data source (:mod:`lakeseek.spark.jvm`: Spark's Parquet scan,
    pruned by the index) where the session has py4j and a JDK is at hand, else the Python
    data source (:mod:`lakeseek.spark.datasource`), which is also always ``lakeseek_python``.

    Imported on call: ``import lakeseek`` loads this package, and lookups must keep
    working where pyspark cannot be imported.
    """
    from lakeseek.spark.datasource import FORMAT
    from lakeseek.spark.datasource import register as register_python
    from lakeseek.spark.jvm import install

    register_python(spark, PYTHON_FORMAT)
    register_python(spark, FORMAT)  # Spark resolves a JVM class of the name first, when one is loaded
    return install(spark)


__all__ = ["PYTHON_FORMAT", "covering_frame", "locate_spark", "register", "spark_schema", "to_spark"]
