"""Lakes in object stores, against real servers on loopback (S3: moto's server; Azure Blob:
Azurite): the conditional create that commits, an index's whole life against the oracle, and
the requests a lookup makes, counted on the wire. GCS runs the same code (no emulator works
with obstore here)."""

from __future__ import annotations

import os
import random
import uuid
from concurrent.futures import ThreadPoolExecutor

import pyarrow.fs as pafs
import pytest

import lakeseek
from lakeseek.caches import clear_cache
from lakeseek.io import storage_for
from tests.conftest import Bucket
from tests.lakes import all_rows, ids, make_typed_lake, matching, region_dir, to_sql, typed_rows, write_file

TREES = [
    ("=", "id", 5),
    ("=", "id", 987_654),
    ("=", "name", "bob"),
    ("in", "code", [1, 2]),
    ("is null", "name"),
    ("and", (">=", "id", 100), ("<", "id", 140)),
    ("or", ("=", "id", 7), ("=", "code", 3)),
    ("like", "name", "S%"),
]


def test_a_conditional_create_has_exactly_one_winner(bucket):
    storage, path = storage_for(f"{bucket.uri}/race/entry.json", bucket.options)

    def attempt(number: int) -> int | None:
        try:
            storage.put_if_absent(path, str(number).encode())
            return number
        except FileExistsError:
            return None

    with ThreadPoolExecutor(16) as pool:
        winners = [number for number in pool.map(attempt, range(16)) if number is not None]
    assert len(winners) == 1
    assert storage.read(path) == str(winners[0]).encode()


def test_deleting_what_another_writer_deleted_is_no_error(bucket):
    """Azure answers 404 where S3 answers 204: two vacuums racing, or two writers clearing one
    dead lease, failed with obstore's FileNotFoundError on Azure."""
    storage, root = storage_for(f"{bucket.uri}/gone", bucket.options)
    for name in ("a", "b", "c"):
        storage.put_if_absent(f"{root}/d/{name}", b"1")
    storage.delete_file(f"{root}/d/a")
    storage.delete_file(f"{root}/d/a")
    storage.delete_file(f"{root}/never")
    storage.delete_dir(f"{root}/d")
    storage.delete_dir(f"{root}/d")
    assert not storage.is_file(f"{root}/d/b")


def _assert_exact(index: lakeseek.Index, local: str, lake: str) -> None:
    rows = all_rows(local)
    for tree in TREES:
        where = to_sql(tree)
        expected = matching(rows, tree)
        assert ids(index.read(where)) == ids(expected), where
        holding = {f"{lake}/{os.path.relpath(row['__file'], local)}" for row in expected}
        assert set(index.files(where)) >= holding, where
    pairs = index.locate([5, 7, 130, 987_654], column="id")
    located = sorted(zip(pairs.column("key").to_pylist(), pairs.column("file").to_pylist(), strict=True))
    expected_pairs = {
        (row["id"], f"{lake}/{os.path.relpath(row['__file'], local)}") for row in rows if row["id"] in (5, 7, 130)
    }
    assert located == sorted(expected_pairs)


def _put(bucket: Bucket, local: str, relative: str, rows: list[dict]) -> None:
    """A data file written to the local mirror (the oracle's) and to the bucket."""
    write_file(f"{local}/{relative}", rows)
    with (
        open(f"{local}/{relative}", "rb") as source,
        bucket.fs.open_output_stream(f"{bucket.name}/lake/{relative}") as out,
    ):
        out.write(source.read())


def test_the_whole_life_of_an_index_in_an_object_store(bucket, tmp_path):
    local = str(tmp_path / "lake")
    make_typed_lake(local, files_per_region=2, rows_per_file=120)
    lake = bucket.upload(local, "lake")
    options = bucket.options
    index = lakeseek.create_index(
        lake, ["id", "name", "code"], engine="local", storage_options=options, chunk_rows=32, entries_per_index_file=200
    )
    assert index.status().is_fresh and index.plan("id = 5").index_used
    _assert_exact(index, local, lake)

    rng = random.Random(3)
    _put(bucket, local, f"{region_dir('east')}/added.parquet", typed_rows(rng, 5_000, 80))
    _put(bucket, local, f"{region_dir('west')}/part-000.parquet", typed_rows(rng, 6_000, 50))  # rewritten
    os.remove(f"{local}/{region_dir(None)}/part-001.parquet")
    bucket.fs.delete_file(f"{bucket.name}/lake/{region_dir(None)}/part-001.parquet")
    stale = lakeseek.open_index(lake, storage_options=options)
    assert stale.lake_state().new and stale.lake_state().changed and stale.lake_state().removed
    _assert_exact(stale, local, lake)

    refreshed = lakeseek.refresh_index(lake, "incremental", engine="local", storage_options=options)
    assert refreshed.status().is_fresh
    _assert_exact(refreshed, local, lake)
    optimized = lakeseek.optimize_index(lake, "full", engine="local", storage_options=options)
    assert [entry.operation for entry in optimized.history()] == ["create", "refresh incremental", "optimize full"]
    result = lakeseek.vacuum_index(lake, retention_hours=0, storage_options=options)
    assert result.files_deleted > 0
    latest = lakeseek.open_index(lake, storage_options=options)
    assert latest.version == optimized.version and latest.status().problems == []
    _assert_exact(latest, local, lake)
    assert [entry.operation for entry in latest.history()] == ["optimize full"]  # vacuum kept the latest only


def test_a_location_with_empty_or_dot_segments_is_the_lake_spark_reads(bucket, tmp_path):
    """``s3://b//lake`` (also ``./``, ``../``) is the lake ``s3://b/lake``, as Hadoop's Path
    normalizes it; every path in the lake lost its first character, and ``files`` answered
    from the mangled names (found by the object store hunt)."""
    local = str(tmp_path / "lake")
    make_typed_lake(local, files_per_region=1, rows_per_file=40)
    lake = bucket.upload(local, "lake")
    lakeseek.create_index(lake, ["id"], engine="local", storage_options=bucket.options)
    container, _, _ = lake.partition("/lake")
    for spelling in ("//lake", "/./lake", "/x/../lake", "///lake//"):
        index = lakeseek.open_index(container + spelling, storage_options=bucket.options)
        assert index.status().is_fresh, spelling
        _assert_exact(index, local, lake)
    # A '?' or '#' is part of a key, as Hadoop's Path takes it: the lake s3://b/lake#1 is not
    # s3://b/lake (its query and fragment were dropped, and lake's files answered for it).
    other = str(tmp_path / "other")
    make_typed_lake(other, files_per_region=1, rows_per_file=40, seed=9)
    for name in ("lake#1", "lake?x=1"):
        odd = bucket.upload(other, name)
        index = lakeseek.create_index(odd, ["id"], engine="local", storage_options=bucket.options)
        _assert_exact(index, other, odd)
    # Messages name a place in an object store by its URI, not by its path in the store.
    with pytest.raises(lakeseek.LakeNotFoundError, match=f"lake not found: {container}/nowhere is not"):
        lakeseek.open_index(container + "/nowhere", storage_options=bucket.options)


@pytest.mark.parametrize("kept", [10, 0.5])
def test_an_index_file_cut_short_in_an_object_store_reads_every_file(bucket, tmp_path, kept):
    """A truncated index file is damage the index reports, never an error or a missing row,
    even when the footer it records lies past the object's end (a store answers 416)."""
    local = str(tmp_path / "lake")
    make_typed_lake(local, files_per_region=2, rows_per_file=120)
    lake = bucket.upload(local, "lake")
    index = lakeseek.create_index(lake, ["id", "name", "code"], engine="local", storage_options=bucket.options)
    listed = bucket.fs.get_file_info(pafs.FileSelector(f"{bucket.name}/lake/_lakeseek", recursive=True))
    index_files = [info.path for info in listed if "/data/" in info.path and info.path.endswith(".parquet")]
    assert index_files
    for path in index_files:
        with bucket.fs.open_input_file(path) as source:
            data = source.read()
        with bucket.fs.open_output_stream(path) as out:
            out.write(data[: kept if isinstance(kept, int) else len(data) // 2])
    clear_cache()
    damaged = lakeseek.open_index(lake, storage_options=bucket.options)
    _assert_exact(damaged, local, lake)
    assert not damaged.plan("id = 5").index_used and index.version == damaged.version


def test_a_lookup_on_s3_reads_the_index_in_three_gets_and_makes_no_head(s3_server, tmp_path):
    bucket = Bucket(s3_server, f"b{uuid.uuid4().hex[:12]}")
    local = str(tmp_path / "lake")
    make_typed_lake(local, files_per_region=2, rows_per_file=120)
    lake = bucket.upload(local, "lake")
    lakeseek.create_index(lake, ["id"], engine="local", storage_options=bucket.options, chunk_rows=32)
    clear_cache()
    before = len(s3_server.requests())
    index = lakeseek.open_index(lake, storage_options=bucket.options)
    files = index.files("id = 5")
    requests = s3_server.requests()[before:]
    index_gets = [r for r in requests if r[0] == "GET" and "/_lakeseek/" in r[1] and "list-type" not in r[1]]
    assert len(index_gets) == 3, requests  # the root, the index file's footer, one chunk
    assert not [r for r in requests if r[0] == "HEAD"], requests
    before = len(s3_server.requests())
    rows = index.read("id = 5")
    requests = s3_server.requests()[before:]
    assert ids(rows) == [5] and len(files) == 1
    data_gets = [r for r in requests if r[0] == "GET" and r[1].split("?")[0].endswith(".parquet")]
    heads = [r for r in requests if r[0] == "HEAD"]
    # Data files opened by size (no HEAD first); after the read, one HEAD per file read checks
    # that it is still the file listed (docs/freshness.md).
    assert data_gets and len(heads) == len({r[1].split("?")[0] for r in data_gets}), requests
    assert requests.index(heads[0]) > requests.index(data_gets[0]), requests


@pytest.mark.parametrize("scheme", ["s3", "az"])
def test_unknown_storage_options_are_one_line_errors(scheme):
    with pytest.raises(lakeseek.LakeseekError, match="unknown storage option 'AWS_SECRETS'"):
        lakeseek.open_index(f"{scheme}://bucket/lake", storage_options={"AWS_SECRETS": "x"})


def test_the_command_line_takes_storage_options(s3_server, tmp_path):
    from click.testing import CliRunner

    from lakeseek.cli.main import main

    bucket = Bucket(s3_server, f"b{uuid.uuid4().hex[:12]}")
    local = str(tmp_path / "lake")
    make_typed_lake(local, files_per_region=1, rows_per_file=50)
    lake = bucket.upload(local, "lake")
    settings = [arg for key, value in bucket.options.items() for arg in ("--storage-option", f"{key}={value}")]
    created = CliRunner().invoke(main, ["create", lake, "--columns", "id", "--engine", "local", *settings])
    assert created.exit_code == 0, created.output
    found = CliRunner().invoke(main, ["files", lake, "--where", "id = 5", *settings])
    holding = {f"{lake}/{os.path.relpath(row['__file'], local)}" for row in all_rows(local) if row["id"] == 5}
    assert found.exit_code == 0 and set(found.stdout.split()) == holding, found.output
    bad = CliRunner().invoke(main, ["status", lake, "--storage-option", "AWS_ENDPOINT_URL"])
    assert bad.exit_code == 2 and "is not KEY=VALUE" in bad.output


@pytest.mark.parametrize("key", ["a//b.parquet", "sub/../e.parquet", "ctl\x01.parquet"])
def test_an_object_whose_key_is_no_path_is_a_one_line_error(s3_server, tmp_path, key):
    """obstore will not list such a key: the query fails in one line naming the problem, not
    with the library's traceback."""
    import boto3
    from click.testing import CliRunner

    from lakeseek.cli.main import main

    bucket = Bucket(s3_server, f"b{uuid.uuid4().hex[:12]}")
    local = str(tmp_path / "lake")
    make_typed_lake(local, files_per_region=1, rows_per_file=20)
    lake = bucket.upload(local, "lake")
    lakeseek.create_index(lake, ["id"], engine="local", storage_options=bucket.options)
    client = boto3.client(
        "s3",
        endpoint_url=bucket.options["AWS_ENDPOINT_URL"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    client.put_object(Bucket=bucket.name, Key=f"lake/{key}", Body=b"PAR1")
    with pytest.raises(lakeseek.UnsupportedLakeError, match="holds an object whose key is not a valid path"):
        lakeseek.open_index(lake, storage_options=bucket.options).read("id = 3")
    settings = [arg for name, value in bucket.options.items() for arg in ("--storage-option", f"{name}={value}")]
    failed = CliRunner().invoke(main, ["query", lake, "--where", "id = 3", *settings])
    assert failed.exit_code == 1 and failed.stderr.count("\n") == 1 and "rename or remove it" in failed.stderr


def test_a_missing_bucket_is_named_in_one_line(bucket):
    """The store's XML error body follows its status in the client's message: the one line cut
    it at "404 Not Found: <?xml ...?>", so the code saying what was wrong never showed (found by
    a hunt on moto and Azurite)."""
    from lakeseek.cli.output import one_line

    missing = bucket.uri.replace(bucket.name, f"{bucket.name}-missing") + "/lake"
    with pytest.raises(Exception) as raised:
        lakeseek.open_index(missing, storage_options=bucket.options).files("id = 1")
    line = one_line(raised.value)
    assert "<?xml" not in line and ("NoSuchBucket" in line or "ContainerNotFound" in line), line


def test_data_files_read_through_a_throttling_store_are_read_again(s3_server, tmp_path):
    """A store that throttles (503 SlowDown) the first 4 reads of each data file: pyarrow's
    client tried 3 times, and a query failed with "cannot read data file ... (not Parquet, or
    damaged): AWS Error SLOW_DOWN" (found by a hunt with a throttling proxy before moto)."""
    from tests.servers import ThrottlingProxy

    bucket = Bucket(s3_server, f"b{uuid.uuid4().hex[:12]}")
    make_typed_lake(str(tmp_path / "lake"))
    uri = bucket.upload(str(tmp_path / "lake"), "lake")
    lakeseek.create_index(uri, ["id"], engine="local", storage_options=bucket.options)
    proxy = ThrottlingProxy(s3_server.port, refusals=4)
    try:
        options = {**bucket.options, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{proxy.port}"}
        clear_cache()
        index = lakeseek.open_index(uri, storage_options=options)
        rows = all_rows(str(tmp_path / "lake"))
        for tree in TREES[:2]:
            assert ids(index.read(to_sql(tree))) == ids(matching(rows, tree)), tree
        assert proxy.counts["throttled"] > 0
    finally:
        proxy.stop()
