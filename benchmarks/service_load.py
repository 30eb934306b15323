"""A bounded load on ``lakeseek serve`` over loopback, with the lake and its index changing in
the middle, every checked answer compared with the truth.

Run by hand (not in CI):  python benchmarks/service_load.py [--seconds 20 --connections 8]
(needs `wrk`, from Debian's package of that name; the lake of benchmarks/lookups.py is made
first by that script).

The server (``--workers`` processes) serves a copy of the held-out-shaped lake. `wrk` sends
``files`` requests for random needles for ``--seconds`` seconds over ``--connections``
connections (loopback only). Meanwhile a checker asks for the rows of known needles and the
files of ids a new data file brings, and halfway the lake gains that file, then its index is
refreshed (incrementally, in this process, as another writer would): the checker counts any
answer that is not the full scan's at its time. Prints the numbers and writes them to
benchmarks/results/service_load.{md,json}.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import lakeseek
from measure import lake_parser, save_results, say

# ruff: noqa: E501  (markdown table rows)


def main() -> None:
    parser = lake_parser(__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20, help="how long wrk sends requests")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.set_defaults(rows=20_000_000, files=1000)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("service_load needs wrk on the PATH (Debian: apt install wrk)")
    source = Path(args.data) / f"heldout-{args.rows}-{args.files}"
    if not (source / "_lakeseek").exists():
        raise SystemExit(f"no indexed lake at {source}: run benchmarks/lookups.py first")
    with tempfile.TemporaryDirectory(dir=args.data) as scratch:
        lake = Path(scratch) / "lake"
        say(f"copying {source}'s data files to {lake}, and indexing the copy")
        # A copy is new files to an index (stamps name inodes): the copy gets its own index.
        shutil.copytree(source.resolve(), lake, ignore=shutil.ignore_patterns("_lakeseek"))
        lakeseek.create_index(str(lake), ["record_id", "event_id"])
        results = _run(lake, args)
    save_results(args.out, "service_load", results, _markdown(results))


def _run(lake: Path, args) -> dict:
    rng = random.Random(3)
    files = sorted(p for p in lake.rglob("*.parquet") if "_lakeseek" not in p.parts)
    needles = []
    for path in rng.sample(files, 200):
        column = pq.read_table(path, columns=["record_id"]).column(0)
        needles.append(column[rng.randrange(len(column))].as_py())
    truth = {value: _rows_of(lake, value) for value in needles[:20]}
    ids_file = lake.parent / "ids.txt"
    ids_file.write_text("\n".join(str(v) for v in needles))
    script = lake.parent / "files.lua"
    script.write_text(_LUA.replace("IDS", str(ids_file)))
    port = _free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "lakeseek"), "serve", "--lake", f"events={lake}", "--port", str(port),
         "--workers", str(args.workers), "--cache-mb", "1024"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(base)
        for value in needles:  # every worker warm: the needles' chunks decoded
            for _ in range(args.workers * 2):
                _get(base, value)
        fresh = list(range(9_000_000_000_001, 9_000_000_000_101))
        checker = _Checker(base, truth, fresh)
        changer = threading.Thread(target=_change_halfway, args=(lake, fresh, args.seconds / 2, checker))
        threads = [threading.Thread(target=checker.run), changer]
        for thread in threads:
            thread.start()
        output = subprocess.run(
            ["wrk", "-t1", f"-c{args.connections}", f"-d{args.seconds}s", "--latency", "-s", str(script), base],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        checker.stop.set()
        for thread in threads:
            thread.join()
    finally:
        server.terminate()
        server.wait(30)
    say(output)
    return {
        "workers": args.workers,
        "connections": args.connections,
        "seconds": args.seconds,
        "requests_per_second": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
        "requests": int(re.search(r"(\d+) requests in", output).group(1)),
        "latency_ms": {p: _ms(re.search(rf"\s{p}%\s+([\d.]+\w+)", output).group(1)) for p in ("50", "90", "99")},
        "errors": "Non-2xx" in output or "Socket errors" in output,
        "checked_answers": checker.checked,
        "wrong_answers": len(checker.wrong),
        "wrong_examples": checker.wrong[:5],
        "changed_at_s": checker.changed_at,
        "refreshed_at_s": checker.refreshed_at,
    }


_LUA = """
local ids = {}
for line in io.lines("IDS") do ids[#ids + 1] = line end
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", "/v1/lakes/events/files?where=record_id%20%3D%20" .. ids[(i % #ids) + 1])
end
"""


def _rows_of(lake: Path, value: int) -> list[int]:
    return sorted(lakeseek.open_index(str(lake)).scan(f"record_id = {value}").column("record_id").to_pylist())


class _Checker:
    """Asks for the rows of known needles and the files of the new file's ids, and keeps the
    answers that differ from the truth at their time."""

    def __init__(self, base: str, truth: dict[int, list[int]], fresh: list[int]) -> None:
        self.base, self.truth, self.fresh = base, truth, fresh
        self.stop = threading.Event()
        self.appended = threading.Event()
        self.wrong: list[str] = []
        self.checked = 0
        self.started = time.monotonic()
        self.changed_at: float | None = None
        self.refreshed_at: float | None = None

    def run(self) -> None:
        rng = random.Random(9)
        while not self.stop.is_set():
            value = rng.choice(list(self.truth))
            body = _post(self.base, "rows", {"where": f"record_id = {value}", "columns": ["record_id"]})
            got = sorted(json.loads(line)["record_id"] for line in body.decode().splitlines())
            if got != self.truth[value]:
                self.wrong.append(f"record_id = {value}: {got}")
            appended = self.appended.is_set()
            new_id = rng.choice(self.fresh)
            body = _post(self.base, "rows", {"where": f"record_id = {new_id}", "columns": ["record_id"]})
            got = [json.loads(line)["record_id"] for line in body.decode().splitlines()]
            if appended and got != [new_id]:
                self.wrong.append(f"record_id = {new_id} after the append: {got}")
            self.checked += 2
            time.sleep(0.01)


def _change_halfway(lake: Path, fresh: list[int], after: float, checker: _Checker) -> None:
    time.sleep(after)
    index = lakeseek.open_index(str(lake))
    template = index.read(f"record_id = {next(iter(checker.truth))}")  # the lake's own types
    data = template.drop_columns(["date"]).take([0] * len(fresh))
    data = data.set_column(data.schema.get_field_index("record_id"), "record_id", pa.array(fresh, pa.int64()))
    day = template.column("date")[0].as_py()
    hidden = lake / f"date={day}" / ".part-99999-appended.snappy.parquet.tmp"  # renamed when whole
    pq.write_table(data, hidden)
    os.replace(hidden, hidden.parent / "part-99999-appended.snappy.parquet")
    checker.appended.set()
    checker.changed_at = time.monotonic() - checker.started
    lakeseek.refresh_index(str(lake), "incremental", engine="local")
    checker.refreshed_at = time.monotonic() - checker.started


def _get(base: str, value: int) -> bytes:
    query = urllib.parse.urlencode({"where": f"record_id = {value}"})
    with urllib.request.urlopen(f"{base}/v1/lakes/events/files?{query}", timeout=30) as response:
        return response.read()


def _post(base: str, endpoint: str, body: dict) -> bytes:
    request = urllib.request.Request(
        f"{base}/v1/lakes/events/{endpoint}", data=json.dumps(body).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read()


def _wait(base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server did not answer within 60 s")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ms(text: str) -> float:
    number = float(re.match(r"[\d.]+", text).group(0))
    return number * {"us": 0.001, "ms": 1.0, "s": 1000.0}[re.search(r"[a-z]+$", text).group(0)]


def _markdown(results: dict) -> str:
    latency = results["latency_ms"]
    return (
        "\n".join(
            [
                f"# lakeseek serve under load: {results['workers']} workers, {results['connections']} connections, {results['seconds']} s (wrk, loopback)",
                "",
                "| files requests/s | p50 | p90 | p99 | requests | answers checked | wrong answers |",
                "|---:|---:|---:|---:|---:|---:|---:|",
                f"| **{results['requests_per_second']:,.0f}** | {latency['50']:.2f} ms | {latency['90']:.2f} ms | **{latency['99']:.2f} ms** | "
                f"{results['requests']:,} | {results['checked_answers']:,} | **{results['wrong_answers']}** |",
                "",
                f"The lake gained a data file at {results['changed_at_s']:.1f} s and its index was refreshed by "
                f"{results['refreshed_at_s']:.1f} s; the checker's answers were the full scan's throughout"
                + ("." if not results["wrong_answers"] else f" except: {results['wrong_examples']}."),
            ]
        )
        + "\n"
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
