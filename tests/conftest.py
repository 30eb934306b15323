from __future__ import annotations

import pytest

from tests.lakes import INDEXABLE, all_rows, copy_lake, make_typed_lake


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for the whole suite: local[2], UI off, few shuffle partitions."""
    from lakeseek.spark.session import configured_builder

    session = configured_builder("local[2]", "2g", shuffle_partitions=2).config("spark.default.parallelism", "2")
    session = session.getOrCreate()
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
