"""Query-integration benchmark: SQL through the data source, ranges, batch lookups, row groups.

Run by hand (not in CI):  python benchmarks/queries.py [--rows 20000000 --files 1000]

On the needle benchmark's lake (generated on first use), with the index rebuilt on
record_id, event_id and ts, it measures side by side:

- the SQL needle ``SELECT * FROM t WHERE record_id = X`` through the lakeseek data sources
  (JVM and Python) against a plain Parquet table, and queries the index cannot help;
- ranges of growing width on ts (clustered by time) and record_id (scattered): lakeseek
  read (which falls back to a scan when the cost model says so) against a plain scan;
- batch lookups of 1k / 100k / 1M keys: ``Index.locate`` (no Spark) against a Spark join
  with the lake and DuckDB ``WHERE record_id IN (keys)``;
- row-group precision on a lake of large multi-row-group files: a file-level index against
  a row-group index.

Prints the numbers and writes benchmarks/results/queries.{md,json}.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import lakeseek
import lakeseek.spark
from lakeseek.caches import clear_cache
from lakeseek.engine.session import default_session
from lakeseek.sample import generate_lake
from lakeseek.spark import locate_spark
from measure import benchmark_lake, lake_parser, say, timed

COLUMNS = ["record_id", "event_id", "ts"]
BATCH_SIZES = (1_000, 100_000, 1_000_000)


def main() -> None:
    parser = lake_parser(__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=5, help="needle values per measurement")
    parser.add_argument("--rg-rows", type=int, default=4_000_000, help="rows of the row-group lake")
    args = parser.parse_args()
    lake = benchmark_lake(Path(args.data), args.rows, args.files, args.days)
    spark = default_session()
    results: dict = {
        "lake": {"rows": args.rows, "files": args.files},
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}",
        "date": time.strftime("%Y-%m-%d"),
    }
    rng = np.random.default_rng(11)
    _index(lake, spark)
    ids = _record_ids(lake)
    needles = [int(v) for v in rng.choice(ids, args.queries, replace=False)]
    results["sql"] = _sql(spark, lake, needles)
    results["ranges"] = _ranges(lake, ids)
    results["batch"] = _batch(spark, lake, ids, rng)
    results["row_groups"] = _row_groups(spark, Path(args.data), args.rg_rows, args.queries)
    _report(results, Path(args.out))


def _record_ids(lake: Path) -> np.ndarray:
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(lake), format="parquet", partitioning="hive", exclude_invalid_files=True)
    return dataset.to_table(columns=["record_id"]).column("record_id").to_numpy()


def _index(lake: Path, spark) -> None:
    try:
        index = lakeseek.open_index(str(lake))
        if sorted(index.columns) == sorted(COLUMNS) and all(
            info.data_files is not None for c in index.root.content.indexes.values() for info in c.files
        ):
            say("reusing the index")
            return
    except lakeseek.LakeseekError:
        pass
    shutil.rmtree(lake / "_lakeseek", ignore_errors=True)
    say(f"building the index on {', '.join(COLUMNS)}")
    started = time.perf_counter()
    lakeseek.create_index(str(lake), COLUMNS, spark=spark)
    say(f"built in {time.perf_counter() - started:.1f} s")


# -- SQL through the data source -----------------------------------------------------------------
TABLES = {"lakeseek_jvm": "bench_lakeseek", "lakeseek_python": "bench_lakeseek_python", "spark_parquet": "bench_plain"}


def _sql(spark, lake: Path, needles: list[int]) -> dict:
    if not lakeseek.spark.register(spark):
        raise SystemExit("the JVM data source did not load (is javac on PATH?)")
    sources = {"lakeseek_jvm": "lakeseek", "lakeseek_python": lakeseek.spark.PYTHON_FORMAT}
    for name, source in sources.items():
        table = TABLES[name]
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(f"CREATE TABLE {table} USING {source} OPTIONS (path '{lake}')")
    spark.read.parquet(str(lake)).createOrReplaceTempView(TABLES["spark_parquet"])
    wheres = [f"record_id = {v}" for v in needles]
    for table in TABLES.values():
        _rows(spark, table, wheres[0])  # warm the session
    # Interleaved: each query runs through every source before the next one.
    needle = _each_source(wheres, lambda table, where: _rows(spark, table, where), repeats=2)
    unhelped = ["amount > 499.5", "status = 'timeout' AND amount > 450", "payload LIKE '%-01999-%'"]
    for table in TABLES.values():
        _count(spark, table, unhelped[0])  # the first scan of the lake warms the JVM
    scan = _each_source(unhelped, lambda table, where: _rows(spark, table, where), repeats=3)
    # Aggregates over most rows: a Python data source cannot prune columns, so every column
    # of every row crosses from Python to the JVM; Spark's reader (and the JVM source) decode one.
    counted = ["status = 'ok'", "amount > 10"]
    counts = _each_source(counted, lambda table, where: _count(spark, table, where), repeats=3)
    # The floor of any Python data source query here: one trivial Python task.
    trivial = timed(["x"] * 5, lambda _: len(spark.range(1).mapInArrow(lambda batches: batches, "id long").collect()))
    return {
        "python_task_floor_ms": trivial["p50_ms"],
        "needle": needle,
        "unhelped": {"queries": unhelped, **scan},
        "counts": {"queries": counted, **counts},
        "ratios": {
            group: {name: measured[name]["p50_ms"] / measured["spark_parquet"]["p50_ms"] for name in TABLES}
            for group, measured in (("needle", needle), ("unhelped", scan), ("counts", counts))
        },
    }


def _each_source(wheres: list[str], action, repeats: int = 1) -> dict:
    """Milliseconds of ``action(table, where)`` per source: the sources take turns on each
    predicate, in a rotating order, so a slow moment of the machine hits all of them."""
    names = list(TABLES)
    times: dict[str, list[float]] = {name: [] for name in names}
    rows: dict[str, list[int]] = {name: [] for name in names}
    for run in range(repeats):
        for where in wheres:
            for name in names[run % len(names) :] + names[: run % len(names)]:
                measured = timed([where], lambda w, t=TABLES[name]: action(t, w))
                times[name].append(measured["p50_ms"])
                if run == 0:
                    rows[name].extend(measured["rows"])
    measured = {
        name: {"p50_ms": float(np.median(times[name])), "max_ms": max(times[name]), "rows": rows[name]}
        for name in names
    }
    _same_rows(measured)
    return measured


def _rows(spark, table: str, where: str) -> int:
    return len(spark.sql(f"SELECT * FROM {table} WHERE {where}").collect())


def _count(spark, table: str, where: str) -> int:
    return spark.sql(f"SELECT count(*) FROM {table} WHERE {where}").collect()[0][0]


def _same_rows(measured: dict) -> None:
    rows = {name: result.pop("rows") for name, result in measured.items()}
    if len({tuple(r) for r in rows.values()}) != 1:
        raise SystemExit(f"row counts disagree: {rows}")
    for result in measured.values():
        result["rows"] = rows[next(iter(rows))]


# -- ranges of growing width -----------------------------------------------------------------------
def _ranges(lake: Path, ids: np.ndarray) -> list[dict]:
    start = dt.datetime(2024, 1, 8, 6, 0)
    cases = [
        ("ts", f"ts >= TIMESTAMP '{start}' AND ts < TIMESTAMP '{start + width}'", label)
        for width, label in (
            (dt.timedelta(minutes=1), "1 minute"),
            (dt.timedelta(hours=1), "1 hour"),
            (dt.timedelta(days=1), "1 day"),
            (dt.timedelta(days=7), "7 days"),
            (dt.timedelta(days=30), "30 days"),
        )
    ]
    low = int(np.min(ids))
    span = int(np.max(ids)) - low
    for share in (1e-7, 1e-5, 1e-3, 1e-1, 1.0):
        width = max(1, int(span * share))
        cases.append(("record_id", f"record_id BETWEEN {low + span // 3} AND {low + span // 3 + width}", f"{share:g}"))
    measured = []
    for column, where, label in cases:
        index = lakeseek.open_index(str(lake), lake_listing="once")
        plan = index.plan(where)
        # Interleaved, each side first in turn, so a slow moment of the machine hits both.
        reads, scans = [], []
        for run in range(5):
            pair = [(reads, index.read), (scans, index.scan)]
            for results, action in pair if run % 2 == 0 else reversed(pair):
                results.append(timed([where], lambda w, act=action: act(w).num_rows))
        read, scan = _median_of(reads), _median_of(scans)
        if read["rows"] != scan["rows"]:
            raise SystemExit(f"row counts disagree for {where}")
        measured.append(
            {
                "column": column,
                "width": label,
                "where": where,
                "rows": read["rows"][0],
                "index_used": plan.index_used,
                "files": len(plan.files),
                "lakeseek_read_ms": read["p50_ms"],
                "plain_scan_ms": scan["p50_ms"],
                "ratio": read["p50_ms"] / scan["p50_ms"],
            }
        )
        say(f"range {column} {label}: {measured[-1]}")
    return measured


def _median_of(results: list[dict]) -> dict:
    times = sorted(r["p50_ms"] for r in results)
    return {"p50_ms": times[len(times) // 2], "rows": results[0]["rows"]}


# -- batch lookups ---------------------------------------------------------------------------------
def _batch(spark, lake: Path, ids: np.ndarray, rng: np.random.Generator) -> list[dict]:
    import duckdb
    from pyspark.sql import functions as F

    files = [str(p) for p in sorted(lake.rglob("*.parquet")) if "_lakeseek" not in p.parts]
    connection = duckdb.connect()
    plain = spark.read.parquet(str(lake)).select("record_id", F.input_file_name().alias("file"))
    measured = []
    for size in BATCH_SIZES:
        keys = rng.choice(ids, size, replace=False)
        keys_table = pa.table({"k": pa.array(keys)})
        clear_cache()
        index = lakeseek.open_index(str(lake))  # cold: a fresh index handle per run, nothing cached
        started = time.perf_counter()
        pairs = index.locate(pa.array(keys), column="record_id")
        local = time.perf_counter() - started
        warm_started = time.perf_counter()
        index.locate(pa.array(keys), column="record_id")
        warm = time.perf_counter() - warm_started

        started = time.perf_counter()
        index_spark = locate_spark(index, spark.createDataFrame(keys_table), column="record_id").count()
        on_spark = time.perf_counter() - started

        keys_frame = spark.createDataFrame(keys_table)
        started = time.perf_counter()
        joined = plain.join(keys_frame, plain.record_id == keys_frame.k).select("record_id", "file").distinct().count()
        spark_join = time.perf_counter() - started

        connection.register("keys_table", keys_table)
        started = time.perf_counter()
        duck = connection.execute(
            f"SELECT count(*) FROM (SELECT DISTINCT record_id, filename FROM read_parquet({files!r}, filename = true) "
            "WHERE record_id IN (SELECT k FROM keys_table))"
        ).fetchall()[0][0]
        duck_seconds = time.perf_counter() - started
        if not pairs.num_rows == index_spark == joined == duck:
            raise SystemExit(f"batch of {size}: pair counts disagree {pairs.num_rows} {index_spark} {joined} {duck}")
        measured.append(
            {
                "keys": size,
                "pairs": pairs.num_rows,
                "lakeseek_locate_s": local,
                "lakeseek_locate_warm_s": warm,
                "lakeseek_locate_spark_s": on_spark,
                "spark_join_s": spark_join,
                "duckdb_in_s": duck_seconds,
                "spark_join / locate": spark_join / local,
                "duckdb / locate": duck_seconds / local,
            }
        )
        say(f"batch {size}: {measured[-1]}")
    return measured


# -- row-group precision -----------------------------------------------------------------------------
def _row_groups(spark, data: Path, rows: int, queries: int) -> dict:
    """A lake of 8 large files of 10 row groups each, indexed per file and per row group."""
    import pyarrow.parquet as pq

    lake = data / f"rg-lake-{rows}"
    marker = lake / "_GENERATED"
    if not marker.exists():
        shutil.rmtree(lake, ignore_errors=True)
        say(f"generating the row-group lake ({rows:,} rows, 8 files)")
        flat = data / f"rg-flat-{rows}"
        shutil.rmtree(flat, ignore_errors=True)
        generate_lake(str(flat), rows=rows, files=8, days=1)
        lake.mkdir(parents=True)
        for number, path in enumerate(sorted(flat.rglob("*.parquet"))):
            pq.write_table(pq.read_table(path), lake / f"part-{number:03d}.parquet", row_group_size=rows // 80)
        shutil.rmtree(flat)
        marker.write_text("ok")
    shutil.rmtree(lake / "_lakeseek", ignore_errors=True)
    lakeseek.create_index(str(lake), "record_id", spark=spark, name="files")
    lakeseek.create_index(str(lake), "record_id", spark=spark, name="rowgroups", row_groups=True)
    ids = pq.read_table(lake / "part-003.parquet", columns=["record_id"]).column("record_id").to_numpy()
    wheres = [f"record_id = {int(v)}" for v in np.random.default_rng(5).choice(ids, queries, replace=False)]
    measured = {}
    for name in ("files", "rowgroups"):
        index = lakeseek.open_index(str(lake), name=name, lake_listing="once")
        before = index.storage.stats.snapshot()
        result = timed(wheres, lambda w, i=index: i.read(w).num_rows)
        plan = index.plan(wheres[0])
        measured[name] = {
            **result,
            "row_groups_read": sum(len(g) for g in plan.row_groups.values()) if plan.row_groups else 10,
            "index_bytes": index.root.index_bytes,
            "lakeseek_reads": index.storage.stats.snapshot()["reads"] - before["reads"],
        }
    _same_rows(measured)
    return {
        "lake": {"rows": rows, "files": 8, "row_groups_per_file": 10},
        **measured,
        "speedup": measured["files"]["p50_ms"] / measured["rowgroups"]["p50_ms"],
    }


# -- report ------------------------------------------------------------------------------------------
def _ratio(time_share: float) -> str:
    """A time ratio against Spark as the reader wants it: "8.1x faster" or "1.05x the time"."""
    return f"**{1 / time_share:.1f}x faster**" if time_share < 0.8 else f"{time_share:.2f}x the time"


def _report(results: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "queries.json").write_text(json.dumps(results, indent=2, default=str))
    sql = results["sql"]
    lines = [
        f"# Query integration benchmark ({results['date']}, {results['machine']})",
        "",
        f"Lake: {results['lake']['rows']:,} rows in {results['lake']['files']:,} files. "
        "Command: `python benchmarks/queries.py`.",
        "",
        "## SQL through the data source (ms, median of every run: 5 needles twice, the other queries 3 times)",
        "",
        "`lakeseek` is the JVM data source (Spark's Parquet scan, pruned by the index); "
        "`lakeseek_python` is the Python data source, the fallback without a JDK or on Spark Connect.",
        "",
        "| query | lakeseek | lakeseek_python | spark.read.parquet | lakeseek / Spark | lakeseek_python / Spark |",
        "|---|---|---|---|---|---|",
        *[
            f"| {label} | {sql[group]['lakeseek_jvm']['p50_ms']:.0f} | {sql[group]['lakeseek_python']['p50_ms']:.0f} | "
            f"{sql[group]['spark_parquet']['p50_ms']:.0f} | {_ratio(sql['ratios'][group]['lakeseek_jvm'])} | "
            f"{_ratio(sql['ratios'][group]['lakeseek_python'])} |"
            for group, label in (
                ("needle", "needle `record_id = X`"),
                ("unhelped", "not helped by the index"),
                ("counts", "`count(*)` keeping most rows"),
            )
        ],
        "",
        f"Not helped: `{'`, `'.join(sql['unhelped']['queries'])}`. Counts: `{'`, `'.join(sql['counts']['queries'])}`. "
        f"A trivial Python task (`spark.range(1).mapInArrow(identity)`) takes {sql['python_task_floor_ms']:.0f} ms "
        "here: every Python data source query pays one.",
        "",
        "## Ranges of growing width (median of 5, interleaved, ms; plain scan = pyarrow over every file)",
        "",
        "| column | width | rows | index used | files | lakeseek read | plain scan | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results["ranges"]:
        lines.append(
            f"| {r['column']} | {r['width']} | {r['rows']:,} | {'yes' if r['index_used'] else 'no (cost)'} | "
            f"{r['files']:,} | {r['lakeseek_read_ms']:.0f} | {r['plain_scan_ms']:.0f} | {r['ratio']:.2f} |"
        )
    lines += [
        "",
        "## Batch lookups of record_id (seconds)",
        "",
        "| keys | pairs | locate (no Spark, cold) | locate warm | locate_spark | Spark join | DuckDB IN |",
        "|---|---|---|---|---|---|---|",
    ]
    for b in results["batch"]:
        lines.append(
            f"| {b['keys']:,} | {b['pairs']:,} | **{b['lakeseek_locate_s']:.2f}** | "
            f"{b['lakeseek_locate_warm_s']:.2f} | {b['lakeseek_locate_spark_s']:.2f} | "
            f"{b['spark_join_s']:.2f} | {b['duckdb_in_s']:.2f} |"
        )
    rg = results["row_groups"]
    lines += [
        "",
        f"## Row-group precision ({rg['lake']['rows']:,} rows, 8 files of 10 row groups; median ms)",
        "",
        "| index | needle read | row groups read | index bytes |",
        "|---|---|---|---|",
        f"| per file | {rg['files']['p50_ms']:.0f} | {rg['files']['row_groups_read']} | "
        f"{rg['files']['index_bytes']:,} |",
        f"| per row group | {rg['rowgroups']['p50_ms']:.0f} | {rg['rowgroups']['row_groups_read']} | "
        f"{rg['rowgroups']['index_bytes']:,} |",
        "",
        f"Row groups make the needle read {rg['speedup']:.1f}x faster.",
    ]
    text = "\n".join(lines) + "\n"
    (out / "queries.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
