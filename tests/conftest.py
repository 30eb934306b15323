from __future__ import annotations

import pytest

from tests.lakes import INDEXABLE, all_rows, copy_lake, make_typed_lake


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for the whole suite: local[2], UI off, few shuffle partitions."""
    from lakeseek.engine.session import configured_builder

    session = configured_builder("local[2]", "2g", shuffle_partitions=2).config("spark.default.parallelism", "2")
    session = session.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def jvm_source(spark) -> bool:
    """Registers lakeseek's formats on the session; whether ``lakeseek`` is the JVM data source.

    It is wherever a JDK can build its jar (or the jar is cached), and there failing to load
    it is an error, not a skip. Without a JDK ``lakeseek`` is the Python data source (as
    ``lakeseek_python``) and this is False.
    """
    import lakeseek.spark
    from lakeseek.spark import jvm

    loaded = lakeseek.spark.register(spark)
    if not loaded and (jvm._javac() is not None or jvm.compiled_jar() is not None):
        pytest.fail("a JDK is at hand, but the JVM data source did not load (see the log)")
    return loaded


@pytest.fixture(scope="session")
def jvm_spark(spark, jvm_source):
    """The session with ``lakeseek`` as the JVM data source: skips where no JDK can build it."""
    if not jvm_source:
        pytest.skip("no JDK (javac) to build the JVM data source")
    return spark


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


@pytest.fixture(scope="session")
def rows(typed_lake):
    """Every row of the typed lake, read by the oracle (tests/lakes.py)."""
    return all_rows(typed_lake)


@pytest.fixture(scope="session")
def index(typed_lake):
    """The typed lake's index, shared by tests that only query it."""
    import lakeseek

    return lakeseek.open_index(typed_lake)


@pytest.fixture
def lake_copy(typed_lake, tmp_path):
    """A private copy of the typed lake and its index, free to change (the index trusts the copy)."""
    target = str(tmp_path / "lake")
    copy_lake(typed_lake, target)
    return target
