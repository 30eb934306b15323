"""Skipping sketches per row group against per file, on a lake of files of many row groups.

Run by hand (not in CI):  python benchmarks/row_group_sketches.py [--files 50 --groups 20]

Generates (once) a lake of ``--files`` Parquet files of ``--groups`` row groups of 10,000 rows:
``ts`` rising within each file (as a writer appending events writes it), ``record_id`` a random
permutation, ``status`` one of five values. Builds a skipping index (bloom filters) of
record_id and ts per file and one per row group, in process, and times each build. Then, per
index, a record_id needle and a one-minute ts range: warm ``read`` latency, candidate files and
row groups read, against the floor (pyarrow reading exactly the right row group of the right
file) and DuckDB's full scan. Prints the numbers and writes them to
benchmarks/results/row_group_sketches.{md,json}.
"""

from __future__ import annotations

import datetime
import random
import shutil
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import lakeseek
from measure import lake_parser, median_ms, save_results, say

ROWS_PER_GROUP = 10_000
REPEATS = 9
START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def main() -> None:
    parser = lake_parser(__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=20, help="row groups per file")
    parser.set_defaults(files=50)
    args = parser.parse_args()
    lake = _lake(Path(args.data), args.files, args.groups)
    results: dict = {
        "lake": {
            "files": args.files,
            "row_groups_per_file": args.groups,
            "rows": args.files * args.groups * ROWS_PER_GROUP,
        },
        "date": time.strftime("%Y-%m-%d"),
        "indexes": {},
    }
    shutil.rmtree(lake / "_lakeseek", ignore_errors=True)
    for name, row_groups in (("per file", False), ("per row group", True)):
        started = time.perf_counter()
        index = lakeseek.create_index(
            str(lake),
            ["record_id", "ts"],
            kind="skipping",
            name=name.replace(" ", "_"),
            engine="local",
            row_groups=row_groups,
        )
        results["indexes"][name] = {
            "build_seconds": time.perf_counter() - started,
            "bytes": sum(c.bytes for c in index.status().columns),
        }
    needle_file = sorted(lake.glob("*.parquet"))[args.files // 2]
    needle = pq.ParquetFile(needle_file).read_row_group(args.groups // 2, columns=["record_id"]).column(0)[17].as_py()
    minute = START + datetime.timedelta(hours=args.files // 2, minutes=30)
    after = minute + datetime.timedelta(minutes=1)
    queries = {
        "record_id needle": f"record_id = {needle}",
        "ts, one minute": f"ts >= TIMESTAMP '{minute:%Y-%m-%d %H:%M:%S}' AND ts < TIMESTAMP '{after:%F %T}'",
    }
    results["queries"] = {}
    for label, where in queries.items():
        results["queries"][label] = found = _measure(lake, where, list(results["indexes"]), args.groups)
        say(f"{label}: {found}")
    save_results(args.out, "row_group_sketches", results, _markdown(results))


def _lake(data: Path, files: int, groups: int) -> Path:
    lake = data / f"row-groups-{files}-{groups}"
    if (lake / "_GENERATED").exists():
        return lake
    shutil.rmtree(lake, ignore_errors=True)
    lake.mkdir(parents=True)
    say(f"writing {files} files of {groups} row groups at {lake}")
    rows = files * groups * ROWS_PER_GROUP
    ids = np.random.default_rng(3).permutation(rows).astype(np.int64) + 10**12
    rng = random.Random(4)
    per_file = groups * ROWS_PER_GROUP
    for number in range(files):
        # An hour of events per file, rising.
        offsets = np.sort(np.random.default_rng(number).integers(0, 3_600_000_000, per_file))
        start = int((START + datetime.timedelta(hours=number)).timestamp() * 1_000_000)
        table = pa.table(
            {
                "record_id": ids[number * per_file : (number + 1) * per_file],
                "ts": pa.array(start + offsets, pa.timestamp("us", tz="UTC")),
                "status": [rng.choice(["ok", "retry", "fail", "slow", "new"]) for _ in range(per_file)],
                "amount": np.random.default_rng(number + 1).random(per_file),
            }
        )
        pq.write_table(table, lake / f"part-{number:05d}.parquet", row_group_size=ROWS_PER_GROUP)
    (lake / "_GENERATED").write_text("")
    return lake


def _measure(lake: Path, where: str, names: list[str], groups: int) -> dict:
    glob = f"{lake}/*.parquet"
    located = duckdb.sql(
        f"SELECT filename, file_row_number FROM read_parquet('{glob}', filename=true, file_row_number=true) "
        f"WHERE {where}"
    ).fetchall()
    right: dict[str, set[int]] = {}
    for path, row in located:
        right.setdefault(path, set()).add(row // ROWS_PER_GROUP)
    found: dict = {"rows": len(located)}
    for name in names:
        index = lakeseek.open_index(str(lake), name=name.replace(" ", "_"), lake_listing="once")
        assert index.read(where).num_rows == len(located), (where, name)
        plan = index.plan(where)
        read = sum(len(plan.row_groups.get(path, range(groups))) for path in plan.files)
        found[name] = {
            "ms": median_ms(lambda index=index: index.read(where), REPEATS),
            "files": len(plan.files),
            "row_groups": read,
        }
    found["floor"] = {"ms": median_ms(lambda: _floor(right), REPEATS)}
    scan = f"SELECT * FROM read_parquet('{glob}') WHERE {where}"
    found["duckdb full scan"] = {"ms": median_ms(lambda: duckdb.sql(scan).to_arrow_table(), REPEATS)}
    return found


def _floor(right: dict[str, set[int]]) -> int:
    """pyarrow reading exactly the row groups that hold a match (found by a full scan beforehand)."""
    return sum(pq.ParquetFile(path).read_row_groups(sorted(groups)).num_rows for path, groups in right.items())


def _markdown(results: dict) -> str:
    lake = results["lake"]
    lines = [
        f"# Skipping sketches per row group ({lake['rows']:,} rows, {lake['files']} files of "
        f"{lake['row_groups_per_file']} row groups, {results['date']})",
        "",
        "| index | build s | bytes |",
        "|---|---:|---:|",
    ]
    for name, built in results["indexes"].items():
        lines.append(f"| {name} | {built['build_seconds']:.1f} | {built['bytes']:,} |")
    lines += [
        "",
        "Warm `read` medians in ms (files / row groups read); floor: pyarrow reading exactly the right row groups.",
        "",
        "| query | rows | per file | per row group | floor | DuckDB full scan | per file / per row group |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, found in results["queries"].items():
        per_file, per_group = found["per file"], found["per row group"]
        lines.append(
            f"| {label} | {found['rows']} | {per_file['ms']:.1f} ({per_file['files']} / {per_file['row_groups']}) "
            f"| {per_group['ms']:.1f} ({per_group['files']} / {per_group['row_groups']}) | {found['floor']['ms']:.1f} "
            f"| {found['duckdb full scan']['ms']:.1f} | {per_file['ms'] / per_group['ms']:.1f}x |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
