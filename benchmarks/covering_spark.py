"""Spark SQL over a covering index's row files (``covering_frame``) against Spark over the lake.

Run by hand (not in CI):  python benchmarks/covering_spark.py [--rows 20000000 --files 1000]

On a hard-linked copy of the needle benchmark's lake (generated if missing), builds a covering
index on local Spark keyed by record_id and carrying ts, status and amount, registers
``covering_frame`` as a view, and times the same queries (warm, median of ``--repeats``) as
Spark SQL over the view, over ``spark.read.parquet`` of the lake, over the ``lakeseek`` data
source (the JVM one where it loads: the index prunes files), and as DuckDB's full scan: a
record_id needle, a record_id range of about 0.1 % of the rows, and an aggregate over a
carried column that no index narrows (status counts). Each answer is checked against
DuckDB's. Prints the numbers and writes benchmarks/results/covering_spark.{md,json}.
"""

from __future__ import annotations

import datetime
import os
import random
import shutil
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

import lakeseek
import lakeseek.spark
from lakeseek.engine.session import default_session
from measure import benchmark_lake, lake_parser, median_ms, save_results, say

CARRIED = ["ts", "status", "amount"]


def main() -> None:
    parser = lake_parser(__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    source = benchmark_lake(Path(args.data), args.rows, args.files, args.days)
    lake = Path(args.data) / f"covering-spark-{args.rows}-{args.files}"
    shutil.rmtree(lake, ignore_errors=True)
    shutil.copytree(source, lake, copy_function=os.link, ignore=shutil.ignore_patterns("_lakeseek", "_GENERATED"))
    spark = default_session()
    started = time.perf_counter()
    index = lakeseek.create_index(str(lake), ["record_id"], kind="covering", include=CARRIED, spark=spark)
    build = time.perf_counter() - started
    say(f"covering index built in {build:.1f} s")

    lakeseek.spark.covering_frame(index, spark).createOrReplaceTempView("covered")
    spark.read.parquet(str(lake)).createOrReplaceTempView("lake")
    on_jvm = lakeseek.spark.register(spark)
    spark.read.format("lakeseek").load(str(lake)).createOrReplaceTempView("lakeseek_source")
    sample = pq.read_table(sorted(lake.glob("*/*.parquet"))[0], columns=["record_id"]).column("record_id")
    rng = random.Random(5)
    needle = sample[rng.randrange(len(sample))].as_py()
    low = min(sample.to_pylist())
    span = 80_000  # the ids span about 8 * 10^7 over 2 * 10^7 rows: about 0.1 %
    queries = {
        "record_id needle": f"SELECT record_id, ts, amount FROM {{}} WHERE record_id = {needle}",
        "record_id range (~0.1 %)": (
            f"SELECT count(*), sum(amount) FROM {{}} WHERE record_id BETWEEN {low} AND {low + span}"
        ),
        "status counts (no filter)": "SELECT status, count(*) FROM {} GROUP BY status ORDER BY status",
    }
    lake_glob = f"{lake}/*/*.parquet"
    results: dict = {
        "lake": {"rows": args.rows, "files": args.files},
        "date": time.strftime("%Y-%m-%d"),
        "build_seconds": build,
        "index_bytes": sum(c.bytes for c in index.status().columns),
        "jvm_source": on_jvm,
        "queries": {},
    }
    for name, query in queries.items():
        expected = sorted(duckdb.sql(query.format(f"read_parquet('{lake_glob}', hive_partitioning=true)")).fetchall())
        timings = {}
        for engine, table in (
            ("covering_frame", "covered"),
            ("spark.read.parquet", "lake"),
            ("lakeseek source", "lakeseek_source"),
        ):
            found = sorted(tuple(row) for row in spark.sql(query.format(table)).collect())
            assert _same(found, expected), (name, engine, found[:3], expected[:3])
            text = query.format(table)
            timings[engine] = median_ms(lambda text=text: spark.sql(text).collect(), args.repeats)
        text = query.format(f"read_parquet('{lake_glob}', hive_partitioning=true)")
        timings["duckdb full scan"] = median_ms(lambda text=text: duckdb.sql(text).fetchall(), args.repeats)
        results["queries"][name] = timings
        say(f"{name}: " + ", ".join(f"{engine} {ms:.0f} ms" for engine, ms in timings.items()))
    save_results(args.out, "covering_spark", results, _markdown(results))
    shutil.rmtree(lake, ignore_errors=True)


def _same(found: list[tuple], expected: list[tuple]) -> bool:
    """Equal rows, sums compared to a relative 1e-9 (Spark and DuckDB add doubles in other orders)."""
    if len(found) != len(expected):
        return False
    for left, right in zip(found, expected, strict=True):
        for a, b in zip(left, right, strict=True):
            a, b = _plain(a), _plain(b)
            if isinstance(a, float) and isinstance(b, float):
                if abs(a - b) > 1e-9 * max(abs(a), abs(b), 1.0):
                    return False
            elif a != b and str(a) != str(b):
                return False
    return True


def _plain(value: object) -> object:
    """A zoned timestamp (DuckDB's) as the UTC wall time Spark's session in UTC collects."""
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value


def _markdown(results: dict) -> str:
    lake = results["lake"]
    engines = list(next(iter(results["queries"].values())))
    lines = [
        f"# Spark SQL over a covering index's row files ({lake['rows']:,} rows, {lake['files']:,} files, "
        f"{results['date']})",
        "",
        f"Covering index on record_id carrying {', '.join(CARRIED)}: built in {results['build_seconds']:.0f} s, "
        f"{results['index_bytes'] / 2**20:.0f} MiB; lakeseek source on the JVM: {results['jvm_source']}.",
        "Warm medians in ms; the ratio is spark.read.parquet's time over covering_frame's.",
        "",
        "| query | " + " | ".join(engines) + " | ratio |",
        "|---|" + "---:|" * (len(engines) + 1),
    ]
    for name, timings in results["queries"].items():
        ratio = timings["spark.read.parquet"] / timings["covering_frame"]
        lines.append(f"| {name} | " + " | ".join(f"{timings[e]:.0f}" for e in engines) + f" | {ratio:.1f}x |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
