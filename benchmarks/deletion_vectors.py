"""Needles in a Delta table with deletion vectors: lakeseek against deltalake's own scan and the floor.

Run by hand (not in CI):  python benchmarks/deletion_vectors.py [--table-files 100]

Writes the first ``--table-files`` files of the needle benchmark's Parquet lake (generated on
first use, see needle.py) as a Delta table with deletion vectors enabled, one data file each,
then deletes 1% of the rows of every other file with a deletion vector (written as Delta's
writers write them, by tests/delta_vectors.py: nothing installed here writes them). Indexes
``record_id`` on local Spark and measures needles in files with and without a vector: warm
``files()``, ``read`` on a warm handle, the first ``read`` of a new handle (which has the
table's vectors decoded by deltalake), deltalake's scan with the predicate (DataFusion with
delta-kernel: the only engine here that applies deletion vectors; Spark has no Delta jars and
DuckDB's delta extension cannot be fetched), and the floor (pyarrow reading exactly the right
file, the vector's rows left out). Prints the numbers and ratios and writes them to
benchmarks/results/deletion_vectors.{md,json}.
"""

from __future__ import annotations

import json
import os
import platform
import random
import shutil
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import unquote

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import lakeseek
from lakeseek.engine.session import default_session
from measure import benchmark_lake, lake_parser, say, timed

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from tests.delta_vectors import delete_rows  # noqa: E402

COLUMN = "record_id"


def main() -> None:
    parser = lake_parser(__doc__.splitlines()[0])
    parser.add_argument("--table-files", type=int, default=100, help="Parquet files written as the table's files")
    parser.add_argument("--needles", type=int, default=5, help="per kind of file (with and without a vector)")
    parser.add_argument("--lookups", type=int, default=300, help="files() lookups for the warm median")
    args = parser.parse_args()

    source = benchmark_lake(Path(args.data), args.rows, args.files, args.days)
    parquet_files = sorted(source.glob("*/*.parquet"))[: args.table_files]
    table = _table(Path(args.data), parquet_files)
    delta = deltalake.DeltaTable(str(table))
    vectors = pa.table(delta.deletion_vectors())
    prefix = delta.table_uri.rstrip("/") + "/"
    deleted = {
        unquote(uri[len(prefix) :]): np.flatnonzero(~keep.values.to_numpy(zero_copy_only=False))
        for uri, keep in zip(vectors.column("filepath").to_pylist(), vectors.column("selection_vector"), strict=True)
    }
    files = sorted(unquote(p) for p in delta.get_add_actions(flatten=True).column("path").to_pylist())
    rng = random.Random(7)
    needles = {"with a vector": [], "without": []}
    for kind, pool in (
        ("with a vector", [f for f in files if f in deleted]),
        ("without", [f for f in files if f not in deleted]),
    ):
        for path in rng.sample(pool, args.needles):
            values = _kept(table, path, deleted.get(path)).column(COLUMN)
            needles[kind].append((values[rng.randrange(len(values))].as_py(), path))

    spark = default_session()
    shutil.rmtree(table / "_lakeseek", ignore_errors=True)
    started = time.perf_counter()
    lakeseek.create_index(str(table), [COLUMN], spark=spark)
    build = time.perf_counter() - started
    results: dict = {
        "table": {"files": len(files), "with_vectors": len(deleted), "rows": _count(delta)},
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}",
        "date": time.strftime("%Y-%m-%d"),
        "build_seconds": build,
        "kinds": {kind: _measure(table, chosen, deleted, args.lookups) for kind, chosen in needles.items()},
    }
    _report(results)


def _table(data: Path, parquet_files: list[Path]) -> Path:
    table = data / f"delta-vectors-{len(parquet_files)}"
    marker = table / "_GENERATED"
    if marker.exists():
        return table
    shutil.rmtree(table, ignore_errors=True)
    say(f"writing {len(parquet_files)} files as a Delta table with deletion vectors at {table}")
    for path in parquet_files:
        deltalake.write_deltalake(
            str(table), pq.read_table(path), mode="append", configuration={"delta.enableDeletionVectors": "true"}
        )
    rng = random.Random(11)
    files = sorted(
        unquote(p) for p in deltalake.DeltaTable(str(table)).get_add_actions(flatten=True).column("path").to_pylist()
    )
    losing = {}
    for path in files[::2]:
        rows = pq.read_metadata(table / path).num_rows
        losing[path] = set(rng.sample(range(rows), rows // 100))
    delete_rows(table, losing)
    marker.write_text("")
    return table


def _kept(table: Path, path: str, deleted: np.ndarray | None) -> pa.Table:
    """The floor's read: the one right file, without the rows its vector deletes."""
    rows = pq.read_table(table / path)
    if deleted is None:
        return rows
    keep = np.ones(rows.num_rows, dtype=bool)
    keep[deleted] = False
    return rows.filter(pa.array(keep))


def _count(delta: deltalake.DeltaTable) -> int:
    return sum(batch.num_rows for batch in pa.RecordBatchReader.from_stream(delta.scan(columns=[COLUMN])))


def _measure(table: Path, needles: list, deleted: dict, lookups: int) -> dict:
    index = lakeseek.open_index(str(table))
    wheres = [f"{COLUMN} = {value}" for value, _ in needles]
    for where in wheres:  # warm: root, footers, the table's vectors
        index.read(where)
    warm = []
    for i in range(lookups):
        begun = time.perf_counter()
        index.files(wheres[i % len(wheres)])
        warm.append(time.perf_counter() - begun)
    read = timed(wheres, lambda where: index.read(where).num_rows)
    first = timed(wheres, lambda where: lakeseek.open_index(str(table)).read(where).num_rows)

    def floor(where: str) -> int:
        value, path = needles[wheres.index(where)]
        rows = _kept(table, path, deleted.get(path))
        return rows.filter(pc.equal(rows.column(COLUMN), value)).num_rows

    def engine(where: str) -> int:
        reader = deltalake.DeltaTable(str(table)).scan(predicate=where)
        return sum(batch.num_rows for batch in pa.RecordBatchReader.from_stream(reader))

    measured = {
        "files_warm_p50_ms": statistics.median(warm) * 1000,
        "read": read,
        "first_read_new_handle": first,
        "floor": timed(wheres, floor),
        "deltalake_scan": timed(wheres[:3], engine),
    }
    if read["rows"] != measured["floor"]["rows"] or read["rows"][:3] != measured["deltalake_scan"]["rows"]:
        counts = f"{read['rows']} {measured['floor']['rows']} {measured['deltalake_scan']['rows']}"
        raise SystemExit(f"the engines disagree on the rows of the needles: {counts}")
    return measured


def _report(results: dict) -> None:
    t = results["table"]
    lines = [
        f"# Needles in a Delta table with deletion vectors ({results['date']}, {results['machine']})",
        "",
        f"{t['files']} files ({t['with_vectors']} with a deletion vector of 1% of their rows), {t['rows']:,} rows "
        f"kept, copied from the needle benchmark's lake; index build {results['build_seconds']:.1f} s. "
        "Command: `python benchmarks/deletion_vectors.py`. Medians over the needles.",
        "",
        "| needle in a file | files() warm | read | first read, new handle | floor (right file, pyarrow) "
        "| deltalake scan | read / floor | scan / read |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, m in results["kinds"].items():
        read, floor, scan = m["read"]["p50_ms"], m["floor"]["p50_ms"], m["deltalake_scan"]["p50_ms"]
        lines.append(
            f"| {kind} | {m['files_warm_p50_ms']:.2f} ms | {read:.1f} ms | "
            f"{m['first_read_new_handle']['p50_ms']:.1f} ms | {floor:.1f} ms | {scan:,.0f} ms | "
            f"{read / floor:.2f}x | {scan / read:.0f}x |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    (HERE / "results" / "deletion_vectors.md").write_text(text)
    (HERE / "results" / "deletion_vectors.json").write_text(json.dumps(results, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
