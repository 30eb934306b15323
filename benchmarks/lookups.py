"""Lookups at the floor (issue 14): warm files(), needle reads, batch locate and a TPC-H needle,
side by side with pyarrow reading the right files, DuckDB and the same lake as a Delta table.

Run by hand (not in CI):  python benchmarks/lookups.py [--rows 20000000 --files 1000]

The lake is shaped like the held-out one: ``--rows`` rows written by Spark in about
``--files`` files over 30 date partitions (``repartitionByRange(files, ts)`` then
``partitionBy(date)``), a unique ``record_id`` and an ``event_id`` shared by about six rows.
The same rows are also written as a Delta table (deltalake, about as many files). TPC-H
``lineitem`` at scale 2 comes from ``tpchgen-cli`` (200 files of one row group each).
Each engine's median over the same needles, warm (every engine's second and later runs);
locate against DuckDB joining the keys with the whole lake. Prints the numbers and writes
them to benchmarks/results/lookups.{md,json}.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import lakeseek
from lakeseek.engine.session import default_session
from lakeseek.lru import CACHES
from measure import lake_parser, save_results, say

# ruff: noqa: E501  (markdown table rows)

NEEDLES = 20
LOOKUPS = 2000


def main() -> None:
    parser = lake_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--cache-mb", type=int, default=1024, help="decoded index entries kept (the service's --cache-mb)"
    )
    parser.set_defaults(rows=20_000_000, files=1000)
    args = parser.parse_args()
    CACHES["index entries"].capacity = args.cache_mb << 20
    data = Path(args.data)
    lake = _spark_lake(data / f"heldout-{args.rows}-{args.files}", args.rows, args.files)
    delta = _delta_copy(lake, data / f"heldout-delta-{args.rows}-{args.files}")
    results: dict = {"rows": args.rows, "files": len(_data_files(lake)), "cache_mb": args.cache_mb}
    rng = random.Random(7)
    needles = _needles(lake, rng)
    results["files_latency"] = {
        "directory, per query (watched)": _files_latency(lakeseek.open_index(str(lake)), needles),
        "directory, once": _files_latency(lakeseek.open_index(str(lake), lake_listing="once"), needles),
        "delta, per query": _files_latency(lakeseek.open_index(str(delta)), _needles(delta, rng)),
    }
    say(f"files(): {results['files_latency']}")
    results["needle"] = _needle_reads(lake, needles)
    say(f"needle: {results['needle']}")
    results["locate"] = _locate(lake, rng)
    say(f"locate: {results['locate']}")
    results["tpch"] = _tpch(data / "tpch-2", rng)
    say(f"tpch: {results['tpch']}")
    save_results(args.out, "lookups", results, _markdown(results))


# -- lakes ------------------------------------------------------------------------------------
def _spark_lake(root: Path, rows: int, files: int) -> Path:
    if not (root / "_SUCCESS").exists():
        say(f"writing {rows:,} rows in about {files} files with Spark at {root}")
        spark = default_session()
        frame = spark.range(rows).selectExpr(
            # A bijection of [0, 8e10): unique ids in a wide range, scattered over the files.
            "(id * 2654435761 + 1000000000007) % 80000000000 + 1000000000000 AS record_id",
            f"concat('ev-', cast(floor(rand(1) * {max(rows // 6, 1)}) AS string)) AS event_id",
            "concat('10.', cast(floor(rand(2) * 256) AS int), '.', cast(floor(rand(3) * 256) AS int), '.', "
            "cast(floor(rand(4) * 256) AS int)) AS client_ip",
            f"timestamp_seconds(1704067200 + cast(id * 30 * 86400 / {rows} AS bigint)) AS ts",
            "round(rand(5) * 100, 2) AS amount",
            "element_at(array('ok', 'retry', 'failed', 'timeout', 'redirect'), cast(floor(rand(6) * 5) AS int) + 1) AS status",
            "concat('payload-', cast(floor(rand(7) * 2000) AS string)) AS payload",
        )
        frame = frame.withColumn("date", frame["ts"].cast("date"))
        frame.repartitionByRange(files, "ts").write.mode("overwrite").partitionBy("date").parquet(str(root))
    if not (root / "_lakeseek").exists():
        say("indexing record_id and event_id")
        lakeseek.create_index(str(root), ["record_id", "event_id"])
    return root


def _delta_copy(lake: Path, root: Path) -> Path:
    if not (root / "_delta_log").exists():
        from deltalake import write_deltalake

        say(f"writing the same rows as a Delta table at {root}")
        files = _data_files(lake)
        dataset = ds.dataset(
            files, format="parquet", partitioning=ds.partitioning(flavor="hive"), partition_base_dir=str(lake)
        )
        size = sum(Path(path).stat().st_size for path in files) // len(files)
        write_deltalake(str(root), dataset.scanner().to_reader(), partition_by=["date"], target_file_size=size)
    if not (root / "_lakeseek").exists():
        lakeseek.create_index(str(root), ["record_id", "event_id"])
    return root


def _data_files(lake: Path) -> list[str]:
    return sorted(str(p) for p in lake.rglob("*.parquet") if "_lakeseek" not in p.parts)


def _needles(lake: Path, rng: random.Random) -> list[int]:
    files = _data_files(lake)
    found = []
    for path in rng.sample(files, NEEDLES):
        column = pq.read_table(path, columns=["record_id"]).column(0)
        found.append(column[rng.randrange(len(column))].as_py())
    return found


# -- measurements -----------------------------------------------------------------------------
def _percentiles(times: list[float]) -> dict:
    ordered = sorted(times)
    return {
        "p50_ms": ordered[len(ordered) // 2] * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
    }


def _files_latency(index: lakeseek.Index, needles: list[int]) -> dict:
    for value in needles:  # warm: footers and the needles' chunks
        index.files(f"record_id = {value}")
    times = []
    for i in range(LOOKUPS):
        where = f"record_id = {needles[i % len(needles)]}"
        started = time.perf_counter()
        index.files(where)
        times.append(time.perf_counter() - started)
    return _percentiles(times)


def _median_ms(action, values: list, repeats: int = 3) -> float:
    for value in values[:3]:
        action(value)
    times = []
    for _ in range(repeats):
        for value in values:
            started = time.perf_counter()
            action(value)
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def _needle_reads(lake: Path, needles: list[int]) -> dict:
    index = lakeseek.open_index(str(lake))
    right = {value: index.files(f"record_id = {value}") for value in needles}
    rows = {value: index.read(f"record_id = {value}").num_rows for value in needles}
    assert all(rows.values()), "every needle is a row of the lake"

    def floor(value: int) -> int:
        # pyarrow reading the right file(s) for the value, with the same filter.
        return sum(pq.read_table(path, filters=[("record_id", "=", value)]).num_rows for path in right[value])

    assert {value: floor(value) for value in needles} == rows
    connection = duckdb.connect()
    connection.execute(
        f"CREATE VIEW lake AS SELECT * FROM read_parquet('{lake}/*/*.parquet', hive_partitioning = true)"
    )
    return {
        "lakeseek_read_ms": _median_ms(lambda v: index.read(f"record_id = {v}"), needles),
        "floor_ms": _median_ms(floor, needles),
        "duckdb_full_scan_ms": _median_ms(
            lambda v: connection.execute(f"SELECT * FROM lake WHERE record_id = {v}").fetchall(), needles[:5], 1
        ),
        "spark_full_scan_ms": _spark_scan_ms(str(lake), "record_id", needles[:5]),
    }


def _spark_scan_ms(lake: str, column: str, values: list) -> float:
    """Spark's ``spark.read.parquet(lake).where(column = value).collect()``, warm (its listing and
    the JVM's code paths ready), the median over ``values``."""
    frame = default_session().read.parquet(lake)
    return _median_ms(lambda v: frame.where(f"{column} = {v}").collect(), values, 1)


def _locate(lake: Path, rng: random.Random) -> list[dict]:
    index = lakeseek.open_index(str(lake))
    ids = pa.concat_arrays(
        [
            pq.read_table(path, columns=["record_id"]).column(0).combine_chunks()
            for path in rng.sample(_data_files(lake), 100)
        ]
    ).to_numpy()
    connection = duckdb.connect()
    found = []
    for count in (1_000, 100_000):
        keys = pa.array(np.random.default_rng(count).choice(ids, count, replace=False))
        connection.register("wanted", pa.table({"record_id": keys}))
        join = (
            "SELECT w.record_id, l.filename FROM wanted w JOIN "
            f"read_parquet('{lake}/*/*.parquet', filename = true) l USING (record_id)"
        )
        ours = _median_ms(lambda _, k=keys: index.locate(k, column="record_id"), [0, 1, 2])
        theirs = _median_ms(lambda _, q=join: connection.execute(q).fetchall(), [0, 1], 1)
        pairs = index.locate(keys, column="record_id").num_rows
        assert pairs == len(connection.execute(join).fetchall()) == count
        found.append({"keys": count, "lakeseek_ms": ours, "duckdb_join_ms": theirs})
    return found


def _tpch(root: Path, rng: random.Random) -> dict:
    """A needle on ``l_partkey`` through the sorted index (value -> files: the candidate files
    are read whole, as each is one row group) and through a covering index carrying every
    column (the rows are read from the index's own row groups, no data file opened)."""
    lineitem = root / "lineitem"
    if not lineitem.exists():
        say("generating TPC-H lineitem at scale 2 with tpchgen-cli (200 files)")
        tpchgen = Path(sys.executable).parent / "tpchgen-cli"
        subprocess.run(
            [str(tpchgen), "parquet", "-s", "2", "--tables=lineitem", "--parts=200", f"--output-dir={root}"], check=True
        )
    files = _data_files(lineitem)
    if not (lineitem / "_lakeseek" / "default").exists():
        lakeseek.create_index(str(lineitem), ["l_partkey"])
    if not (lineitem / "_lakeseek" / "covering").exists():
        others = [name for name in pq.read_schema(files[0]).names if name != "l_partkey"]
        started = time.perf_counter()
        lakeseek.create_index(str(lineitem), ["l_partkey"], kind="covering", name="covering", include=others)
        say(f"covering index built in {time.perf_counter() - started:.1f} s")
    sorted_index = lakeseek.open_index(str(lineitem))
    covering = lakeseek.open_index(str(lineitem), name="covering")
    both = lakeseek.open_indexes(str(lineitem))
    keys = [
        pq.read_table(path, columns=["l_partkey"]).column(0)[rng.randrange(1000)].as_py()
        for path in rng.sample(files, 10)
    ]
    connection = duckdb.connect()
    connection.execute(f"CREATE VIEW lineitem AS SELECT * FROM read_parquet('{lineitem}/*.parquet')")
    expected = [
        sorted(connection.execute(f"SELECT * FROM lineitem WHERE l_partkey = {key}").fetchall()) for key in keys
    ]
    for handle in (sorted_index, covering, both):
        found = [handle.read(f"l_partkey = {key}").to_pylist() for key in keys]
        assert [sorted(tuple(row.values()) for row in rows) for rows in found] == expected
    return {
        "needles": len(keys),
        "rows_per_needle": statistics.median(len(rows) for rows in expected),
        "files_per_needle": statistics.median(len(sorted_index.files(f"l_partkey = {key}")) for key in keys),
        "lake_mb": sum(path.stat().st_size for path in map(Path, files)) / 1e6,
        "covering_index_mb": sum(p.stat().st_size for p in (lineitem / "_lakeseek" / "covering").rglob("*")) / 1e6,
        "sorted_read_ms": _median_ms(lambda k: sorted_index.read(f"l_partkey = {k}"), keys),
        "covering_read_ms": _median_ms(lambda k: covering.read(f"l_partkey = {k}"), keys),
        "both_indexes_read_ms": _median_ms(lambda k: both.read(f"l_partkey = {k}"), keys),
        "duckdb_full_scan_ms": _median_ms(
            lambda k: connection.execute(f"SELECT * FROM lineitem WHERE l_partkey = {k}").fetchall(), keys[:5], 1
        ),
        "spark_full_scan_ms": _spark_scan_ms(str(lineitem), "l_partkey", keys[:5]),
    }


def _markdown(results: dict) -> str:
    lines = [
        f"# Lookups: {results['rows']:,} rows in {results['files']:,} files (written by Spark), decoded index entries cache {results['cache_mb']} MiB",
        "",
        f"Warm `files()` over {LOOKUPS:,} lookups of {NEEDLES} needles:",
        "",
        "| lake, freshness | p50 | p99 |",
        "|---|---:|---:|",
    ]
    for name, found in results["files_latency"].items():
        lines.append(f"| {name} | {found['p50_ms']:.2f} ms | {found['p99_ms']:.2f} ms |")
    needle = results["needle"]
    lines += [
        "",
        "Needle `SELECT * WHERE record_id = X` (median of the needles, warm):",
        "",
        "| lakeseek `read` | floor: pyarrow reading the right file | DuckDB full scan | Spark full scan | lakeseek / floor | DuckDB / lakeseek | Spark / lakeseek |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {needle['lakeseek_read_ms']:.2f} ms | {needle['floor_ms']:.2f} ms | {needle['duckdb_full_scan_ms']:.1f} ms | "
        f"{needle['spark_full_scan_ms']:.0f} ms | **{needle['lakeseek_read_ms'] / needle['floor_ms']:.2f}x** | "
        f"**{needle['duckdb_full_scan_ms'] / needle['lakeseek_read_ms']:.0f}x** | **{needle['spark_full_scan_ms'] / needle['lakeseek_read_ms']:.0f}x** |",
        "",
        "Batch `locate` (key, file) against DuckDB joining the keys with the whole lake:",
        "",
        "| keys | lakeseek `locate` | DuckDB join | DuckDB / lakeseek |",
        "|---:|---:|---:|---:|",
    ]
    for found in results["locate"]:
        lines.append(
            f"| {found['keys']:,} | {found['lakeseek_ms']:.1f} ms | {found['duckdb_join_ms']:.1f} ms | "
            f"**{found['duckdb_join_ms'] / found['lakeseek_ms']:.1f}x** |"
        )
    tpch = results["tpch"]
    scan = tpch["duckdb_full_scan_ms"]
    lines += [
        "",
        f"TPC-H scale 2 `lineitem` ({tpch['lake_mb']:.0f} MB in 200 files of one row group), needle `SELECT * WHERE l_partkey = X` "
        f"({tpch['rows_per_needle']:.0f} rows in {tpch['files_per_needle']:.0f} files per needle), DuckDB's full scan {scan:.1f} ms "
        f"(Spark's {tpch['spark_full_scan_ms']:.0f} ms):",
        "",
        "| lakeseek | read | DuckDB / lakeseek |",
        "|---|---:|---:|",
        f"| sorted index (reads the candidate files whole) | {tpch['sorted_read_ms']:.1f} ms | **{scan / tpch['sorted_read_ms']:.1f}x** |",
        f"| covering index carrying every column ({tpch['covering_index_mb']:.0f} MB) | {tpch['covering_read_ms']:.2f} ms | **{scan / tpch['covering_read_ms']:.1f}x** |",
        f"| both, through `open_indexes` (as the CLI and the service) | {tpch['both_indexes_read_ms']:.2f} ms | **{scan / tpch['both_indexes_read_ms']:.1f}x** |",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
