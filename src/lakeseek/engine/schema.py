"""Spark SQL types -> Arrow types, for the lake schema lakeseek records at build time."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T

_SIMPLE = {
    T.ByteType: pa.int8(),
    T.ShortType: pa.int16(),
    T.IntegerType: pa.int32(),
    T.LongType: pa.int64(),
    T.FloatType: pa.float32(),
    T.DoubleType: pa.float64(),
    T.StringType: pa.string(),
    T.VarcharType: pa.string(),
    T.CharType: pa.string(),
    T.BinaryType: pa.binary(),
    T.BooleanType: pa.bool_(),
    T.DateType: pa.date32(),
    T.TimestampType: pa.timestamp("us", tz="UTC"),
    T.TimestampNTZType: pa.timestamp("us"),
    T.NullType: pa.null(),  # a partition column whose every directory is __HIVE_DEFAULT_PARTITION__
}


def arrow_type(spark_type: T.DataType) -> pa.DataType | None:
    """The Arrow type of a Spark column's values, or None for nested and other types."""
    if isinstance(spark_type, T.DecimalType):
        return pa.decimal128(spark_type.precision, spark_type.scale)
    for spark_class, arrow in _SIMPLE.items():
        if isinstance(spark_type, spark_class):
            return arrow
    return None


def lake_schema(spark_schema: T.StructType, physical: pa.Schema, partition_columns: list[str]) -> pa.Schema:
    """The schema lakeseek reads the lake with: the data files' own Arrow types, and Spark's
    inferred types for partition columns (``date=2024-01-01`` is a date, as in Spark)."""
    fields = []
    for spark_field in spark_schema.fields:
        name = spark_field.name
        if name in physical.names and name not in partition_columns:
            fields.append(physical.field(name).remove_metadata())
            continue
        mapped = arrow_type(spark_field.dataType)
        if mapped is not None:
            fields.append(pa.field(name, mapped))
    return pa.schema(fields)
