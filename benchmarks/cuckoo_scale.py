"""Seed 004's experiment, scaled to this machine: cuckoo against sorted over 10^4..10^6 partitions.

Run by hand (not in CI):  python benchmarks/cuckoo_scale.py [--sizes 10000 100000 1000000] [--values 24]

For each size P: a Delta table of P data files (not written: ``scale.delta_table``), file i
holding the integers [i*V, (i+1)*V) as the seed's partitions held ranges of integers; a
sorted index, and cuckoo indexes with 16- and 24-bit fingerprints at the seed's three slots
per bucket, written by lakeseek's own writers (``scale.synthesize_index``). Measures warm
``files()`` per lookup (the lake listed once, as the seed's lookups never list): p50 latency,
index reads and bytes, and false-positive files for present and absent keys, next to the
seed's 17.8 ms at 10^6 partitions (reading ~13 MB).

Then the seed's trade-off curves, from the filters alone (2,000 files of 200 keys): slots per
bucket (the bucket count's choice) against bytes read and false positives per lookup, and
fingerprint width against false positives, measured and from 2·b·load/2^f. Writes
benchmarks/results/cuckoo_scale.{md,json,png}.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import lakeseek
from lakeseek.caches import clear_cache
from lakeseek.format.hashing import hash64
from lakeseek.io import counting
from lakeseek.kinds.cuckoo.filters import alternate, bucket_count, build_filter, positions
from measure import HERE, say
from scale import delta_table, synthesize_index

INDEXES = {"sorted": ("sorted", 16), "cuckoo-16": ("cuckoo", 16), "cuckoo-24": ("cuckoo", 24)}
SEED_MS_AT_A_MILLION = 17.8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--values", type=int, default=24, help="values per partition")
    parser.add_argument("--lookups", type=int, default=100)
    parser.add_argument("--data", default=str(HERE / "data"))
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args()
    results = {"date": time.strftime("%Y-%m-%d"), "values_per_partition": args.values, "scaling": [], "curves": {}}
    for files in args.sizes:
        table = Path(args.data) / f"cuckoo-scale-{files}-{args.values}"
        if not (table / "_lakeseek").exists():
            if table.exists():
                raise SystemExit(f"{table} exists without an index: remove it")
            say(f"a Delta table of {files:,} partitions and its indexes at {table}")
            delta_table(table, files)
            for name, (kind, bits) in INDEXES.items():
                started = time.perf_counter()
                synthesize_index(str(table), args.values, name=name, kind=kind, bits=bits)
                say(f"  {name}: {time.perf_counter() - started:.1f} s")
        for name in INDEXES:
            row = _lookups(str(table), name, files, args.values, args.lookups)
            results["scaling"].append(row)
            say(json.dumps(row))
    results["curves"] = _curves()
    _report(results, Path(args.out))


def _lookups(table: str, name: str, files: int, values: int, lookups: int) -> dict:
    clear_cache()
    index = lakeseek.open_index(table, name=name, lake_listing="once")
    index.files("id = 0")  # warm: what a version reads once (the directory, footers) is kept
    rng = random.Random(files)
    times, reads, nbytes, present_false, absent_false = [], [], [], [], []
    for number in range(lookups):
        absent = number % 2 == 1
        key = -rng.randrange(1, 2**40) if absent else rng.randrange(files * values)
        with counting() as io:
            started = time.perf_counter()
            found = index.plan(f"id = {key}").files
            times.append(time.perf_counter() - started)
        reads.append(io.reads)
        nbytes.append(io.bytes_read)
        right = set() if absent else {f"part-{key // values:07d}.parquet"}
        assert right <= set(found), (name, key)  # never a missed file
        (absent_false if absent else present_false).append(len(set(found) - right))
    content = index.root.content
    return {
        "files": files,
        "index": name,
        "bytes": content.size,
        "warm_p50_ms": statistics.median(times) * 1000,
        "reads": statistics.mean(reads),
        "bytes_per_lookup": statistics.mean(nbytes),
        "false_files_present": statistics.mean(present_false),
        "false_files_absent": statistics.mean(absent_false),
    }


def _curves() -> dict:
    """Trade-offs of one segment of 2,000 files of 200 keys, measured on the filters themselves."""
    files, keys_per_file = 2_000, 200
    hashes = hash64(pa.array(np.arange(files * keys_per_file, dtype=np.int64)))
    absent = hash64(pa.array(-np.arange(1, 20_001, dtype=np.int64)))
    curves: dict = {"slots": [], "bits": []}
    for slots in (1, 2, 3, 4, 6, 8):
        curves["slots"].append(_measured(hashes, absent, files, keys_per_file, slots, 16))
        say(f"  slots {slots}: {curves['slots'][-1]}")
    for bits in (16, 24, 32):
        curves["bits"].append(_measured(hashes, absent, files, keys_per_file, 4, bits))
        say(f"  bits {bits}: {curves['bits'][-1]}")
    return curves


def _measured(hashes, absent, files: int, keys_per_file: int, slots: int, bits: int) -> dict:
    buckets = bucket_count([keys_per_file], slots)
    tables = [build_filter(hashes[n * keys_per_file : (n + 1) * keys_per_file], buckets, bits, n) for n in range(files)]
    widths = np.array([t.shape[1] for t in tables])
    matrix = np.concatenate(tables, axis=1)  # bucket-major: (buckets, total slots)
    ends = np.cumsum(widths)
    first, fingerprint = positions(absent, buckets, bits)
    second = alternate(first, fingerprint, buckets)
    false = 0
    for start in range(0, len(absent), 500):
        part = slice(start, start + 500)
        pairs = set()  # (key, file): a file matching in both of a key's buckets is one false positive
        for rows in (matrix[first[part]], matrix[second[part]]):
            keys, slots_hit = np.nonzero(rows == fingerprint[part, None])
            hit_files = np.searchsorted(ends, slots_hit, "right")
            pairs.update(zip(keys.tolist(), hit_files.tolist(), strict=True))
        false += len(pairs)
    occupancy = keys_per_file / (buckets * widths.mean())
    return {
        "slots_target": slots,
        "bits": bits,
        "buckets": buckets,
        "slots_mean": float(widths.mean()),
        "occupancy": float(occupancy),
        "bytes_per_lookup": int(2 * ends[-1] * bits // 8),
        "bytes_per_entry": float(matrix.size * bits / 8 / (files * keys_per_file)),
        "false_per_file": false / (len(absent) * files),
        "probes": len(absent) * files,
        "formula_per_file": 2 * widths.mean() * occupancy / 2**bits,
    }


def _report(results: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "cuckoo_scale.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        f"# Seed 004's experiment: cuckoo and sorted over many partitions ({results['date']})",
        "",
        f"{results['values_per_partition']} integers per partition, warm `plan()` per lookup (the lake listed once), "
        f"half present and half absent keys; the seed measured {SEED_MS_AT_A_MILLION} ms at 10^6 partitions "
        "(laptop NVMe, ~13 MB read per lookup).",
        "",
        "| partitions | index | index MiB | warm p50 ms | reads | KiB per lookup | false files (present) | "
        "false files (absent) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["scaling"]:
        lines.append(
            f"| {row['files']:,} | {row['index']} | {row['bytes'] / 2**20:.1f} | {row['warm_p50_ms']:.2f} | "
            f"{row['reads']:.1f} | {row['bytes_per_lookup'] / 1024:,.0f} | {row['false_files_present']:.2f} | "
            f"{row['false_files_absent']:.2f} |"
        )
    lines += [
        "",
        "Trade-offs (2,000 files of 200 keys; false positives per file and absent key, measured over 40 million "
        "probes, against 2·b·load/2^f):",
        "",
        "| slots target | bits | buckets | slots per file and bucket | load | bytes per lookup | bytes per entry | "
        "false per file | formula |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["curves"]["slots"] + results["curves"]["bits"]:
        lines.append(
            f"| {row['slots_target']} | {row['bits']} | {row['buckets']} | {row['slots_mean']:.2f} | "
            f"{row['occupancy']:.2f} | {row['bytes_per_lookup']:,} | {row['bytes_per_entry']:.2f} | "
            f"{row['false_per_file']:.2e} | {row['formula_per_file']:.2e} |"
        )
    (out / "cuckoo_scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    _plot(results, out / "cuckoo_scale.png")


def _plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (scaling, slots, bits) = plt.subplots(1, 3, figsize=(15, 4.5))
    for name in INDEXES:
        rows = [r for r in results["scaling"] if r["index"] == name]
        scaling.plot([r["files"] for r in rows], [r["warm_p50_ms"] for r in rows], marker="o", label=name)
    scaling.axhline(SEED_MS_AT_A_MILLION, color="grey", linestyle=":", label="seed, 10^6 (laptop)")
    scaling.set(xscale="log", yscale="log", xlabel="partitions (files)", ylabel="warm lookup p50 (ms)")
    scaling.legend()
    rows = results["curves"]["slots"]
    slots.plot([r["slots_mean"] for r in rows], [r["bytes_per_lookup"] / 1024 for r in rows], marker="o", color="C0")
    slots.set(xlabel="slots per bucket (fewer buckets)", ylabel="KiB per lookup (2,000 files)")
    other = slots.twinx()
    other.plot([r["slots_mean"] for r in rows], [r["false_per_file"] for r in rows], marker="s", color="C3")
    other.plot([r["slots_mean"] for r in rows], [r["formula_per_file"] for r in rows], linestyle="--", color="C3")
    other.set(ylabel="false positives per file (measured; dashed: formula)")
    rows = results["curves"]["bits"]
    # None seen: the rate is below one in the probes made, drawn there as an upper bound.
    measured = [r["false_per_file"] or 1 / r["probes"] for r in rows]
    bits.plot([r["bits"] for r in rows], measured, marker="s", label="measured (0 seen: at 1/probes)")
    bits.plot([r["bits"] for r in rows], [r["formula_per_file"] for r in rows], linestyle="--", label="2·b·load/2^f")
    bits.set(yscale="log", xlabel="fingerprint bits", ylabel="false positives per file and lookup")
    bits.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
