"""Needles in CSV and JSON lines lakes: lakeseek against DuckDB's full scan and the floor.

Run by hand (not in CI):  python benchmarks/text_lakes.py [--text-files 100]

Copies the first ``--text-files`` files of the needle benchmark's Parquet lake (generated on
first use, see needle.py) as CSV (with a header line) and as JSON lines files, with DuckDB,
in the same hive directories; indexes ``record_id`` on local Spark; then measures, per format:
the build, warm ``files()``, the needle ``read``, DuckDB's full scan of the same files with the
same predicate, and the floor (pyarrow reading exactly the one right file and filtering it).
Prints the numbers and ratios and writes them to benchmarks/results/text_lakes.{md,json}.
"""

from __future__ import annotations

import json
import os
import platform
import random
import shutil
import statistics
import time
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

import lakeseek
from lakeseek.engine.session import default_session
from measure import benchmark_lake, lake_parser, say, timed

HERE = Path(__file__).parent
COLUMN = "record_id"
DUCKDB_READERS = {"csv": "read_csv", "json": "read_json"}
PYARROW_READERS = {"csv": pacsv.read_csv, "json": pajson.read_json}


def main() -> None:
    parser = lake_parser(__doc__.splitlines()[0])
    parser.add_argument("--text-files", type=int, default=100, help="Parquet files copied as text")
    parser.add_argument("--needles", type=int, default=5)
    parser.add_argument("--lookups", type=int, default=300, help="files() lookups for the warm median")
    args = parser.parse_args()

    source = benchmark_lake(Path(args.data), args.rows, args.files, args.days)
    parquet_files = sorted(source.glob("*/*.parquet"))[: args.text_files]
    rng = random.Random(7)
    needles = []
    for path in rng.sample(parquet_files, args.needles):
        values = pq.read_table(path, columns=[COLUMN]).column(COLUMN)
        needles.append((values[rng.randrange(len(values))].as_py(), path.relative_to(source).with_suffix("")))
    spark = default_session()
    results: dict = {
        "lake": {"files": len(parquet_files), "rows": sum(pq.ParquetFile(p).metadata.num_rows for p in parquet_files)},
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}",
        "date": time.strftime("%Y-%m-%d"),
        "formats": {},
    }
    for file_format in ("csv", "json"):
        lake = _text_lake(Path(args.data), source, parquet_files, file_format)
        results["formats"][file_format] = _measure(lake, file_format, needles, args.lookups, spark)
    _report(results)


def _text_lake(data: Path, source: Path, parquet_files: list[Path], file_format: str) -> Path:
    lake = data / f"text-{len(parquet_files)}" / file_format
    marker = lake / "_GENERATED"
    if marker.exists():
        return lake
    shutil.rmtree(lake, ignore_errors=True)
    say(f"copying {len(parquet_files)} files as {file_format} to {lake}")
    options = "FORMAT CSV, HEADER true" if file_format == "csv" else "FORMAT JSON"
    for path in parquet_files:
        target = lake / path.relative_to(source).with_suffix(f".{file_format}")
        target.parent.mkdir(parents=True, exist_ok=True)
        # As Spark writes a partitioned lake: the partition column in the directory names only.
        duckdb.sql(f"COPY (SELECT * FROM read_parquet('{path}', hive_partitioning = false)) TO '{target}' ({options})")
    marker.write_text("")
    return lake


def _measure(lake: Path, file_format: str, needles: list, lookups: int, spark) -> dict:
    shutil.rmtree(lake / "_lakeseek", ignore_errors=True)
    started = time.perf_counter()
    lakeseek.create_index(lakeseek.open_lake(str(lake), source_format=file_format), [COLUMN], spark=spark)
    build = time.perf_counter() - started
    index = lakeseek.open_index(str(lake))
    wheres = [f"{COLUMN} = {value}" for value, _ in needles]
    for where in wheres:  # warm: root, footers and the lake's listing
        index.files(where)
    warm = []
    for i in range(lookups):
        begun = time.perf_counter()
        index.files(wheres[i % len(wheres)])
        warm.append(time.perf_counter() - begun)
    files = [str(lake / path.parent / f"{path.name}.{file_format}") for _, path in needles]
    read = timed(wheres, lambda where: index.read(where).num_rows)

    def floor(where: str) -> int:
        value, path = needles[wheres.index(where)]
        table = PYARROW_READERS[file_format](str(lake / path.parent / f"{path.name}.{file_format}"))
        return table.filter(pc.equal(table.column(COLUMN), value)).num_rows

    glob = f"{lake}/*/*.{file_format}"
    reader = DUCKDB_READERS[file_format]
    full = timed(
        wheres[:3], lambda where: len(duckdb.sql(f"SELECT * FROM {reader}('{glob}') WHERE {where}").fetchall())
    )
    measured = {
        "bytes": sum(f.stat().st_size for f in lake.glob(f"*/*.{file_format}")),
        "build_seconds": build,
        "files_warm_p50_ms": statistics.median(warm) * 1000,
        "read": read,
        "floor": timed(wheres, floor),
        "duckdb_full_scan": full,
        "right_files": files,
    }
    if read["rows"] != measured["floor"]["rows"] or read["rows"][:3] != full["rows"]:
        counts = f"{read['rows']} {measured['floor']['rows']} {full['rows']}"
        raise SystemExit(f"{file_format}: the engines disagree on the rows of the needles: {counts}")
    return measured


def _report(results: dict) -> None:
    lines = [
        f"# Needles in text lakes ({results['date']}, {results['machine']})",
        "",
        f"{results['lake']['files']} files, {results['lake']['rows']:,} rows, copied from the needle benchmark's "
        "lake. Command: `python benchmarks/text_lakes.py`. Medians over the needles.",
        "",
        "| format | lake MiB | build s | files() warm | lakeseek read | floor (right file, pyarrow) "
        "| DuckDB full scan | read / floor | DuckDB / read |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for file_format, m in results["formats"].items():
        read, floor, full = m["read"]["p50_ms"], m["floor"]["p50_ms"], m["duckdb_full_scan"]["p50_ms"]
        lines.append(
            f"| {file_format} | {m['bytes'] / 2**20:,.0f} | {m['build_seconds']:.1f} | "
            f"{m['files_warm_p50_ms']:.2f} ms | {read:.1f} ms | {floor:.1f} ms | {full:,.0f} ms | "
            f"{read / floor:.2f}x | {full / read:.0f}x |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    (HERE / "results" / "text_lakes.md").write_text(text)
    (HERE / "results" / "text_lakes.json").write_text(json.dumps(results, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
