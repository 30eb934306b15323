"""Timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from lakeseek.io.storage import IOStats
from lakeseek.sample import generate_lake

HERE = Path(__file__).resolve().parent
COLUMNS = ["record_id", "event_id"]


def lake_parser(description: str) -> argparse.ArgumentParser:
    """The options every benchmark takes: the lake's shape and where data and results go."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--data", default=str(HERE / "data"), help="where lakes are generated (git-ignored)")
    parser.add_argument("--out", default=str(HERE / "results"))
    return parser


def benchmark_lake(data: Path, rows: int, files: int, days: int) -> Path:
    """The sample lake of this shape, generated on first use."""
    lake = data / f"lake-{rows}-{files}"
    marker = lake / "_GENERATED"
    if not marker.exists():
        shutil.rmtree(lake, ignore_errors=True)
        say(f"generating {rows:,} rows in {files} files at {lake}")
        generate_lake(str(lake), rows=rows, files=files, days=days)
        marker.write_text("ok")
    return lake


def median_ms(action: Callable[[], object], repeats: int) -> float:
    """Median milliseconds of ``action()`` over ``repeats`` runs, after one to warm it."""
    action()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def save_results(out: str, name: str, results: dict, markdown: str) -> None:
    """``results`` as ``OUT/NAME.json`` and ``markdown`` as ``OUT/NAME.md``, the markdown printed."""
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (directory / f"{name}.md").write_text(markdown)
    print(markdown)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def timed(wheres: list[str], action: Callable[[str], int]) -> dict:
    """Median and max milliseconds of ``action(where)`` (which returns a row count) per predicate."""
    times, rows = [], []
    for where in wheres:
        started = time.perf_counter()
        rows.append(action(where))
        times.append(time.perf_counter() - started)
    return {"p50_ms": statistics.median(times) * 1000, "max_ms": max(times) * 1000, "rows": rows}


def timed_lookups(
    values: Iterable, lookup: Callable[[object], object], stats: IOStats
) -> tuple[list[float], list[int]]:
    """Seconds and storage reads of ``lookup(value)`` for each value."""
    times, reads = [], []
    for value in values:
        before = stats.snapshot()["reads"]
        started = time.perf_counter()
        lookup(value)
        times.append(time.perf_counter() - started)
        reads.append(stats.snapshot()["reads"] - before)
    return times, reads
