"""Lifecycle benchmark: incremental refresh vs a full build, and lookups as segments pile up.

Run by hand (not in CI):  python benchmarks/lifecycle.py [--rows 20000000 --files 1000]

On a hard-linked copy of the needle benchmark's lake (generated if missing), with one
Spark session: times a full build; appends 1 % more files and times an incremental
refresh; then appends one file per refresh up to 1, 10 and 50 un-optimized incremental
refreshes, measuring lookup reads and latency (cold: a new Index per lookup; warm: the
same Index) after each, and again after ``optimize --mode quick`` and ``--mode full``.
Prints the numbers and writes them to benchmarks/results/lifecycle.{md,json}.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import lakeseek
from lakeseek.caches import clear_cache
from lakeseek.engine.session import default_session
from measure import COLUMNS, benchmark_lake, lake_parser, say, timed_lookups


def main() -> None:
    args = lake_parser(__doc__.splitlines()[0]).parse_args()
    source = benchmark_lake(Path(args.data), args.rows, args.files, args.days)
    lake = Path(args.data) / f"lifecycle-{args.rows}-{args.files}"
    shutil.rmtree(lake, ignore_errors=True)
    shutil.copytree(source, lake, copy_function=os.link, ignore=shutil.ignore_patterns("_lakeseek", "_GENERATED"))
    templates = sorted(lake.rglob("*.parquet"))
    appender = _Appender(templates)
    spark = default_session()
    results: dict = {"lake": {"rows": args.rows, "files": args.files}, "date": time.strftime("%Y-%m-%d")}

    started = time.perf_counter()
    lakeseek.create_index(str(lake), COLUMNS, spark=spark)
    full = time.perf_counter() - started
    say(f"full build: {full:.1f} s")
    original = pq.read_table(templates[0], columns=["record_id"]).column(0).to_pylist()[:100]

    added = [appender.add() for _ in range(max(1, args.files // 100))]
    started = time.perf_counter()
    lakeseek.refresh_index(str(lake), "incremental", spark=spark)
    incremental = time.perf_counter() - started
    say(f"incremental refresh of {len(added)} new files (1 %): {incremental:.2f} s = {100 * incremental / full:.1f} %")
    results["refresh"] = {
        "full_build_seconds": full,
        "incremental_1pct_seconds": incremental,
        "incremental_percent_of_full": 100 * incremental / full,
        "new_files": len(added),
    }

    new_ids = [v for path in added for v in pq.read_table(path, columns=["record_id"]).column(0).to_pylist()[:20]]
    rng = random.Random(1)
    values = rng.sample(original, 50) + rng.sample(new_ids, 50)
    stages = {"1 refresh": _lookups(lake, values)}
    refresh_times = []
    for count in range(2, 51):
        new_ids.extend(pq.read_table(appender.add(), columns=["record_id"]).column(0).to_pylist()[:5])
        started = time.perf_counter()
        lakeseek.refresh_index(str(lake), "incremental", engine="local")
        refresh_times.append(time.perf_counter() - started)
        if count in (10, 50):
            values = rng.sample(original, 50) + rng.sample(new_ids, 50)
            stages[f"{count} refreshes"] = _lookups(lake, values)
    results["refresh"]["one_file_local_seconds_median"] = statistics.median(refresh_times)
    started = time.perf_counter()
    lakeseek.optimize_index(str(lake), "quick")
    results["optimize_quick_seconds"] = time.perf_counter() - started
    stages["optimize quick"] = _lookups(lake, values)
    started = time.perf_counter()
    lakeseek.optimize_index(str(lake), "full", spark=spark)
    results["optimize_full_seconds"] = time.perf_counter() - started
    stages["optimize full"] = _lookups(lake, values)
    results["lookups"] = stages
    _report(results, Path(args.out))
    shutil.rmtree(lake, ignore_errors=True)


class _Appender:
    """New data files shaped like the lake's, with new record ids spread over the existing key
    range, so every delta segment overlaps every lookup: only bloom filters keep reads down.
    (Ever-increasing ids would be cheaper: key ranges alone would rule the deltas out.)"""

    def __init__(self, templates: list[Path]) -> None:
        self.templates = templates
        self.count = 0

    def add(self) -> Path:
        self.count += 1
        template = self.templates[self.count % len(self.templates)]
        table = pq.read_table(template)
        shifted = pc.add(table.column("record_id"), pa.scalar(self.count, pa.int64()))
        events = pc.binary_join_element_wise(f"new{self.count}-", table.column("event_id"), "")
        table = table.set_column(0, "record_id", shifted).set_column(1, "event_id", events)
        path = template.parent / f"appended-{self.count:05d}.parquet"
        pq.write_table(table, path, compression="snappy")
        return path


def _cold(lake: Path) -> lakeseek.Index:
    """A new handle, with nothing any handle of this process read kept."""
    clear_cache()
    return lakeseek.open_index(str(lake))


def _lookups(lake: Path, values: list[int]) -> dict:
    """Reads and latency of record_id lookups: cold (new Index each) and warm (one Index)."""
    stats = lakeseek.open_index(str(lake)).storage.stats
    cold, cold_reads = timed_lookups(values[:30], lambda value: _cold(lake).files(f"record_id = {value}"), stats)
    index = lakeseek.open_index(str(lake), lake_listing="once")
    for value in values:  # every footer loaded once: warm means root and footers cached
        index.files(f"record_id = {value}")
    warm, warm_reads = timed_lookups(values * 2, lambda value: index.files(f"record_id = {value}"), stats)
    segments = index.root.content.segments
    measured = {
        "segments": segments,
        "cold_reads_mean": statistics.mean(cold_reads),
        "cold_p50_ms": statistics.median(cold) * 1000,
        "warm_reads_mean": statistics.mean(warm_reads),
        "warm_p50_ms": statistics.median(warm) * 1000,
    }
    say(
        f"  {segments} segments: cold {measured['cold_reads_mean']:.2f} reads, {measured['cold_p50_ms']:.1f} ms; "
        f"warm {measured['warm_reads_mean']:.2f} reads, {measured['warm_p50_ms']:.2f} ms"
    )
    return measured


def _report(results: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "lifecycle.json").write_text(json.dumps(results, indent=2) + "\n")
    refresh = results["refresh"]
    best = results["lookups"]["optimize full"]
    lines = [
        f"# lakeseek lifecycle benchmark ({results['date']})",
        "",
        f"Lake: {results['lake']['rows']:,} rows in {results['lake']['files']:,} files; 2 cores, local Spark.",
        "",
        "| refresh | seconds | vs full build |",
        "|---|---:|---:|",
        f"| full build | {refresh['full_build_seconds']:.1f} | 100 % |",
        f"| incremental, {refresh['new_files']} new files (1 %), Spark | {refresh['incremental_1pct_seconds']:.2f} "
        f"| {refresh['incremental_percent_of_full']:.1f} % |",
        f"| incremental, 1 new file, in process (median) | {refresh['one_file_local_seconds_median']:.2f} | |",
        f"| optimize quick | {results['optimize_quick_seconds']:.2f} | |",
        f"| optimize full (Algorithm 2) | {results['optimize_full_seconds']:.1f} | |",
        "",
        "record_id lookups (`files()`); ratios against the optimized index:",
        "",
        "| after | segments | cold reads | cold p50 ms | warm reads | warm reads vs optimized | warm p50 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for stage, m in results["lookups"].items():
        ratio = m["warm_reads_mean"] / best["warm_reads_mean"] if best["warm_reads_mean"] else float("nan")
        lines.append(
            f"| {stage} | {m['segments']} | {m['cold_reads_mean']:.2f} | {m['cold_p50_ms']:.1f} | "
            f"{m['warm_reads_mean']:.2f} | {ratio:.2f}x | {m['warm_p50_ms']:.2f} |"
        )
    (out / "lifecycle.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
