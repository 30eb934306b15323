"""Needle-in-a-haystack benchmark: lakeseek against full scans on the same lake.

Run by hand (not in CI):  python benchmarks/needle.py [--rows 20000000 --files 1000]

Generates (or reuses) a lake shaped like the paper's, builds the index with local Spark,
and measures in one run: build time, index size, files() latency cold and warm with
reads per lookup, and the needle query ``SELECT * WHERE col = X`` through lakeseek read,
lakeseek to_spark, a Spark full scan, Spark over a copy written with Parquet bloom
filters, a DuckDB full scan, and the floor (pyarrow reading exactly the right files).
Prints the numbers and ratios and writes them to benchmarks/results/ (markdown, JSON, PNG).
"""

from __future__ import annotations

import json
import os
import platform
import random
import shutil
import time
from pathlib import Path

import pyarrow.parquet as pq

import lakeseek
from lakeseek.caches import clear_cache
from lakeseek.engine.session import default_session
from lakeseek.spark import to_spark
from measure import COLUMNS, benchmark_lake, lake_parser, say, timed, timed_lookups


def main() -> None:
    parser = lake_parser(__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=5, help="needle values per column")
    parser.add_argument("--lookups", type=int, default=500, help="files() lookups for the latency percentiles")
    args = parser.parse_args()

    lake = benchmark_lake(Path(args.data), args.rows, args.files, args.days)
    spark = default_session()
    results: dict = {
        "lake": {"rows": args.rows, "files": args.files, "bytes": _bytes(lake)},
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}",
        "date": time.strftime("%Y-%m-%d"),
    }

    shutil.rmtree(lake / "_lakeseek", ignore_errors=True)
    started = time.perf_counter()
    index = lakeseek.create_index(str(lake), COLUMNS, spark=spark)
    build = time.perf_counter() - started
    status = index.status()
    results["build"] = {
        "seconds": build,
        "rows_per_second": args.rows / build,
        "columns": {
            c.name: {
                "entries": c.entries,
                "bytes": c.bytes,
                "bytes_per_entry": c.bytes / c.entries,
                "files": c.index_files,
            }
            for c in status.columns
        },
        "index_percent_of_lake": 100 * status.index_bytes / results["lake"]["bytes"],
    }
    say(f"build: {build:.1f} s ({args.rows / build:,.0f} rows/s)")

    rng = random.Random(42)
    sample = pq.read_table(_some_file(lake), columns=COLUMNS)
    needles = {
        column: [
            pq.read_table(_some_file(lake, rng), columns=[column]).column(0)[rng.randrange(1000)].as_py()
            for _ in range(args.queries)
        ]
        for column in COLUMNS
    }
    lookups = [sample.column("record_id")[i % sample.num_rows].as_py() for i in range(args.lookups)]
    results["files"] = _files_latency(lake, lookups)
    results["needle"] = {column: _needles(spark, lake, index, column, needles[column]) for column in COLUMNS}
    _report(results, Path(args.out))


def _bytes(lake: Path) -> int:
    return sum(p.stat().st_size for p in lake.rglob("*.parquet") if "_lakeseek" not in p.parts)


def _some_file(lake: Path, rng: random.Random | None = None) -> Path:
    files = sorted(p for p in lake.rglob("*.parquet") if "_lakeseek" not in p.parts)
    return files[rng.randrange(len(files))] if rng else files[0]


def _cold(lake: Path) -> lakeseek.Index:
    """A new handle, with nothing any handle of this process read kept."""
    clear_cache()
    return lakeseek.open_index(str(lake))


def _files_latency(lake: Path, values: list[int]) -> dict:
    """files() latency: cold (a new Index per lookup: root, footer and chunk are read) and warm."""
    stats = lakeseek.open_index(str(lake)).storage.stats
    cold, cold_reads = timed_lookups(values[:50], lambda value: _cold(lake).files(f"record_id = {value}"), stats)
    index = lakeseek.open_index(str(lake))
    for value in values[:20]:  # load every footer once: warm means root and footers cached
        index.files(f"record_id = {value}")
    warm, warm_reads = _warm(index, values, stats)
    snapshot = lakeseek.open_index(str(lake), lake_listing="once")
    for value in values[:20]:
        snapshot.files(f"record_id = {value}")
    warm_once, _ = _warm(snapshot, values, stats)
    lake_listing = []
    for _ in range(50):
        started = time.perf_counter()
        index.lake_state()
        lake_listing.append(time.perf_counter() - started)
    return {
        "cold_p50_ms": _pct(cold, 50) * 1000,
        "cold_p99_ms": _pct(cold, 99) * 1000,
        "cold_reads_max": max(cold_reads),
        "warm_p50_ms": _pct(warm, 50) * 1000,
        "warm_p99_ms": _pct(warm, 99) * 1000,
        "warm_reads_max": max(warm_reads),
        "warm_listing_once_p50_ms": _pct(warm_once, 50) * 1000,
        "warm_listing_once_p99_ms": _pct(warm_once, 99) * 1000,
        "lake_listing_p50_ms": _pct(lake_listing, 50) * 1000,
    }


def _warm(index: lakeseek.Index, values: list[int], stats) -> tuple[list[float], list[int]]:
    return timed_lookups(values, lambda value: index.files(f"record_id = {value}"), stats)


def _needles(spark, lake: Path, index: lakeseek.Index, column: str, values: list) -> dict:
    quote = (lambda v: "'" + v.replace("'", "''") + "'") if column == "event_id" else str
    wheres = [f"{column} = {quote(v)}" for v in values]
    bloom = _bloom_copy(spark, lake)
    full = spark.read.parquet(str(lake))
    with_bloom = spark.read.parquet(str(bloom))
    import duckdb

    connection = duckdb.connect()
    files = [str(p) for p in sorted(lake.rglob("*.parquet")) if "_lakeseek" not in p.parts]
    connection.execute(f"CREATE VIEW lake AS SELECT * FROM read_parquet({files!r}, hive_partitioning = true)")
    full.where(wheres[0]).collect()  # warm Spark's session as a live application would be

    def floor(where: str) -> int:
        paths = index.files(where)
        value = values[wheres.index(where)]
        return sum(pq.read_table(p, filters=[(column, "=", value)]).num_rows for p in paths)

    measured = {
        "lakeseek_read": timed(wheres, lambda w: index.read(w).num_rows),
        "lakeseek_to_spark": timed(wheres, lambda w: len(to_spark(index, spark, w).collect())),
        "spark_full_scan": timed(wheres, lambda w: len(full.where(w).collect())),
        "spark_bloom_filters": timed(wheres, lambda w: len(with_bloom.where(w).collect())),
        "duckdb_full_scan": timed(
            wheres, lambda w: len(connection.execute(f"SELECT * FROM lake WHERE {w}").fetchall())
        ),
        "floor_pyarrow_right_files": timed(wheres, floor),
    }
    rows = {name: result.pop("rows") for name, result in measured.items()}
    if len({tuple(r) for r in rows.values()}) != 1:
        raise SystemExit(f"row counts disagree for {column}: {rows}")
    read = measured["lakeseek_read"]["p50_ms"]
    measured["ratios"] = {
        "spark_full_scan / lakeseek_read": measured["spark_full_scan"]["p50_ms"] / read,
        "duckdb_full_scan / lakeseek_read": measured["duckdb_full_scan"]["p50_ms"] / read,
        "lakeseek_read / floor": read / measured["floor_pyarrow_right_files"]["p50_ms"],
        "spark_full_scan / lakeseek_to_spark": measured["spark_full_scan"]["p50_ms"]
        / measured["lakeseek_to_spark"]["p50_ms"],
        "spark_bloom_filters / lakeseek_read": measured["spark_bloom_filters"]["p50_ms"] / read,
    }
    measured["rows_per_query"] = rows["lakeseek_read"]
    say(f"{column}: " + ", ".join(f"{k} {v['p50_ms']:.1f} ms" for k, v in measured.items() if "p50_ms" in v))
    return measured


def _bloom_copy(spark, lake: Path) -> Path:
    copy = lake.parent / f"{lake.name}-bloom"
    if not (copy / "_SUCCESS").exists():
        say("writing a copy of the lake with Parquet bloom filters on record_id and event_id (Spark)")
        writer = spark.read.parquet(str(lake)).write.mode("overwrite").partitionBy("date")
        for column in COLUMNS:
            writer = writer.option(f"parquet.bloom.filter.enabled#{column}", "true")
        writer.parquet(str(copy))
    return copy


def _pct(values: list[float], percent: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(percent / 100 * (len(ordered) - 1)))]


def _report(results: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=2))
    lines = [
        f"# Needle benchmark ({results['date']}, {results['machine']})",
        "",
        f"Lake: {results['lake']['rows']:,} rows in {results['lake']['files']:,} files, "
        f"{results['lake']['bytes'] / 2**20:,.0f} MiB. Command: `python benchmarks/needle.py`.",
        "",
        "## Build (local Spark)",
        "",
        f"{results['build']['seconds']:.1f} s for {len(COLUMNS)} columns "
        f"({results['build']['rows_per_second']:,.0f} lake rows/s); "
        f"index = {results['build']['index_percent_of_lake']:.1f} % of the lake.",
        "",
        "| column | entries | index files | bytes per entry |",
        "|---|---:|---:|---:|",
    ]
    for name, column in results["build"]["columns"].items():
        lines.append(f"| {name} | {column['entries']:,} | {column['files']} | {column['bytes_per_entry']:.2f} |")
    files = results["files"]
    lines += [
        "",
        "## files() latency (record_id)",
        "",
        "| | p50 | p99 | storage reads per lookup (max) |",
        "|---|---:|---:|---:|",
        f"| cold (new process state) | {files['cold_p50_ms']:.2f} ms | {files['cold_p99_ms']:.2f} ms | "
        f"{files['cold_reads_max']} |",
        f"| warm (root, footers cached) | {files['warm_p50_ms']:.2f} ms | {files['warm_p99_ms']:.2f} ms | "
        f"{files['warm_reads_max']} |",
        f'| warm, `lake_listing="once"` | {files["warm_listing_once_p50_ms"]:.2f} ms | '
        f"{files['warm_listing_once_p99_ms']:.2f} ms | {files['warm_reads_max']} |",
        "",
        f"By default every lookup checks the lake for files changed since indexing "
        f"(p50 {files['lake_listing_p50_ms']:.2f} ms of the warm figure, for "
        f"{results['lake']['files']:,} files: a watched local directory is listed again only after a change); "
        '`lake_listing="once"` reuses the first snapshot.',
        "",
        "## Needle query `SELECT * FROM lake WHERE col = X` (median of the needles)",
        "",
        "| engine | record_id | event_id |",
        "|---|---:|---:|",
    ]
    needle = results["needle"]
    for name in needle["record_id"]:
        if name in ("ratios", "rows_per_query"):
            continue
        lines.append(
            f"| {name} | {needle['record_id'][name]['p50_ms']:,.1f} ms | {needle['event_id'][name]['p50_ms']:,.1f} ms |"
        )
    lines += ["", "| ratio | record_id | event_id |", "|---|---:|---:|"]
    for name in needle["record_id"]["ratios"]:
        lines.append(
            f"| {name} | {needle['record_id']['ratios'][name]:,.1f}x | {needle['event_id']['ratios'][name]:,.1f}x |"
        )
    text = "\n".join(lines) + "\n"
    (out / "latest.md").write_text(text)
    _chart(results, out / "latest.png")
    print(text)


def _chart(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    needle = results["needle"]
    names = [n for n in needle["record_id"] if n not in ("ratios", "rows_per_query")]
    figure, axis = plt.subplots(figsize=(9, 4.5))
    width = 0.4
    for offset, column in ((-width / 2, "record_id"), (width / 2, "event_id")):
        axis.bar(
            [i + offset for i in range(len(names))], [needle[column][n]["p50_ms"] for n in names], width, label=column
        )
    axis.set_yscale("log")
    axis.set_ylabel("ms (log scale)")
    axis.set_xticks(range(len(names)), [n.replace("_", "\n") for n in names], fontsize=8)
    axis.set_title(f"Needle query, {results['lake']['rows']:,} rows in {results['lake']['files']:,} files")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
