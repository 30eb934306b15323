from __future__ import annotations

import os
import shutil
import sys

import pytest

from tests.lakes import INDEXABLE, make_typed_lake

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for the whole suite: local[2], UI off, few shuffle partitions."""
    from pyspark.sql import SparkSession

    from lakeseek.spark import session as defaults

    log_config = os.path.join(os.path.dirname(defaults.__file__), "log4j2.properties")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("lakeseek-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_config}")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def typed_lake(tmp_path_factory, spark):
    """A lake of every indexable type, hive-partitioned, with its index on every indexable column.

    Shared by tests that only read it; tests that change a lake copy it first.
    """
    import lakeseek

    root = str(tmp_path_factory.mktemp("typed") / "lake")
    make_typed_lake(root)
    lakeseek.create_index(root, INDEXABLE, spark=spark, chunk_rows=64, entries_per_index_file=400)
    return root


@pytest.fixture
def lake_copy(typed_lake, tmp_path):
    """A private copy of the typed lake and its index, free to change."""
    target = str(tmp_path / "lake")
    shutil.copytree(typed_lake, target)
    return target
