"""Generated writer histories run while queries read: every answer is a state the lake was in.

Hypothesis draws a history of lake changes (files added to partition directories old and new,
replaced by a rename, removed; incremental refreshes of the indexes) that a writer thread
plays with short pauses, while the test's thread asks needles through every path a handle
has: a fresh ``open_index`` per query, one handle kept through the history, ``locate``,
``open_indexes``, and a covering index that answers from its own rows. The writer counts the
changes it has begun and finished; an answer must equal the lake's state after one of the
changes between those finished when the query began and those begun when it ended (a torn
answer, say a replaced file's new rows without a file added before it, is no state), or be
``DataFileChangedError``, the error to run the query again. Files are written under hidden
names and renamed into place, as Spark's committers and table writers do: a file being
written in place is not a state.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import lakeseek

FUZZ_EXAMPLES = os.environ.get("LAKESEEK_FUZZ_EXAMPLES")
KEYS = range(4)
PARTITIONS = ["d=0", "d=1", "d=2"]  # d=2 holds no file before the history

keys = st.lists(st.sampled_from(KEYS), min_size=1, max_size=4)
changes = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(PARTITIONS), keys),
    st.tuples(st.just("replace"), st.integers(0, 50), keys),
    st.tuples(st.just("remove"), st.integers(0, 50)),
    st.tuples(st.just("refresh")),
)
histories = st.lists(st.tuples(changes, st.sampled_from([0.0, 0.0005, 0.002])), min_size=5, max_size=25)


def _table(keys: list[int], write: int, partition: str | None = None) -> pa.Table:
    columns = {"k": pa.array(keys, pa.int64()), "v": pa.array([write] * len(keys), pa.int64())}
    if partition is not None:
        columns["d"] = pa.array([partition] * len(keys))
    return pa.table(columns)


class DirectoryLake:
    """A hive-partitioned directory, each row ``(k, v)`` with ``v`` naming the write that made it."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.files: dict[str, list[int]] = {}
        self.writes = 0

    def write(self, path: str, keys: list[int]) -> None:
        self.writes += 1
        os.makedirs(os.path.dirname(path), exist_ok=True)
        hidden = os.path.join(os.path.dirname(path), f".writing-{self.writes}")
        pq.write_table(_table(keys, self.writes), hidden)
        os.replace(hidden, path)
        self.files[path] = keys

    def change(self, change: tuple) -> None:
        kind, *what = change
        present = sorted(self.files)
        if kind == "add":
            partition, keys = what
            self.write(os.path.join(self.root, partition, f"part-{self.writes}.parquet"), keys)
        elif kind == "replace":
            number, keys = what
            self.write(present[number % len(present)], keys)
        elif kind == "remove" and len(present) > 1:
            path = present[what[0] % len(present)]
            os.remove(path)
            del self.files[path]
        elif kind == "refresh":
            _refresh(self.root)

    def files_holding(self) -> dict[str, pa.Table]:
        return {path: pq.read_table(path) for path in self.files}


class DeltaLake:
    """A Delta table partitioned by ``d``, changed by delta-rs: appends, partition overwrites and deletes."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.writes = 0

    def change(self, change: tuple) -> None:
        kind, *what = change
        if kind == "add":
            partition, keys = what
            self.writes += 1
            deltalake.write_deltalake(
                self.root, _table(keys, self.writes, partition[-1]), mode="append", partition_by=["d"]
            )
        elif kind == "replace":
            number, keys = what
            partition = PARTITIONS[number % len(PARTITIONS)][-1]
            self.writes += 1
            deltalake.write_deltalake(
                self.root, _table(keys, self.writes, partition), mode="overwrite", predicate=f"d = '{partition}'"
            )
        elif kind == "remove":
            deltalake.DeltaTable(self.root).delete(f"v = {what[0] % (self.writes + 1)}")
        elif kind == "refresh":
            _refresh(self.root)

    def files_holding(self) -> dict[str, pa.Table]:
        paths = deltalake.DeltaTable(self.root).file_uris()
        return {
            os.path.normpath(path.removeprefix("file://")): pq.read_table(path.removeprefix("file://"))
            for path in paths
        }


def _refresh(root: str) -> None:
    for name in ("sorted", "covering"):
        lakeseek.refresh_index(root, "incremental", name=name, engine="local")


def _state(lake) -> dict[int, tuple[Counter, frozenset]]:
    """Per key, the rows ``(k, v)`` a query for it returns and the files ``locate`` pairs it with."""
    held = {path: _rows(table) for path, table in lake.files_holding().items()}
    answers = {}
    for key in KEYS:
        rows = Counter({row: count for rows in held.values() for row, count in rows.items() if row[0] == key})
        answers[key] = (rows, frozenset(path for path, rows in held.items() if any(k == key for k, _ in rows)))
    return answers


def _rows(table: pa.Table) -> Counter:
    return Counter(zip(table.column("k").to_pylist(), table.column("v").to_pylist(), strict=True))


def _located(table: pa.Table) -> frozenset:
    return frozenset(os.path.normpath(path.removeprefix("file://")) for path in table.column("file").to_pylist())


examples = settings(
    max_examples=int(FUZZ_EXAMPLES or 8),
    deadline=None,
    derandomize=FUZZ_EXAMPLES is None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@examples
@given(history=histories, seed=st.integers(0, 2**32 - 1))
def test_every_answer_while_a_writer_changes_a_directory_is_a_state_it_was_in(tmp_path_factory, history, seed):
    _answer_while_writing(DirectoryLake(str(tmp_path_factory.mktemp("lake"))), history, seed)


@examples
@given(history=histories, seed=st.integers(0, 2**32 - 1))
def test_every_answer_while_a_writer_changes_a_delta_table_is_a_state_it_was_in(tmp_path_factory, history, seed):
    _answer_while_writing(DeltaLake(str(tmp_path_factory.mktemp("lake"))), history, seed)


def _answer_while_writing(lake, history: list, seed: int) -> None:
    for partition, keys in [("d=0", [0, 1]), ("d=1", [1, 2]), ("d=1", [3])]:
        lake.change(("add", partition, keys))
    lakeseek.create_index(lake.root, ["k"], name="sorted", engine="local")
    lakeseek.create_index(lake.root, ["k"], name="covering", kind="covering", include=["v"], engine="local")
    states = [_state(lake)]
    begun = finished = 0
    failure: list[BaseException] = []

    def play() -> None:
        nonlocal begun, finished
        try:
            for change, pause in history:
                time.sleep(pause)
                begun += 1
                lake.change(change)
                states.append(_state(lake))
                finished += 1
        except BaseException as error:  # the test fails on it, not the thread silently
            failure.append(error)

    kept = lakeseek.open_index(lake.root, name="sorted")
    asks = {
        "fresh read": lambda key: _rows(lakeseek.open_index(lake.root, name="sorted").read(f"k = {key}")),
        "kept read": lambda key: _rows(kept.read(f"k = {key}")),
        "kept locate": lambda key: _located(kept.locate([key], column="k")),
        "covering read": lambda key: _rows(
            lakeseek.open_index(lake.root, name="covering").read(f"k = {key}", columns=["k", "v"])
        ),
        "open_indexes read": lambda key: _rows(lakeseek.open_indexes(lake.root).read(f"k = {key}")),
    }
    chooser = random.Random(seed)
    answers = []
    writer = threading.Thread(target=play)
    writer.start()
    while writer.is_alive() or not answers:
        name, key = chooser.choice(sorted(asks)), chooser.choice(KEYS)
        earliest = finished
        try:
            answer = asks[name](key)
        except lakeseek.DataFileChangedError:
            continue
        answers.append((name, key, earliest, begun, answer))
    writer.join()
    assert not failure, failure
    for name, key, earliest, latest, answer in answers:
        possible = [states[n][key][name.endswith("locate")] for n in range(earliest, latest + 1)]
        note(f"{name} k = {key} between changes {earliest} and {latest}: {answer}")
        assert answer in possible, f"{name} of k = {key}: {answer}, no state of {possible}"
