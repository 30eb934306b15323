"""The SparkSession lakeseek uses when the caller passes none: local, quiet, UI off."""

from __future__ import annotations

import os
import sys
from importlib import resources

from pyspark.sql import SparkSession

DEFAULT_DRIVER_MEMORY = "4g"


def default_session() -> SparkSession:
    """The active session, or a new ``local[*]`` one (driver memory: $LAKESEEK_SPARK_MEMORY or 4g)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # Python workers must run this interpreter, which has lakeseek and pyarrow installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log_config = resources.files("lakeseek.spark").joinpath("log4j2.properties")
    session = (
        SparkSession.builder.master(os.environ.get("LAKESEEK_SPARK_MASTER", "local[*]"))
        .appName("lakeseek")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", os.environ.get("LAKESEEK_SPARK_MEMORY", DEFAULT_DRIVER_MEMORY))
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_config}")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
