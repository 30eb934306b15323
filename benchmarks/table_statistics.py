"""Skipping sketches of bounds from a Delta table's own statistics, against reading its files.

Run by hand (not in CI):  python benchmarks/table_statistics.py [--rows 20000000 --files 1000]

Writes the needle benchmark's Parquet lake (generated on first use, see needle.py) once as a
Delta table partitioned by date, with deltalake (which records every file's statistics in its
log), in about ``--files`` data files. Then builds the same skipping index of bounds alone
(``bloom=false, value_list=0``) over record_id, ts and event_id three ways: from the table's
statistics (no data file read, no Spark), and by reading every file, in process and on local
Spark. Reports build seconds and, for a needle on record_id and a one-hour range of ts, the
candidate files of each index (they should be alike: Delta's timestamps, cut to milliseconds,
are widened by one) and the warm ``files()`` latency. Prints the numbers and writes them to
benchmarks/results/table_statistics.{md,json}.
"""

from __future__ import annotations

import random
import shutil
import statistics
import time
from pathlib import Path
from unittest import mock

import deltalake
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import lakeseek
from lakeseek.engine.session import default_session
from lakeseek.sources.delta import DeltaSource
from measure import benchmark_lake, lake_parser, save_results, say

COLUMNS = ["record_id", "ts", "event_id"]
BOUNDS_ONLY = {"kind": "skipping", "bloom": False, "value_list": 0}
LOOKUPS = 50


def main() -> None:
    args = lake_parser(__doc__.splitlines()[0]).parse_args()
    source = benchmark_lake(Path(args.data), args.rows, args.files, args.days)
    table = _table(Path(args.data), source, args.files)
    files = len(deltalake.DeltaTable(str(table)).file_uris())
    spark = default_session()
    builds = {}
    for way, options in (
        ("table statistics", {"engine": "local"}),
        ("reading the files, in process", {"engine": "local"}),
        ("reading the files, local Spark", {"spark": spark}),
    ):
        shutil.rmtree(table / "_lakeseek", ignore_errors=True)
        reading = mock.patch.object(DeltaSource, "recorded_statistics", return_value={})
        started = time.perf_counter()
        if way == "table statistics":
            lakeseek.create_index(str(table), COLUMNS, **BOUNDS_ONLY, **options)
        else:
            with reading:
                lakeseek.create_index(str(table), COLUMNS, **BOUNDS_ONLY, **options)
        builds[way] = {"seconds": time.perf_counter() - started, "lookups": _lookups(table, source)}
        say(f"{way}: built in {builds[way]['seconds']:.1f} s; {builds[way]['lookups']}")
    results = {"table": {"rows": args.rows, "files": files}, "date": time.strftime("%Y-%m-%d"), "builds": builds}
    save_results(args.out, "table_statistics", results, _markdown(results))


def _table(data: Path, source: Path, files: int) -> Path:
    table = data / f"delta-statistics-{files}"
    marker = table / "_GENERATED"
    if marker.exists():
        return table
    shutil.rmtree(table, ignore_errors=True)
    lake = ds.dataset(str(source), format="parquet", partitioning="hive", exclude_invalid_files=True)
    size = sum(path.stat().st_size for path in source.glob("*/*.parquet"))
    say(f"writing {source} as a Delta table at {table}")
    deltalake.write_deltalake(
        str(table), lake.scanner().to_reader(), partition_by=["date"], target_file_size=size // files
    )
    marker.write_text("")
    return table


def _lookups(table: Path, source: Path) -> dict:
    index = lakeseek.open_index(str(table))
    rng = random.Random(3)
    sample = pq.read_table(sorted(source.glob("*/*.parquet"))[0], columns=["record_id", "ts"])
    ids = [sample.column("record_id")[rng.randrange(sample.num_rows)].as_py() for _ in range(5)]
    start = sample.column("ts")[0].as_py().replace(minute=0, second=0, microsecond=0)
    wheres = {
        "record_id needle": [f"record_id = {value}" for value in ids],
        "ts, one hour": [f"ts >= TIMESTAMP '{start:%Y-%m-%d %H}:00:00' AND ts < TIMESTAMP '{start:%Y-%m-%d %H}:59:59'"],
    }
    found = {}
    for name, group in wheres.items():
        candidates = [len(index.files(where)) for where in group]
        times = []
        for n in range(LOOKUPS):
            begun = time.perf_counter()
            index.files(group[n % len(group)])
            times.append(time.perf_counter() - begun)
        found[name] = {"files": statistics.median(candidates), "warm_ms": statistics.median(times) * 1000}
    return found


def _markdown(results: dict) -> str:
    table = results["table"]
    lines = [
        f"# Skipping bounds from Delta statistics ({table['rows']:,} rows, {table['files']:,} files, "
        f"{results['date']})",
        "",
        "| build | seconds | record_id needle: files | warm files() ms | ts one hour: files | warm files() ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for way, build in results["builds"].items():
        needle, hour = build["lookups"]["record_id needle"], build["lookups"]["ts, one hour"]
        lines.append(
            f"| {way} | {build['seconds']:.1f} | {needle['files']:.0f} | {needle['warm_ms']:.2f} "
            f"| {hour['files']:.0f} | {hour['warm_ms']:.2f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
