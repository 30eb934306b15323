"""Run by tests/test_cluster.py in a process of its own (one SparkContext per process): build,
refresh and optimize indexes through a session connected to a Spark standalone cluster, and
say where the tasks ran.

    python -m tests.cluster_job SPEC.json RESULT.json

SPEC holds the master URL and the lakes (``uri``, ``storage_options``, ``columns``, and a
local data file ``add_from`` to add to the lake as ``add_as`` between the build and the refresh).
"""

from __future__ import annotations

import json
import os
import sys

import lakeseek
from lakeseek.engine.session import configured_builder
from lakeseek.io import storage_for


def main(spec_path: str, result_path: str) -> None:
    with open(spec_path) as spec_file:
        spec = json.load(spec_file)
    session = (
        configured_builder(spec["master"], "1g", shuffle_partitions=2)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.memory", "1g")
        .getOrCreate()
    )
    context = session.sparkContext
    result: dict = {"master": context.master, "driver_pid": os.getpid()}
    # Where tasks run: executors' Python workers, not this driver.
    result["task_pids"] = sorted(set(context.parallelize(range(4), 4).map(lambda _: os.getpid()).collect()))
    result["executors"] = context._jsc.sc().getExecutorMemoryStatus().size() - 1  # less the driver
    for lake in spec["lakes"]:
        options = lake.get("storage_options") or None
        lakeseek.create_index(lake["uri"], lake["columns"], spark=session, name="cluster", storage_options=options)
        storage, root = storage_for(lake["uri"], options)
        with open(lake["add_from"], "rb") as added:
            storage.write(f"{root}/{lake['add_as']}", added.read())
        lakeseek.refresh_index(lake["uri"], "incremental", spark=session, name="cluster", storage_options=options)
        lakeseek.optimize_index(lake["uri"], "full", spark=session, name="cluster", storage_options=options)
    session.stop()
    with open(result_path, "w") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main(*sys.argv[1:])
