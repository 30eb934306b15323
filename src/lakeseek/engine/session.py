"""The SparkSession lakeseek uses when the caller passes none: local, quiet, UI off."""

from __future__ import annotations

import os
import sys
from importlib import resources

from pyspark.sql import SparkSession

DEFAULT_DRIVER_MEMORY = "4g"


def configured_builder(master: str, driver_memory: str, shuffle_partitions: int) -> SparkSession.Builder:
    """A session builder with lakeseek's settings: UI off, quiet logs, UTC, this Python for workers."""
    # Python workers must run this interpreter, which has lakeseek and pyarrow installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log_config = resources.files("lakeseek.engine").joinpath("log4j2.properties")
    return (
        SparkSession.builder.master(master)
        .appName("lakeseek")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_config}")
    )


def default_session() -> SparkSession:
    """The active session, or a new one: ``local[*]`` (or $LAKESEEK_SPARK_MASTER) with
    $LAKESEEK_SPARK_MEMORY (default 4g) of driver memory."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    master = os.environ.get("LAKESEEK_SPARK_MASTER", "local[*]")
    memory = os.environ.get("LAKESEEK_SPARK_MEMORY", DEFAULT_DRIVER_MEMORY)
    session = configured_builder(master, memory, shuffle_partitions=8).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
