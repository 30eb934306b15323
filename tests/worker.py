"""A separate process that changes an index, for crash and concurrency tests.

``python -m tests.worker OPERATION LAKE [SEED ITERATIONS]``: prints ``ready`` and then
runs the operation; ``concurrent`` loops over lake appends and random operations.
"""

from __future__ import annotations

import logging
import random
import sys

import lakeseek
from lakeseek.exceptions import CommitFailedError
from tests.lifecycle import LakeChanger


def run(operation: str, lake: str) -> None:
    if operation == "create":
        lakeseek.create_index(lake, ["id", "name", "code"], chunk_rows=64, entries_per_index_file=400)
    elif operation.startswith("refresh-"):
        lakeseek.refresh_index(lake, operation.removeprefix("refresh-"), engine="local")
    elif operation.startswith("optimize-"):
        lakeseek.optimize_index(lake, operation.removeprefix("optimize-"), engine="local")
    else:
        raise SystemExit(f"unknown operation {operation}")


def concurrent(lake: str, seed: int, iterations: int) -> None:
    rng = random.Random(seed)
    changer = LakeChanger(lake, rng, first_id=10_000_000 * (seed + 1))
    operations = ["refresh-incremental", "refresh-incremental", "refresh-quick", "optimize-quick", "optimize-full"]
    for _ in range(iterations):
        changer.append()
        operation = rng.choice(operations)
        try:
            run(operation, lake)
            print(f"{operation} ok", flush=True)
        except CommitFailedError as error:  # a clear loss of the race is allowed
            print(f"{operation} conflict: {error}", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # lost races go to stderr
    print("ready", flush=True)
    if sys.argv[1] == "concurrent":
        concurrent(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        run(sys.argv[1], sys.argv[2])
    print("done", flush=True)
