"""Query-integration benchmark: SQL through the data source, ranges, batch lookups, row groups.

Run by hand (not in CI):  python benchmarks/queries.py [--rows 20000000 --files 1000]

On the needle benchmark's lake (generated on first use), with the index rebuilt on
record_id, event_id and ts, it measures side by side:

- the SQL needle ``SELECT * FROM t WHERE record_id = X`` through the lakeseek data source
  against plain ``spark.read.parquet``, and a query the index cannot help through both;
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
from lakeseek.sample import generate_lake
from lakeseek.spark.session import default_session
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
            info.data_files is not None for c in index.root.columns.values() for info in c.files
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
def _sql(spark, lake: Path, needles: list[int]) -> dict:
    lakeseek.spark.register(spark)
    spark.sql("DROP TABLE IF EXISTS bench_lakeseek")
    spark.sql(f"CREATE TABLE bench_lakeseek USING lakeseek OPTIONS (path '{lake}')")
    plain = spark.read.parquet(str(lake))
    plain.createOrReplaceTempView("bench_plain")
    wheres = [f"record_id = {v}" for v in needles]
    spark.sql(f"SELECT * FROM bench_plain WHERE {wheres[0]}").collect()  # warm the session
    spark.sql(f"SELECT * FROM bench_lakeseek WHERE {wheres[0]}").collect()
    needle = {
        "lakeseek_data_source": timed(wheres, lambda w: _rows(spark, "bench_lakeseek", w)),
        "spark_parquet": timed(wheres, lambda w: _rows(spark, "bench_plain", w)),
    }
    _same_rows(needle)
    unhelped = ["amount > 499.5", "status = 'timeout' AND amount > 450", "payload LIKE '%-01999-%'"]
    scan = {
        "lakeseek_data_source": timed(unhelped, lambda w: _rows(spark, "bench_lakeseek", w)),
        "spark_parquet": timed(unhelped, lambda w: _rows(spark, "bench_plain", w)),
    }
    _same_rows(scan)
    # Aggregates over most rows: Python data sources cannot prune columns, so every column
    # of every row crosses from Python to the JVM, while Spark's reader decodes one or none.
    counted = ["status = 'ok'", "amount > 10"]
    counts = {
        "lakeseek_data_source": timed(counted, lambda w: _count(spark, "bench_lakeseek", w)),
        "spark_parquet": timed(counted, lambda w: _count(spark, "bench_plain", w)),
    }
    _same_rows(counts)
    # The floor of any Python data source query here: one trivial Python task.
    trivial = timed(["x"] * 5, lambda _: len(spark.range(1).mapInArrow(lambda batches: batches, "id long").collect()))
    return {
        "python_task_floor_ms": trivial["p50_ms"],
        "needle": needle,
        "needle_speedup": needle["spark_parquet"]["p50_ms"] / needle["lakeseek_data_source"]["p50_ms"],
        "unhelped": {"queries": unhelped, **scan},
        "unhelped_ratio": scan["lakeseek_data_source"]["p50_ms"] / scan["spark_parquet"]["p50_ms"],
        "counts": {"queries": counted, **counts},
        "counts_ratio": counts["lakeseek_data_source"]["p50_ms"] / counts["spark_parquet"]["p50_ms"],
    }


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
        index = lakeseek.open_index(str(lake))  # cold: a fresh index handle per run
        started = time.perf_counter()
        pairs = index.locate(pa.array(keys), column="record_id")
        local = time.perf_counter() - started
        warm_started = time.perf_counter()
        index.locate(pa.array(keys), column="record_id")
        warm = time.perf_counter() - warm_started

        started = time.perf_counter()
        index_spark = index.locate_spark(spark.createDataFrame(keys_table), column="record_id").count()
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
        "## SQL through the data source (median of 5, ms)",
        "",
        "| query | lakeseek data source | spark.read.parquet | ratio |",
        "|---|---|---|---|",
        f"| needle `record_id = X` | {sql['needle']['lakeseek_data_source']['p50_ms']:.0f} | "
        f"{sql['needle']['spark_parquet']['p50_ms']:.0f} | **{sql['needle_speedup']:.1f}x faster** |",
        f"| not helped by the index | {sql['unhelped']['lakeseek_data_source']['p50_ms']:.0f} | "
        f"{sql['unhelped']['spark_parquet']['p50_ms']:.0f} | {sql['unhelped_ratio']:.2f}x the time |",
        f"| `count(*)` keeping most rows | {sql['counts']['lakeseek_data_source']['p50_ms']:.0f} | "
        f"{sql['counts']['spark_parquet']['p50_ms']:.0f} | {sql['counts_ratio']:.2f}x the time |",
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
