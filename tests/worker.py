"""A separate process that changes an index, for crash and concurrency tests.

``python -m tests.worker OPERATION LAKE [SEED ITERATIONS]``: prints ``ready`` and then
runs the operation; ``concurrent`` loops over lake appends and random operations, printing
the version each operation left (``<operation> ok <version> <operation> <timestamp>``). A
lake in an object store takes its storage options from $LAKESEEK_TEST_STORAGE_OPTIONS (JSON).
"""

from __future__ import annotations

import json
import logging
import os
import random
import sys

import lakeseek
from lakeseek.exceptions import CommitFailedError
from tests.lakes import object_store_filesystem
from tests.lifecycle import LakeChanger

OPTIONS = json.loads(os.environ.get("LAKESEEK_TEST_STORAGE_OPTIONS", "null"))


def run(operation: str, lake: str) -> lakeseek.Index:
    if operation == "create":
        return lakeseek.create_index(
            lake, ["id", "name", "code"], chunk_rows=64, entries_per_index_file=400, storage_options=OPTIONS
        )
    if operation.startswith("refresh-"):
        return lakeseek.refresh_index(lake, operation.removeprefix("refresh-"), engine="local", storage_options=OPTIONS)
    if operation.startswith("optimize-"):
        return lakeseek.optimize_index(
            lake, operation.removeprefix("optimize-"), engine="local", storage_options=OPTIONS
        )
    raise SystemExit(f"unknown operation {operation}")


def concurrent(lake: str, seed: int, iterations: int) -> None:
    rng = random.Random(seed)
    fs = object_store_filesystem(OPTIONS) if OPTIONS else None
    changer = LakeChanger(lake, rng, first_id=10_000_000 * (seed + 1), fs=fs)
    operations = ["refresh-incremental", "refresh-incremental", "refresh-quick", "optimize-quick", "optimize-full"]
    for _ in range(iterations):
        changer.append()
        operation = rng.choice(operations)
        try:
            index = run(operation, lake)
            print(f"{operation} ok {index.version} {index.root.operation} {index.root.timestamp_ms}", flush=True)
        except CommitFailedError as error:  # a clear loss of the race is allowed
            print(f"{operation} conflict: {error}", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # lost races go to stderr
    print("ready", flush=True)
    if sys.argv[1] == "concurrent":
        sys.stdin.readline()  # the test lets every writer go at once
        concurrent(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        run(sys.argv[1], sys.argv[2])
    print("done", flush=True)
