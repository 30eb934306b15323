"""The OTree layout (seed 002) against Spark's default layout, a range-partitioned one and
unsorted files: writes, samples and multi-column ranges.

Run by hand (not in CI):  python benchmarks/layout.py [--rows 10000000 --files 100 --cube-size 10000]

Generates ``--rows`` rows (x, y, z uniform doubles, a normal ``value``, a 40-byte payload) with
Spark into ``--data``: once as Spark writes it in ``--files`` files (``df.write.parquet``, the
default layout, timed), once range-partitioned on x (``repartitionByRange``, timed), and once as
an OTree lake over x, y, z (``lakeseek.layout.write`` from the same Parquet, timed; against a
plain read-then-write of that Parquet). Then, per sample fraction, the files and bytes a
lakeseek sample opens and its time against ``df.sample`` on Spark's layout, with the error of
the average of ``value``; and per 3-column range of growing selectivity, over ``BOXES`` random
boxes, the files each layout must open (files whose x, y and z bounds meet the box), and the
read time of one box (lakeseek through the blocks; pyarrow's dataset filter elsewhere). Prints
the numbers and writes them to benchmarks/results/layout-CUBE_SIZE.{md,json}.
"""

from __future__ import annotations

import random
import shutil
import statistics
import time
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq

import lakeseek.layout as layout
from lakeseek.engine.session import default_session
from measure import lake_parser, median_ms, save_results, say

# ruff: noqa: E501  (markdown table rows)

FRACTIONS = (0.01, 0.05, 0.10)
SIDES = (0.1, 0.215, 0.464)  # a cube of this side holds 0.1 %, 1 %, 10 % of uniform rows
BOXES = 20  # random positions per side
WRITE_RUNS = 4  # the first cold, the median of the others warm


def main() -> None:
    parser = lake_parser(__doc__.splitlines()[0])
    parser.add_argument("--cube-size", type=int, default=10_000)
    parser.set_defaults(rows=10_000_000, files=100)
    args = parser.parse_args()
    spark = default_session()
    base = Path(args.data) / f"layout-{args.rows}"
    plain, ranged, otree = base / "plain", base / "ranged", base / f"otree-{args.cube_size}"
    source = spark.range(args.rows).selectExpr(
        "rand(1) AS x",
        "rand(2) AS y",
        "rand(3) AS z",
        "randn(4) * 10 + 100 AS value",
        "concat('payload-', sha1(cast(id AS string))) AS payload",
    )
    results: dict = {"rows": args.rows, "cube_size": args.cube_size}
    shutil.rmtree(plain, ignore_errors=True)
    started = time.perf_counter()
    source.repartition(args.files).write.parquet(str(plain))
    results["write_plain_s"] = time.perf_counter() - started
    say(f"plain write {results['write_plain_s']:.1f} s")
    frame = spark.read.parquet(str(plain))
    shutil.rmtree(ranged, ignore_errors=True)
    started = time.perf_counter()
    frame.repartitionByRange(args.files, "x").write.parquet(str(ranged))
    results["write_ranged_s"] = time.perf_counter() - started
    # The layout's write and the same read-then-write done plainly, in turn, WRITE_RUNS times:
    # the first run of each pays for starting Python workers and compiling its job (cold); the
    # medians of the others are the warm figures.
    rewrite = base / "rewrite"
    times: dict[str, list[float]] = {"otree": [], "plain": []}
    for _ in range(WRITE_RUNS):
        shutil.rmtree(otree, ignore_errors=True)
        started = time.perf_counter()
        layout.write(frame, str(otree), ["x", "y", "z"], cube_size=args.cube_size)
        times["otree"].append(time.perf_counter() - started)
        shutil.rmtree(rewrite, ignore_errors=True)
        started = time.perf_counter()
        frame.write.parquet(str(rewrite))
        times["plain"].append(time.perf_counter() - started)
        say(f"otree write {times['otree'][-1]:.1f} s, plain rewrite {times['plain'][-1]:.1f} s")
    shutil.rmtree(rewrite, ignore_errors=True)
    for name, found in (("write_otree", times["otree"]), ("rewrite_plain", times["plain"])):
        results[f"{name}_cold_s"], results[f"{name}_warm_s"] = found[0], statistics.median(found[1:])
        results[f"{name}_runs_s"] = found

    otree_files = layout.files(str(otree))
    sizes = {path: Path(path).stat().st_size for path in otree_files}
    plain_files = sorted(str(p) for p in plain.glob("*.parquet"))
    plain_bytes = sum(Path(p).stat().st_size for p in plain_files)
    truth = frame.agg({"value": "avg"}).collect()[0][0]
    results["lake"] = {
        "otree_files": len(otree_files),
        "otree_bytes": sum(sizes.values()),
        "plain_files": len(plain_files),
        "plain_bytes": plain_bytes,
    }
    samples = []
    for fraction in FRACTIONS:
        chosen = layout.files(str(otree), sample=fraction)
        read_bytes = _row_group_bytes(chosen, fraction)
        ours = median_ms(lambda f=fraction: layout.sample(str(otree), f, columns=["value"]), 3)
        table = layout.sample(str(otree), fraction, columns=["value"])
        estimate = table.column("value").to_numpy().mean()
        theirs = median_ms(lambda f=fraction: frame.sample(fraction=f, seed=7).agg({"value": "avg"}).collect(), 3)
        spark_filter = median_ms(
            lambda f=fraction, c=chosen: (
                spark.read.parquet(*c).where(layout.sample_sql(f)).agg({"value": "avg"}).collect()
            ),
            3,
        )
        samples.append(
            {
                "fraction": fraction,
                "files": len(chosen),
                "file_bytes": sum(sizes[p] for p in chosen),
                "row_group_bytes": read_bytes,
                "rows": table.num_rows,
                "lakeseek_ms": ours,
                "spark_on_chosen_files_ms": spark_filter,
                "spark_sample_ms": theirs,
                "error_of_average": abs(estimate - truth) / abs(truth),
            }
        )
        say(f"sample {fraction}: {samples[-1]}")
    ranges = []
    rng = random.Random(13)
    footers = {name: _footers(directory) for name, directory in (("ranged", ranged), ("plain", plain))}
    for side in SIDES:
        boxes = [{c: (low := rng.uniform(0, 1 - side), low + side) for c in "xyz"} for _ in range(BOXES)]
        boxes[0] = {c: (0.3, 0.3 + side) for c in "xyz"}  # straddles the middle: the octree's worst case
        opened: dict[str, list[int]] = {"otree": [], "ranged": [], "plain": []}
        for box in boxes:
            opened["otree"].append(len(layout.files(str(otree), _where(box))))
            for name, found in footers.items():
                opened[name].append(sum(_meets(metadata, box) for metadata in found.values()))
        where = _where(boxes[1])
        rows = layout.read(str(otree), where, columns=["value"]).num_rows
        entry = {
            "side": side,
            "rows": rows,
            "share": rows / args.rows,
            "otree_ms": median_ms(lambda w=where: layout.read(str(otree), w, columns=["value"]), 3),
            "total_files": {"otree": len(otree_files), **{name: len(found) for name, found in footers.items()}},
        }
        for name, counts in opened.items():
            entry[f"{name}_files_mean"] = sum(counts) / len(counts)
            entry[f"{name}_files_max"] = max(counts)
            entry[f"{name}_files_middle"] = counts[0]
        for name, directory in (("ranged", ranged), ("plain", plain)):
            dataset = ds.dataset(sorted(str(p) for p in directory.glob("*.parquet")))
            expression = None
            for c, (low, high) in boxes[1].items():
                part = (ds.field(c) >= low) & (ds.field(c) < high)
                expression = part if expression is None else expression & part
            entry[f"{name}_ms"] = median_ms(lambda d=dataset, e=expression: d.to_table(columns=["value"], filter=e), 3)
        ranges.append(entry)
        say(f"range {side}: {entry}")
    results["samples"], results["ranges"] = samples, ranges
    save_results(args.out, f"layout-{args.cube_size}", results, _markdown(results))


def _row_group_bytes(files: list[str], fraction: float) -> int:
    """Bytes of the row groups a sample reads (files are sorted by weight, so Parquet's
    statistics of the weight skip the rest)."""
    from lakeseek.layout.tree import WEIGHT, sample_threshold

    threshold = sample_threshold(fraction)
    total = 0
    for path in files:
        metadata = pq.ParquetFile(path).metadata
        column = metadata.schema.names.index(WEIGHT)
        for group in range(metadata.num_row_groups):
            statistics = metadata.row_group(group).column(column).statistics
            if statistics is None or statistics.min < threshold:
                row_group = metadata.row_group(group)
                total += sum(row_group.column(i).total_compressed_size for i in range(row_group.num_columns))
    return total


def _footers(directory: Path) -> dict[str, pq.FileMetaData]:
    return {str(p): pq.ParquetFile(p).metadata for p in sorted(directory.glob("*.parquet"))}


def _where(box: dict) -> str:
    return " AND ".join(f"{c} >= {low!r} AND {c} < {high!r}" for c, (low, high) in box.items())


def _meets(metadata: pq.FileMetaData, box: dict) -> bool:
    names = metadata.schema.names
    for group in range(metadata.num_row_groups):
        inside = True
        for column, (low, high) in box.items():
            statistics = metadata.row_group(group).column(names.index(column)).statistics
            if statistics is not None and (statistics.max < low or statistics.min >= high):
                inside = False
        if inside:
            return True
    return False


def _markdown(results: dict) -> str:
    lake = results["lake"]
    lines = [
        f"# OTree layout: {results['rows']:,} rows, 3 dimensions, cube size {results['cube_size']:,}",
        "",
        f"Write (median of {WRITE_RUNS - 1} warm runs; the first, cold, in parentheses): `lakeseek.layout.write` {results['write_otree_warm_s']:.1f} s "
        f"({results['write_otree_cold_s']:.1f} s) against a plain read-then-write of the same Parquet "
        f"{results['rewrite_plain_warm_s']:.1f} s ({results['rewrite_plain_cold_s']:.1f} s): "
        f"**{results['rewrite_plain_warm_s'] / results['write_otree_warm_s']:.2f}** of its throughput "
        f"({results['rewrite_plain_cold_s'] / results['write_otree_cold_s']:.2f} cold), and "
        f"{results['write_ranged_s'] / results['write_otree_warm_s']:.2f} of the throughput of "
        f"`repartitionByRange` on x, then write ({results['write_ranged_s']:.1f} s); generating the data "
        f"with `df.write.parquet`: {results['write_plain_s']:.1f} s. "
        f"OTree: {lake['otree_files']} files, {lake['otree_bytes'] / 2**20:,.0f} MiB; default layout: "
        f"{lake['plain_files']} files, {lake['plain_bytes'] / 2**20:,.0f} MiB.",
        "",
        "| sample | files | bytes of their row groups read | share of the lake's bytes | lakeseek | Spark `df.sample` (default layout) | ratio | Spark, weight filter on the chosen files | error of avg |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in results["samples"]:
        lines.append(
            f"| {s['fraction']:.0%} | {s['files']} of {lake['otree_files']} | {s['row_group_bytes'] / 2**20:,.1f} MiB | "
            f"{s['row_group_bytes'] / lake['otree_bytes']:.1%} | {s['lakeseek_ms']:,.0f} ms | {s['spark_sample_ms']:,.0f} ms | "
            f"{s['spark_sample_ms'] / s['lakeseek_ms']:.1f}x | {s['spark_on_chosen_files_ms']:,.0f} ms | {s['error_of_average']:.4%} |"
        )
    lines += [
        "",
        f"Files a 3-column range must open, over {BOXES} random boxes per size (mean; max; the box "
        "[0.3, 0.3 + side) in every column, which straddles the middle, the octree's worst case):",
        "",
        "| 3-column range | rows | OTree files | range-partitioned (x) files | unsorted files | OTree read | range-partitioned read | unsorted read |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["ranges"]:
        total = r["total_files"]
        cells = []
        for name in ("otree", "ranged", "plain"):
            mean = r[f"{name}_files_mean"]
            cells.append(
                f"{mean:,.1f} of {total[name]} (**{mean / total[name]:.1%}**; max {r[f'{name}_files_max']}; "
                f"middle {r[f'{name}_files_middle']})"
            )
        lines.append(
            f"| side {r['side']} | {r['rows']:,} ({r['share']:.2%}) | {' | '.join(cells)} | "
            f"{r['otree_ms']:,.0f} ms | {r['ranged_ms']:,.0f} ms | {r['plain_ms']:,.0f} ms |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
