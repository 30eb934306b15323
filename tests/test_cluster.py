"""The build, refresh and optimize jobs on a real Spark standalone cluster: a master and a
worker on loopback, started with the installed PySpark's ``spark-class``. The jobs run in a
driver process of their own (tests/cluster_job.py), on a lake in a directory and on one in
S3 (moto), whose executors reach the storage themselves; the indexes they write must answer
exactly as the ones built here in local mode do."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import uuid

import pytest

import lakeseek
from tests.lakes import all_rows, ids, make_typed_lake, typed_rows, write_file
from tests.servers import ROOT, start_spark_cluster

pytestmark = pytest.mark.spark

WHERES = ["id = 5", "id IN (3, 470, 9001)", "name = 'alice'", "code >= 100", "region = 'west' AND id < 40"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if shutil.which("java") is None:
        pytest.skip("no java: a Spark standalone cluster needs a JDK")
    started = start_spark_cluster(tmp_path_factory.mktemp("cluster"))
    yield started
    started.stop()


def test_jobs_on_a_standalone_cluster_build_the_same_index(cluster, spark, s3_server, tmp_path):
    from tests.conftest import Bucket

    local = str(tmp_path / "lake")
    make_typed_lake(local)
    added = str(tmp_path / "added.parquet")
    write_file(added, typed_rows(random.Random(5), 9000, 40))
    bucket = Bucket(s3_server, f"b{uuid.uuid4().hex[:12]}")
    remote = bucket.upload(local, "lake")
    columns = ["id", "name", "code"]
    spec = {
        "master": cluster.url,
        "lakes": [
            {"uri": local, "columns": columns, "add_from": added, "add_as": "region=west/part-added.parquet"},
            {
                "uri": remote,
                "storage_options": bucket.options,
                "columns": columns,
                "add_from": added,
                "add_as": "region=west/part-added.parquet",
            },
        ],
    }
    with open(tmp_path / "spec.json", "w") as out:
        json.dump(spec, out)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    job = subprocess.run(
        [sys.executable, "-m", "tests.cluster_job", str(tmp_path / "spec.json"), str(tmp_path / "result.json")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert job.returncode == 0, job.stderr[-4000:]
    with open(tmp_path / "result.json") as result_file:
        result = json.load(result_file)
    assert result["master"] == cluster.url and result["executors"] == 1
    assert result["driver_pid"] not in result["task_pids"]  # the tasks ran in the worker's executor

    # The same lake, built here in local mode, answers as the cluster's index does.
    rows = all_rows(local)
    lakeseek.create_index(local, columns, spark=spark, name="here")
    for where in WHERES:
        on_cluster = lakeseek.open_index(local, name="cluster")
        here = lakeseek.open_index(local, name="here")
        assert on_cluster.plan(where).index_used and on_cluster.lake_state().is_fresh, where
        assert on_cluster.files(where) == here.files(where), where
        assert ids(on_cluster.read(where)) == ids(here.read(where)), where
        in_s3 = lakeseek.open_index(remote, name="cluster", storage_options=bucket.options)
        assert in_s3.lake_state().is_fresh and ids(in_s3.read(where)) == ids(here.read(where)), where
    assert ids(lakeseek.open_index(local, name="cluster").read("id >= 9000")) == list(range(9000, 9040))
    assert ids(lakeseek.open_index(local, name="cluster").read("TRUE")) == ids(rows)
