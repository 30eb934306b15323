"""kill -9 at random moments, and several writers at once: answers stay exact, nothing is lost."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

import lakeseek
from lakeseek.exceptions import IndexNotFoundError
from tests.lakes import data_files
from tests.lifecycle import LakeChanger, assert_exact

pytestmark = pytest.mark.spark
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.worker", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ready(process: subprocess.Popen) -> subprocess.Popen:
    assert process.stdout.readline().strip() == "ready"
    return process


def _start(*args: str) -> subprocess.Popen:
    return _ready(_spawn(*args))


def _kill_after(process: subprocess.Popen, delay: float) -> bool:
    """SIGKILL the process after ``delay`` seconds; whether it was still running."""
    time.sleep(delay)
    alive = process.poll() is None
    if alive:
        os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    return alive


def _assert_recovers(lake: str, rng: random.Random) -> None:
    """After a crash: status works, queries are exact, the next refresh works, vacuum clears debris."""
    lakeseek.open_index(lake).status()
    assert_exact(lake, rng)
    refreshed = lakeseek.refresh_index(lake, "incremental", engine="local")
    assert refreshed.lake_state().is_fresh
    assert_exact(lake, rng)
    lakeseek.vacuum_index(lake, retention_hours=0)
    index = lakeseek.open_index(lake)
    index_dir = f"{lake}/_lakeseek/default"
    on_disk = {os.path.relpath(os.path.join(d, n), index_dir) for d, _, names in os.walk(index_dir) for n in names}
    assert on_disk == index.root.referenced_paths() | {f"log/{index.version:020d}.json"}


def test_kill_9_during_refresh_and_optimize(lake_copy):
    outcomes = {"killed": 0, "finished": 0}
    rng = random.Random(0)
    operations = ["refresh-incremental", "refresh-full", "refresh-quick", "optimize-quick", "optimize-full"]
    changer = LakeChanger(lake_copy, rng)
    for _ in range(3):  # deltas for the optimizes to work on
        changer.append()
        lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    for round_number in range(15):
        for _ in range(rng.randrange(2, 12)):
            changer.random_change()
        operation = operations[round_number % len(operations)]
        version = lakeseek.open_index(lake_copy).version
        process = _start(operation, lake_copy)
        killed = _kill_after(process, rng.uniform(0.0, 0.25))
        outcomes["killed" if killed else "finished"] += 1
        after = lakeseek.open_index(lake_copy).version
        assert after in (version, version + 1), operation
        assert_exact(lake_copy, rng)
        if round_number % 5 == 4:
            _assert_recovers(lake_copy, rng)
            for _ in range(2):
                changer.append()
                lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    assert outcomes["killed"] >= 5, outcomes


@pytest.mark.parametrize("delay", [2.0, 6.0])
def test_kill_9_during_create(typed_lake, tmp_path, delay):
    lake = str(tmp_path / "lake")
    shutil.copytree(typed_lake, lake, ignore=shutil.ignore_patterns("_lakeseek"))
    process = _start("create", lake)
    _kill_after(process, delay)
    try:
        lakeseek.open_index(lake)
    except IndexNotFoundError:  # killed before the commit: creating again must work
        assert _start("create", lake).wait(timeout=300) == 0
    _assert_recovers(lake, random.Random(1))


def test_concurrent_writers(lake_copy):
    rng = random.Random(2)
    original = lakeseek.open_index(lake_copy)
    stable = data_files(lake_copy)  # writers only append: these rows never change
    workers = [_spawn("concurrent", lake_copy, str(seed), "8") for seed in range(3)]
    workers = [_ready(w) for w in workers]  # started together, so that they race
    checks = 0
    while any(w.poll() is None for w in workers):
        index = lakeseek.open_index(lake_copy)
        for row_id in rng.sample(range(1800), 3):  # ids of the original files
            assert index.read(f"id = {row_id}").num_rows == 1
        checks += 1
    logs = [w.stdout.read() for w in workers]
    errors = [w.stderr.read() for w in workers]
    assert all(w.returncode == 0 for w in workers), [e[-3000:] for e in errors]
    assert not any("Traceback" in text for text in errors), errors
    assert sum(line.endswith("ok") for log in logs for line in log.splitlines()) >= 12, logs
    races = sum(text.count("lost the race") for text in errors)
    assert races > 0, "the writers never raced: the test proves nothing"
    final = lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    lineage = final.lineage()
    assert len(set(lineage.paths)) == len(lineage.paths) == len(data_files(lake_copy)) == len(stable) + 24
    assert final.version > original.version and checks > 0
    assert_exact(lake_copy, rng)
