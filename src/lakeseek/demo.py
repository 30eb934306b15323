"""``lakeseek demo``: a sample lake, an index built with local Spark, and needle queries timed
with the index, with a Spark full scan and with a pyarrow full scan."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

import pyarrow.dataset as ds
from rich.console import Console
from rich.table import Table

import lakeseek
from lakeseek.exceptions import IndexNotFoundError
from lakeseek.sample import generate_lake

QUERIES_PER_KIND = 3


def run_demo(directory: str, rows: int, files: int, out: Console, err: Console) -> None:
    lake_path = os.path.abspath(os.path.join(directory, "lake"))
    marker = os.path.join(lake_path, "_SAMPLE_ROWS")
    if os.path.exists(marker) and _read(marker) == f"{rows} {files}":
        err.print(f"reusing the sample lake at {lake_path}", markup=False)
    else:
        if os.path.exists(lake_path):
            raise lakeseek.LakeseekError(f"{lake_path} exists but is not this demo's sample lake; pick another --dir")
        with err.status(f"generating {rows:,} rows in {files} files at {lake_path}"):
            generate_lake(lake_path, rows=rows, files=files)
        with open(marker, "w") as f:
            f.write(f"{rows} {files}")
    sample = ds.dataset(lake_path, partitioning="hive").head(1_000_000, columns=["record_id", "event_id"])
    record_ids = [sample.column("record_id")[i].as_py() for i in (17, 4_321, 654_321 % sample.num_rows)]
    event_ids = [sample.column("event_id")[i].as_py() for i in (99, 8_765, 765_432 % sample.num_rows)]

    from lakeseek.engine.session import default_session

    with err.status("starting local Spark"):
        spark = default_session()
    try:
        index = lakeseek.open_index(lake_path)
        err.print(f"using the existing index ({', '.join(index.columns)})", markup=False)
    except IndexNotFoundError:
        with err.status("building the index with Spark (record_id, event_id)"):
            started = time.perf_counter()
            index = lakeseek.create_index(lake_path, ["record_id", "event_id"], spark=spark)
            err.print(f"built the index in {time.perf_counter() - started:.1f} s", markup=False)

    predicates = [f"record_id = {v}" for v in record_ids] + [f"event_id = '{v}'" for v in event_ids]
    results = Table("needle query", "rows", "lakeseek", "Spark scan", "pyarrow scan", "vs Spark")
    for column in results.columns:
        column.no_wrap = True
    lake_reader = spark.read.parquet(lake_path)
    lake_reader.where(predicates[0]).collect()  # let Spark warm up once, as it would in a live session
    for where in predicates:
        with err.status(f"timing {where}"):
            seek = _best_of(lambda w=where: index.read(w).num_rows)
            spark_scan = _best_of(lambda w=where: len(lake_reader.where(w).collect()), repeat=1)
            arrow_scan = _best_of(lambda w=where: index.scan(w).num_rows, repeat=1)
        found = index.read(where).num_rows
        results.add_row(where, str(found), _ms(seek), _ms(spark_scan), _ms(arrow_scan), f"{spark_scan / seek:,.0f}x")
    out.width = max(out.width, 110)  # a pipe reports 80 columns: keep the table readable there too
    out.print(results)
    size = index.root.index_bytes
    out.print(f"lake: {rows:,} rows in {files} files at {lake_path}; index: {size:,} bytes", markup=False)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def _best_of(action: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) if repeat > 2 else min(times)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"
