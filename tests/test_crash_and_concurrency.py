"""kill -9 at random moments, and several writers at once: answers stay exact, nothing is lost."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pyarrow.fs as pafs
import pytest

import lakeseek
from lakeseek.exceptions import IndexNotFoundError
from lakeseek.operations.names import is_temporary
from tests.lakes import data_files, object_store_filesystem
from tests.lifecycle import LakeChanger, assert_exact

pytestmark = pytest.mark.spark
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _spawn(*args: str, storage_options: dict | None = None) -> subprocess.Popen:
    """A worker process (tests/worker.py), on a lake in an object store with ``storage_options``."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.worker", *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LAKESEEK_TEST_STORAGE_OPTIONS": json.dumps(storage_options)},
    )


def _ready(process: subprocess.Popen) -> subprocess.Popen:
    assert process.stdout.readline().strip() == "ready"
    return process


def _racing(lake: str, iterations: int, storage_options: dict | None = None) -> list[subprocess.Popen]:
    """Three ``concurrent`` workers, let go together once all have started, so that they race."""
    workers = [
        _spawn("concurrent", lake, str(seed), str(iterations), storage_options=storage_options) for seed in range(3)
    ]
    for worker in [_ready(w) for w in workers]:
        worker.stdin.write("go\n")
        worker.stdin.flush()
    return workers


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
    # A kill during an atomic write (a lease's, a log entry's) leaves its temporary file, which
    # vacuum keeps for an hour: it cannot tell it from a write under way.
    on_disk = {path for path in on_disk if not is_temporary(path)}
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
    workers = _racing(lake_copy, 8)
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
    assert sum(" ok " in line for log in logs for line in log.splitlines()) >= 12, logs
    races = sum(text.count("lost the race") for text in errors)
    assert races > 0, "the writers never raced: the test proves nothing"
    final = lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    lineage = final.lineage()
    assert len(set(lineage.paths)) == len(lineage.paths) == len(data_files(lake_copy)) == len(stable) + 24
    assert final.version > original.version and checks > 0
    assert_exact(lake_copy, rng)


# -- the same on S3 (moto on loopback): conditional PUTs are the only commit primitive --------------
@pytest.fixture
def s3_lake(s3_server, typed_lake, tmp_path):
    """A copy of the typed lake in a fresh S3 bucket, indexed there: (uri, storage options, fs)."""
    from tests.conftest import Bucket

    bucket = Bucket(s3_server, f"b{uuid.uuid4().hex[:12]}")
    local = str(tmp_path / "lake")
    shutil.copytree(typed_lake, local, ignore=shutil.ignore_patterns("_lakeseek"))
    uri = bucket.upload(local, "lake")
    lakeseek.create_index(uri, ["id", "name", "code"], engine="local", chunk_rows=64, storage_options=bucket.options)
    return uri, bucket.options, object_store_filesystem(bucket.options)


def test_concurrent_writers_on_s3_lose_and_duplicate_no_commit(s3_lake):
    uri, options, fs = s3_lake
    rng = random.Random(3)
    stable = data_files(uri, fs)
    workers = _racing(uri, 6, storage_options=options)
    while any(w.poll() is None for w in workers):
        index = lakeseek.open_index(uri, storage_options=options)
        for row_id in rng.sample(range(1800), 2):  # ids of the original files
            assert index.read(f"id = {row_id}").num_rows == 1
    logs = [w.stdout.read() for w in workers]
    errors = [w.stderr.read() for w in workers]
    assert all(w.returncode == 0 for w in workers), [e[-3000:] for e in errors]
    assert not any("Traceback" in text for text in errors), errors
    assert sum(text.count("lost the race") for text in errors) > 0, "the writers never raced: the test proves nothing"
    history = {e.version: e for e in lakeseek.open_index(uri, storage_options=options).history()}
    assert sorted(history) == list(range(len(history)))  # every version once, none missing
    reported = [line.split() for log in logs for line in log.splitlines() if " ok " in line]
    assert len(reported) >= 9, logs
    for _, _, version, *operation, timestamp in reported:  # what each writer saw committed is in the log
        entry = history[int(version)]
        assert (entry.operation, entry.timestamp_ms) == (" ".join(operation), int(timestamp))
    final = lakeseek.refresh_index(uri, "incremental", engine="local", storage_options=options)
    lineage = final.lineage()
    assert len(set(lineage.paths)) == len(lineage.paths) == len(data_files(uri, fs)) == len(stable) + 18
    assert_exact(uri, rng, fs=fs, storage_options=options)


def test_kill_9_on_s3_leaves_an_exact_index(s3_lake):
    uri, options, fs = s3_lake
    rng = random.Random(4)
    changer = LakeChanger(uri, rng, fs=fs)
    operations = ["refresh-incremental", "refresh-full", "refresh-quick", "optimize-quick", "optimize-full"]
    killed = 0
    for round_number in range(10):
        for _ in range(rng.randrange(1, 4)):
            changer.random_change()
        version = lakeseek.open_index(uri, storage_options=options).version
        process = _ready(_spawn(operations[round_number % len(operations)], uri, storage_options=options))
        killed += _kill_after(process, rng.uniform(0.0, 0.3))
        assert lakeseek.open_index(uri, storage_options=options).version in (version, version + 1)
        assert_exact(uri, rng, fs=fs, storage_options=options)
    assert killed >= 4
    refreshed = lakeseek.refresh_index(uri, "incremental", engine="local", storage_options=options)
    assert refreshed.lake_state().is_fresh
    lakeseek.vacuum_index(uri, retention_hours=0, storage_options=options)
    index = lakeseek.open_index(uri, storage_options=options)
    index_dir = f"{uri.partition('://')[2]}/_lakeseek/default"
    left = {
        info.path[len(index_dir) + 1 :]
        for info in fs.get_file_info(pafs.FileSelector(index_dir, recursive=True))
        if info.type == pafs.FileType.File
    }
    assert left == index.root.referenced_paths() | {f"log/{index.version:020d}.json"}
    assert_exact(uri, rng, fs=fs, storage_options=options)
