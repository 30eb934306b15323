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


# -- object stores on loopback (tests/servers.py) ----------------------------------------------------
@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    from tests.servers import start_moto

    server = start_moto(tmp_path_factory.mktemp("moto"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def azure_server(tmp_path_factory):
    from tests.servers import azurite_binary, start_azurite

    binary = azurite_binary()
    if binary is None:
        pytest.skip("Azurite is not installed (`make test` installs it with npm under .venv/azurite)")
    server = start_azurite(tmp_path_factory.mktemp("azurite"), binary)
    yield server
    server.stop()


class Bucket:
    """A fresh bucket (or container) of a server, with a pyarrow file system of the test's own
    (not lakeseek's) to write and read it."""

    def __init__(self, server, name: str) -> None:
        import pyarrow.fs as pafs

        self.server = server
        self.name = name
        self.options = dict(server.options)
        if server.name == "s3":
            self.fs = pafs.S3FileSystem(
                access_key="testing",
                secret_key="testing",
                region="us-east-1",
                endpoint_override=f"127.0.0.1:{server.port}",
                scheme="http",
                allow_bucket_creation=True,
            )
            self.uri = f"s3://{name}"
        else:
            from tests.servers import AZURITE_ACCOUNT, AZURITE_KEY

            authority = f"127.0.0.1:{server.port}"
            self.fs = pafs.AzureFileSystem(
                AZURITE_ACCOUNT,
                account_key=AZURITE_KEY,
                blob_storage_authority=authority,
                dfs_storage_authority=authority,
                blob_storage_scheme="http",
                dfs_storage_scheme="http",
            )
            self.uri = f"az://{name}"
        self.fs.create_dir(name)

    def upload(self, local_root: str, prefix: str) -> str:
        """Copy a local directory into the bucket under ``prefix``; its URI."""
        import os

        for directory, _, files in os.walk(local_root):
            for file_name in files:
                path = os.path.join(directory, file_name)
                with (
                    open(path, "rb") as source,
                    self.fs.open_output_stream(f"{self.name}/{prefix}/{os.path.relpath(path, local_root)}") as out,
                ):
                    out.write(source.read())
        return f"{self.uri}/{prefix}"


@pytest.fixture(params=["s3", "azure"])
def bucket(request):
    """A fresh bucket of each object store server."""
    import uuid

    server = request.getfixturevalue(f"{request.param}_server")
    return Bucket(server, f"b{uuid.uuid4().hex[:12]}")
