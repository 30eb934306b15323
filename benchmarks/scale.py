"""Scale benchmark: opening an index and looking keys up as the lake grows to a million files.

Run by hand (not in CI):  python benchmarks/scale.py [--sizes 1000 10000 100000 1000000]

For each size N it makes a Delta table whose log adds N data files (the files themselves are
not written: ``files()`` names them without reading them) and an index of its ``id`` column
written as lakeseek writes one (``KEYS_PER_FILE`` ids per file, N lineage entries in a
manifest), then measures in a fresh process state:

- open: ``open_index`` (the source's detection, the root) and the first lookup after it
  (cold: the lineage manifest, then an index file's footer and chunk); the two together are
  the time from nothing to the first answer;
- warm ``files()`` latency (p50, p95) of lookups of random ids on the opened index, each
  checking the table's version first, with the storage reads per lookup;
- the memory the opened index holds (Python allocations while opening and first looking up).

Prints a table and writes benchmarks/results/scale.{json,md}.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa

import lakeseek
from lakeseek.caches import clear_cache
from lakeseek.format.hashing import hash64, smallest_hashes
from lakeseek.format.root import ACTIVE, LineageSet, Root
from lakeseek.io import counting
from lakeseek.kinds.cuckoo.build import Filters, write_segment
from lakeseek.kinds.cuckoo.content import CuckooConfig, CuckooIndex
from lakeseek.kinds.cuckoo.filters import bucket_count, build_filter
from lakeseek.kinds.sorted_index.build import index_file_prefix
from lakeseek.kinds.sorted_index.content import ColumnIndex, IndexConfig, Segment, SortedIndex
from lakeseek.kinds.sorted_index.index_file import IndexFileInfo, write_index_file
from lakeseek.location import locate
from lakeseek.operations.protocol import lake_snapshot, numbered, operation
from lakeseek.sources.base import LakeSchema
from measure import HERE, say

KEYS_PER_FILE = 4
ENTRIES_PER_INDEX_FILE = 4_000_000
CHUNK_ROWS = 32_768
SCHEMA = pa.schema([pa.field("id", pa.int64())])


def delta_table(root: Path, files: int) -> None:
    """A Delta table whose one commit adds ``files`` data files (not written)."""
    log = root / "_delta_log"
    log.mkdir(parents=True)
    now = int(time.time() * 1000)
    field = {"name": "id", "type": "long", "nullable": True, "metadata": {}}
    schema = json.dumps({"type": "struct", "fields": [field]})
    lines = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "00000000-0000-0000-0000-000000000000",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": schema,
                "partitionColumns": [],
                "configuration": {},
                "createdTime": now,
            }
        },
    ]
    with open(log / f"{0:020d}.json", "w") as out:
        for line in lines:
            out.write(json.dumps(line) + "\n")
        for number in range(files):
            add = {"path": f"part-{number:07d}.parquet", "size": 2000 + number % 997, "partitionValues": {}}
            out.write(json.dumps({"add": add | {"modificationTime": now, "dataChange": True}}) + "\n")


def synthesize_index(
    table: str, keys_per_file: int = KEYS_PER_FILE, name: str | None = None, kind: str = "sorted", bits: int = 16
) -> None:
    """The index of ``id`` that a build of the table would write, file ``i`` holding the ids
    ``i * keys_per_file ...``: written with lakeseek's own writers and committed as version 0.
    ``kind`` "cuckoo" writes one cuckoo segment of ``bits``-bit fingerprints instead."""
    location = locate(table, name=name, existing=False)
    snapshot = lake_snapshot(location)
    lineage = numbered(snapshot.files, first_id=0)
    with operation(location, "create") as op:
        count = len(lineage)
        if kind == "cuckoo":
            content = _cuckoo_content(location, op.files, count, keys_per_file, bits)
        else:
            content = _sorted_content(location, op.files, count, keys_per_file)
        lake_schema = LakeSchema.of(SCHEMA)
        root = Root(
            version=0,
            operation="create",
            timestamp_ms=int(time.time() * 1000),
            state=ACTIVE,
            data_version=0,
            schema=lake_schema.schema,
            spark_schema=lake_schema.spark_schema,
            partition_columns=(),
            lineage=LineageSet((op.lineage_part(lineage, 0),), frozenset(), count),
            kind=kind,
            content=content,
            source_version=snapshot.version,
            source_format=location.source.name,
        )
        op.commit_first(root)


def _sorted_content(location, files, count: int, keys_per_file: int) -> SortedIndex:
    infos = []
    for first in range(0, count * keys_per_file, ENTRIES_PER_INDEX_FILE):
        keys = pa.array(range(first, min(first + ENTRIES_PER_INDEX_FILE, count * keys_per_file)), pa.int64())
        ids = pa.compute.divide(keys, keys_per_file).cast(pa.int32())
        entries = pa.table({"key": keys, "file_id": ids})
        data, info = write_index_file(entries.to_batches(max_chunksize=CHUNK_ROWS), pa.int64(), CHUNK_ROWS)
        path = f"{index_file_prefix(files.data_dir, 0)}-{len(infos):05d}.parquet"
        location.storage.write(f"{location.index_dir}/{path}", data)
        infos.append(IndexFileInfo.from_json({"path": path, **info}, pa.int64()))
    return SortedIndex(
        IndexConfig(CHUNK_ROWS, ENTRIES_PER_INDEX_FILE),
        {"id": ColumnIndex("id", pa.int64(), (Segment(tuple(infos)),))},
    )


def _cuckoo_content(location, files, count: int, keys_per_file: int, bits: int) -> CuckooIndex:
    """Seed 004's layout: three slots per bucket for a file's keys (the seed's ~3 slots)."""
    slots = 3
    buckets = bucket_count([keys_per_file], slots)
    hashes = hash64(pa.array(np.arange(count * keys_per_file, dtype=np.int64)))
    tables = []
    for number in range(count):
        own = hashes[number * keys_per_file : (number + 1) * keys_per_file]
        tables.append(build_filter(own, buckets, bits, number))
        if number % 100_000 == 99_999:
            say(f"  {number + 1:,} cuckoo filters built")
    filters = Filters(
        np.arange(count, dtype=np.int32),
        np.array([t.shape[1] for t in tables], np.int32),
        np.zeros(count, bool),
        np.full(count, keys_per_file, np.int64),
        tables,
    )
    segment = write_segment(location.storage, files, "id", filters, buckets, bits, smallest_hashes([hashes]))
    return CuckooIndex(CuckooConfig(bits, slots), {"id": pa.int64()}, (segment,))


def measure(table: str, files: int, lookups: int) -> dict:
    rng = random.Random(files)
    clear_cache()
    started = time.perf_counter()
    index = lakeseek.open_index(table)
    opened = time.perf_counter() - started
    with counting() as cold_io:
        started = time.perf_counter()
        first = index.files(f"id = {rng.randrange(files * KEYS_PER_FILE)}")
        cold = time.perf_counter() - started
    assert len(first) == 1, first
    times, reads, lists = [], [], []
    for _ in range(lookups):
        key = rng.randrange(files * KEYS_PER_FILE)
        with counting() as io:
            started = time.perf_counter()
            found = index.files(f"id = {key}")
            times.append(time.perf_counter() - started)
        assert found == [f"{table}/part-{key // KEYS_PER_FILE:07d}.parquet"], (key, found)
        reads.append(io.reads)
        lists.append(io.lists)
    times.sort()
    return {
        "files": files,
        "open_ms": opened * 1000,
        "cold_files_ms": cold * 1000,
        "cold_reads": cold_io.reads,
        "cold_bytes": cold_io.bytes_read,
        "warm_p50_ms": statistics.median(times) * 1000,
        "warm_p95_ms": times[int(len(times) * 0.95)] * 1000,
        "warm_reads": statistics.mean(reads),
        "warm_lists": statistics.mean(lists),
        "held_mib": held_memory(table) / 2**20,
    }


def held_memory(table: str) -> int:
    """The bytes Python allocated for an opened index that answered one lookup (measured apart:
    tracing allocations slows them)."""
    clear_cache()
    gc.collect()
    tracemalloc.start()
    index = lakeseek.open_index(table)
    index.files("id = 1")
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--lookups", type=int, default=300)
    parser.add_argument("--data", default=str(HERE / "data"), help="where the tables go (git-ignored)")
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args()

    rows = []
    for files in args.sizes:
        table = Path(args.data) / f"scale-{files}"
        if not (table / "_lakeseek").exists():
            say(f"synthesizing a Delta table of {files:,} files and its index at {table}")
            if table.exists():
                raise SystemExit(f"{table} exists without an index: remove it")
            delta_table(table, files)
            synthesize_index(str(table))
        rows.append(measure(str(table), files, args.lookups))
        say(json.dumps(rows[-1]))

    base = rows[0]
    lines = [
        f"# Scale: a Delta table of N files, index of `id` ({KEYS_PER_FILE} ids per file)",
        "",
        f"{os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}; "
        "warm lookups check the table's version (one listing of `_delta_log/`) before each lookup.",
        "",
        "| files | open ms | first files() ms (reads, bytes) | warm p50 ms | warm p95 ms | warm reads | warm/base "
        "| held MiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['files']:,} | {row['open_ms']:.1f} | {row['cold_files_ms']:.1f} ({row['cold_reads']}, "
            f"{row['cold_bytes']:,}) | {row['warm_p50_ms']:.3f} | {row['warm_p95_ms']:.3f} | "
            f"{row['warm_reads']:.2f} | {row['warm_p50_ms'] / base['warm_p50_ms']:.2f}x | {row['held_mib']:.1f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.md").write_text(text)
    (out / "scale.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
