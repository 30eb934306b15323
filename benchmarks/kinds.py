"""Index kinds side by side: sorted, skipping, cuckoo and covering on one lake, and the planner.

Run by hand (not in CI):  python benchmarks/kinds.py [--rows 20000000 --files 1000]

On a hard-linked copy of the needle benchmark's lake (generated if missing), with one Spark
session: builds each kind over record_id (unique), event_id (~6 files per value), status (a
handful of values) and ts (clustered by the lake's date layout; not for cuckoo, which answers
= and IN only; covering copies rows keyed by record_id and event_id, carrying ts, status and
amount), and times each build. Then, for each query class, each index alone and the planner
over all of them (``open_indexes``): cold and warm latency of ``plan`` (nothing cached; one
handle, lake listed once), index reads and bytes per lookup, candidate files and false
positives (candidates holding no matching row, against DuckDB's full scan); and the warm
latency of a whole ``read`` of carried columns, with the data files it opened. Prints the
numbers and writes benchmarks/results/kinds.{md,json}.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import time
from pathlib import Path

import pyarrow.parquet as pq

import lakeseek
from lakeseek.caches import clear_cache
from lakeseek.engine.session import default_session
from lakeseek.io import counting
from measure import benchmark_lake, lake_parser, say

KINDS = {
    "sorted": ["record_id", "event_id", "status", "ts"],
    "skipping": ["record_id", "event_id", "status", "ts"],
    "cuckoo": ["record_id", "event_id", "status"],
    "covering": ["record_id", "event_id"],
}
OPTIONS = {"covering": {"include": ["ts", "status", "amount"]}}
# Reads (plan, then rows) of columns the covering index carries: it opens no data file.
COVERED_READ = ["record_id", "ts", "amount"]
READS_PER_CLASS = {"status": 2}  # each reads every file
LOOKUPS_PER_CLASS = 10


def main() -> None:
    args = lake_parser(__doc__.splitlines()[0]).parse_args()
    source = benchmark_lake(Path(args.data), args.rows, args.files, args.days)
    lake = Path(args.data) / f"kinds-{args.rows}-{args.files}"
    shutil.rmtree(lake, ignore_errors=True)
    shutil.copytree(source, lake, copy_function=os.link, ignore=shutil.ignore_patterns("_lakeseek", "_GENERATED"))
    spark = default_session()
    results: dict = {"lake": {"rows": args.rows, "files": args.files}, "date": time.strftime("%Y-%m-%d"), "builds": {}}
    for kind, columns in KINDS.items():
        started = time.perf_counter()
        index = lakeseek.create_index(str(lake), columns, kind=kind, name=kind, spark=spark, **OPTIONS.get(kind, {}))
        seconds = time.perf_counter() - started
        sizes = {c.name: c.bytes for c in index.status().columns}
        results["builds"][kind] = {"seconds": seconds, "bytes": sizes}
        say(f"{kind}: built in {seconds:.1f} s, {sum(sizes.values()) / 2**20:.1f} MiB")
    entries = {c.name: c.entries for c in lakeseek.open_index(str(lake), name="sorted").status().columns}
    results["entries"] = entries  # (value, file) pairs: what every kind's bytes per entry divide by
    queries = _queries(lake)
    truth = _truth(lake, [where for wheres in queries.values() for where in wheres])
    results["queries"] = {}
    for label, wheres in queries.items():
        measured = {}
        for kind in [*KINDS, "planner"]:
            measured[kind] = _measure(lake, kind, wheres, truth)
            m = measured[kind]
            say(
                f"{label:<10} {kind:<9} warm {m['warm_p50_ms']:7.2f} ms, cold {m['cold_p50_ms']:7.1f} ms, "
                f"{m['reads']:.1f} reads ({m['bytes'] / 1024:.0f} KiB), {m['candidates']:.1f} files, "
                f"{m['false_positives']:.1f} false"
            )
        results["queries"][label] = measured
    results["reads"] = {
        label: {kind: _reads(lake, kind, wheres[: READS_PER_CLASS.get(label)]) for kind in [*KINDS, "planner"]}
        for label, wheres in queries.items()
    }
    _report(results, Path(args.out))
    shutil.rmtree(lake, ignore_errors=True)


def _queries(lake: Path) -> dict[str, list[str]]:
    files = sorted(lake.glob("date=*/*.parquet"))
    rng = random.Random(7)
    picked = [
        pq.read_table(rng.choice(files), columns=["record_id", "event_id", "ts"]) for _ in range(LOOKUPS_PER_CLASS)
    ]
    rows = [table.slice(rng.randrange(table.num_rows), 1).to_pylist()[0] for table in picked]
    return {
        "record_id": [f"record_id = {row['record_id']}" for row in rows],
        "event_id": [f"event_id = '{row['event_id']}'" for row in rows],
        "status": ["status = 'retry'", "status = 'failed'"] * (LOOKUPS_PER_CLASS // 2),
        "ts range": [
            f"ts >= TIMESTAMP '{row['ts']:%Y-%m-%d %H}:00:00' AND ts < TIMESTAMP '{row['ts']:%Y-%m-%d %H}:20:00'"
            for row in rows
        ],
    }


def _truth(lake: Path, wheres: list[str]) -> dict[str, set[str]]:
    """The files holding a match of each predicate, by DuckDB's full scan."""
    import duckdb

    connection = duckdb.connect()
    data_files = ", ".join(f"'{path}'" for path in sorted(lake.glob("date=*/*.parquet")))  # not the index's
    scan = f"read_parquet([{data_files}], filename = true, hive_partitioning = false)"
    found = {}
    for where in wheres:
        sql = f"SELECT DISTINCT filename FROM {scan} WHERE {where}"
        found[where] = {os.path.relpath(row[0], lake) for row in connection.execute(sql).fetchall()}
    return found


def _open(lake: Path, kind: str, listing="per_query"):
    if kind == "planner":
        return lakeseek.open_indexes(str(lake), lake_listing=listing)
    return lakeseek.open_index(str(lake), name=kind, lake_listing=listing)


def _measure(lake: Path, kind: str, wheres: list[str], truth: dict[str, set[str]]) -> dict:
    cold = []
    for where in wheres[:5]:
        clear_cache()
        started = time.perf_counter()
        _open(lake, kind).plan(where)
        cold.append(time.perf_counter() - started)
    handle = _open(lake, kind, "once")
    for where in wheres:
        handle.plan(where)  # warm: what a version reads once is kept
    warm, reads, nbytes, candidates, false = [], [], [], [], []
    for where in wheres:
        with counting() as io:
            started = time.perf_counter()
            plan = handle.plan(where)
            warm.append(time.perf_counter() - started)
        reads.append(io.reads)
        nbytes.append(io.bytes_read)
        candidates.append(len(plan.files))
        false.append(len(set(plan.files) - truth[where]))
        assert truth[where] <= set(plan.files), (kind, where)  # never a missed file
    chosen = {getattr(handle.plan(where), "index", None) for where in wheres}
    return {
        "cold_p50_ms": statistics.median(cold) * 1000,
        "warm_p50_ms": statistics.median(warm) * 1000,
        "reads": statistics.mean(reads),
        "bytes": statistics.mean(nbytes),
        "candidates": statistics.mean(candidates),
        "false_positives": statistics.mean(false),
        "chosen": sorted(c for c in chosen if c),
    }


def _reads(lake: Path, kind: str, wheres: list[str]) -> dict:
    """Warm ``read`` of COVERED_READ columns (plan and rows): latency and data files opened."""
    handle = _open(lake, kind, "once")
    for where in wheres:
        handle.read(where, COVERED_READ)
    times, opened = [], []
    for where in wheres * 2:
        with counting() as io:
            started = time.perf_counter()
            handle.read(where, COVERED_READ)
            times.append(time.perf_counter() - started)
        opened.append(io.data_files)
    result = {"warm_p50_ms": statistics.median(times) * 1000, "data_files": statistics.mean(opened)}
    say(f"read through {kind}: {result}")
    return result


def _report(results: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "kinds.json").write_text(json.dumps(results, indent=2) + "\n")
    entries = sum(results["entries"].values())
    lines = [
        f"# lakeseek index kinds ({results['date']})",
        "",
        f"Lake: {results['lake']['rows']:,} rows in {results['lake']['files']:,} files; "
        "2 cores, local Spark, local disk.",
        "",
        "| kind | build s | build vs sorted | MiB | bytes per (value, file) entry of its columns |",
        "|---|---:|---:|---:|---:|",
    ]
    sorted_seconds = results["builds"]["sorted"]["seconds"]
    for kind, build in results["builds"].items():
        size = sum(build["bytes"].values())
        own_entries = sum(results["entries"][c] for c in build["bytes"])
        lines.append(
            f"| {kind} | {build['seconds']:.1f} | {sorted_seconds / build['seconds']:.2f}x faster | "
            f"{size / 2**20:.1f} | {size / max(own_entries, 1):.2f} |"
        )
    lines += [
        "",
        f"{entries:,} (value, file) entries over the four columns. Lookups (`plan`: the candidate files), "
        f"{LOOKUPS_PER_CLASS} per class, medians; reads and bytes are warm, per lookup; false = candidates "
        "holding no match (DuckDB's full scan); planner = `open_indexes` over all four.",
        "",
        "| query | kind | warm p50 ms | cold p50 ms | index reads | KiB read | candidate files | false | "
        "warm vs best kind |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, measured in results["queries"].items():
        best = min(m["warm_p50_ms"] for kind, m in measured.items() if kind != "planner")
        for kind, m in measured.items():
            lines.append(
                f"| {label} | {kind}{' (' + ', '.join(m['chosen']) + ')' if m['chosen'] else ''} | "
                f"{m['warm_p50_ms']:.2f} | {m['cold_p50_ms']:.1f} | {m['reads']:.1f} | {m['bytes'] / 1024:.0f} | "
                f"{m['candidates']:.1f} | {m['false_positives']:.1f} | {m['warm_p50_ms'] / best:.2f}x |"
            )
    lines += [
        "",
        f"End to end: warm `read(where, columns={COVERED_READ})` (plan, then rows), medians; the covering "
        "index answers from its rows; planner = `open_indexes`:",
        "",
        "| query | kind | warm p50 ms | data files opened | vs best kind |",
        "|---|---|---:|---:|---:|",
    ]
    for label, measured in results["reads"].items():
        best = min(m["warm_p50_ms"] for kind, m in measured.items() if kind != "planner")
        for kind, m in measured.items():
            lines.append(
                f"| {label} | {kind} | {m['warm_p50_ms']:.2f} | {m['data_files']:.1f} | "
                f"{m['warm_p50_ms'] / best:.2f}x |"
            )
    (out / "kinds.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
