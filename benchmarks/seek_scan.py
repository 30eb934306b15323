"""Seek or scan (issue 14): when a lookup needs k of an index file's n chunks, is it cheaper to
read the k chunks (one ranged read each: one by one, or at once as lakeseek does), or the whole
file in one read? Measured on local
storage and on an S3 API (moto in server mode, on loopback: a floor for a real object store,
whose requests take longer), for the held-out lake's ``record_id`` index files.

Run by hand (not in CI):  python benchmarks/seek_scan.py [--data DIR]

Each figure is the median of 5 reads and decodes (no decoded-entries cache; the operating
system's page cache warm), the footer already read, as a lookup finds it. Prints the
crossover share k/n per storage and writes benchmarks/results/seek_scan.{md,json}.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from lakeseek.index import open_index
from lakeseek.io import storage_for
from lakeseek.kinds.sorted_index.cost import reads_whole
from lakeseek.kinds.sorted_index.index_file import read_chunk, read_chunks, read_entries, read_footer
from measure import lake_parser, median_ms, save_results, say

SHARES = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
REPEATS = 5


def main() -> None:
    parser = lake_parser(__doc__.splitlines()[0])
    parser.set_defaults(rows=20_000_000, files=1000)
    args = parser.parse_args()
    lake = Path(args.data) / f"heldout-{args.rows}-{args.files}"
    if not lake.exists():
        raise SystemExit(f"no lake at {lake}: run benchmarks/lookups.py first")
    index = open_index(str(lake))
    column = index.root.content.indexes["record_id"]
    infos = sorted(column.files, key=lambda info: -info.size)[:2]
    index_dir = index.index_dir
    results: dict = {"index_files": [], "storages": {}}
    for info in infos:
        results["index_files"].append({"path": info.path, "bytes": info.size, "chunks": info.chunks})
    local, _ = storage_for(index_dir)
    results["storages"]["local"] = _measure(local, index_dir, infos, column.key_type)
    say(f"local: {results['storages']['local']['crossover']}")
    with _moto() as options:
        bucket = "seek-scan"
        urllib.request.urlopen(urllib.request.Request(f"{options['AWS_ENDPOINT_URL']}/{bucket}", method="PUT"))
        remote, root = storage_for(f"s3://{bucket}/index", options)
        for info in infos:
            remote.write(f"{root}/{info.path}", Path(f"{index_dir}/{info.path}").read_bytes())
        results["storages"]["s3 (moto, loopback)"] = _measure(remote, root, infos, column.key_type)
        say(f"s3: {results['storages']['s3 (moto, loopback)']['crossover']}")
    save_results(args.out, "seek_scan", results, _markdown(results))


def _measure(storage, index_dir: str, infos, key_type) -> dict:
    rows = []
    crossovers = []
    for info in infos:
        found = _measure_file(storage, f"{index_dir}/{info.path}", info, key_type)
        rows += found
        # The smallest share from which one whole read is no slower than reading the chunks.
        cheaper = [row["share"] for row in found if row["scan_ms"] <= row["seek_ms"]]
        crossovers.append(min(cheaper) if cheaper else None)
    return {"rows": rows, "crossover": crossovers}


def _measure_file(storage, path: str, info, key_type) -> list[dict]:
    footer = read_footer(storage, path, info, key_type, False)
    whole = median_ms(lambda: read_entries(storage, path, info, key_type), REPEATS)
    rows = []
    for share in SHARES:
        count = max(1, round(share * info.chunks))
        chunks = [round(i * info.chunks / count) for i in range(count)]
        one_by_one = median_ms(lambda chunks=chunks: [read_chunk(storage, path, footer, c) for c in chunks], REPEATS)
        seek = median_ms(lambda chunks=chunks: read_chunks(storage, path, footer, chunks), REPEATS)
        rows.append(
            {
                "file": info.path,
                "share": share,
                "chunks": count,
                "one_by_one_ms": one_by_one,
                "seek_ms": seek,
                "scan_ms": whole,
                "lakeseek_reads_whole": reads_whole(info, count),
            }
        )
    return rows


class _moto:
    """The S3 API of moto in server mode on a free loopback port, for the duration of a block."""

    def __enter__(self) -> dict[str, str]:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.process.kill()
                    raise
                time.sleep(0.1)
        return {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        }

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(10)


def _markdown(results: dict) -> str:
    lines = ["# Seek or scan: k chunks of an index file, or the whole file in one read", ""]
    for file in results["index_files"]:
        lines.append(f"- `{file['path']}`: {file['bytes'] / 2**20:.1f} MiB, {file['chunks']} chunks")
    for storage, found in results["storages"].items():
        lines += ["", f"## {storage}", ""]
        lines.append("| share | chunks | k reads one by one | k reads at once | whole file | lakeseek reads |")
        lines.append("|---:|---:|---:|---:|---:|---|")
        for row in found["rows"]:
            seek, scan, alone = row["seek_ms"], row["scan_ms"], row["one_by_one_ms"]
            chosen = "whole" if row["lakeseek_reads_whole"] else "the chunks"
            lines.append(
                f"| {row['share']:.2f} | {row['chunks']} | {alone:.1f} ms | {seek:.1f} ms | {scan:.1f} ms | {chosen} |"
            )
        lines += ["", f"The whole read is no slower than the chunks at once from a share of: {found['crossover']}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
