"""Generate a sample lake shaped like the paper's: the demo's and the benchmark's data.

Rows carry a unique 8-byte ``record_id`` scattered over files, an ``event_id`` shared by
about six records in different files, a ``client_ip``, and a few payload columns, in
hive ``date=YYYY-MM-DD`` partitions.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

RECORDS_PER_EVENT = 6
_STATUSES = ["ok", "retry", "failed", "timeout", "redirect"]


@dataclass(frozen=True)
class SampleLake:
    path: str
    rows: int
    files: int
    record_ids: np.ndarray  # record_ids[i] is the id of row i (rows ordered file by file)
    event_ids: pa.Array

    def file_of_row(self, row: int) -> int:
        return row * self.files // self.rows


def generate_lake(path: str, rows: int = 3_000_000, files: int = 300, days: int = 30, seed: int = 7) -> SampleLake:
    """Write ``rows`` rows in ``files`` Parquet files under ``path`` (which must not hold a lake)."""
    rng = np.random.default_rng(seed)
    # Unique ids drawn from a range 4x the row count, shuffled so each file holds a scattered set.
    record_ids = rng.choice(rows * 4, size=rows, replace=False).astype(np.int64) + 10**12
    event_numbers = rng.integers(0, max(1, rows // RECORDS_PER_EVENT), size=rows)
    event_ids = pc.binary_join_element_wise("ev-", pc.cast(pa.array(event_numbers), pa.string()), "")
    octets = [pc.cast(pa.array(rng.integers(0, 256, size=rows)), pa.string()) for _ in range(4)]
    client_ips = pc.binary_join_element_wise("10", *octets[1:], ".")
    amounts = pa.array(np.round(rng.gamma(2.0, 40.0, size=rows), 2))
    statuses = pa.array(np.array(_STATUSES)[rng.integers(0, len(_STATUSES), size=rows)])
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    seconds = np.sort(rng.integers(0, days * 86400, size=rows))
    payload_pool = np.array([f"payload-{i:05d}-" + "x" * int(i % 40) for i in range(2000)])
    payloads = pa.array(payload_pool[rng.integers(0, len(payload_pool), size=rows)])
    os.makedirs(path, exist_ok=True)
    bounds = [f * rows // files for f in range(files + 1)]
    for f in range(files):
        lo, hi = bounds[f], bounds[f + 1]
        day = (start + dt.timedelta(seconds=int(seconds[lo]))).date()
        table = pa.table(
            {
                "record_id": pa.array(record_ids[lo:hi]),
                "event_id": event_ids[lo:hi],
                "client_ip": client_ips[lo:hi],
                "ts": pa.array(start.timestamp() + seconds[lo:hi], pa.float64())
                .cast(pa.int64())
                .cast(pa.timestamp("s", tz="UTC"))
                .cast(pa.timestamp("us", tz="UTC")),
                "status": statuses[lo:hi],
                "amount": amounts[lo:hi],
                "payload": payloads[lo:hi],
            }
        )
        directory = os.path.join(path, f"date={day.isoformat()}")
        os.makedirs(directory, exist_ok=True)
        pq.write_table(table, os.path.join(directory, f"part-{f:05d}.parquet"), compression="snappy")
    return SampleLake(path, rows, files, record_ids, event_ids)
