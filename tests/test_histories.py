"""Generated lake histories: whatever happens to the lake and the index, queries stay exact.

Hypothesis draws a history: a few starting files, then a sequence of lake changes (files
added, removed, rewritten in place with and without their old mtime put back, renamed,
moved to another hive partition, partition directories moved out of the lake and back,
files with an extra column, names with glob characters and non-ASCII letters) interleaved
with index operations (create, adding a column, refresh incremental/quick/full, optimize
quick/full, vacuum, delete, restore; in process mostly, on Spark sometimes). After every
step a few generated predicates on indexed and unindexed columns go through a fresh
``open_index`` and through one handle opened right after the create and kept: ``read``
must return the rows of a full pyarrow read of the files as they are now, ``files`` every
file holding one, and ``locate`` exactly the (key, file) pairs of the lake. A third handle,
opened with it and keeping its first listing (``lake_listing="once"``), must answer ``read``
as the lake was at one of the checks since (a state it was in, never a mix of two). The fresh
handle's root must also keep its invariant: every column covers every file the lineage
says is indexed.

CI runs a fixed set of histories; ``make fuzz`` sets LAKESEEK_FUZZ_EXAMPLES for many more,
with new seeds. A failure prints the concrete steps (hypothesis ``note``), ready to become
a regression test below.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import shutil
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

import lakeseek
from lakeseek.exceptions import LakeseekError
from lakeseek.kinds.base import ROW_FILE
from lakeseek.kinds.cuckoo.build import read_directory
from lakeseek.kinds.keys import KeyRange
from lakeseek.kinds.skipping.sketches import read_segment
from lakeseek.operations import protocol as operations
from tests.lakes import data_files, evaluate, to_sql

pytestmark = pytest.mark.spark

# CI runs a fixed set of examples; `make fuzz` sets LAKESEEK_FUZZ_EXAMPLES for a longer run with new seeds.
FUZZ_EXAMPLES = os.environ.get("LAKESEEK_FUZZ_EXAMPLES")

REGIONS = ["east", "São Paulo", "a b[1]", None]  # hive partition values (None: the default partition)
NAMES = ["alice", "Bob", "naïve café", "[x]", "what?", "*", "", None]
EXTRAS = ["p", "q", None]
# File names: plain, with glob characters, non-ASCII, no extension.
FILE_NAMES = ["part-{n}.parquet", "part [{n}].parquet", "q?{n}*.parquet", "ünï-{n}-🙂.parquet", "raw{n}"]
COLUMNS = ["id", "code", "name", "region", "extra"]
ABSENT_ID = 10**9


def _region_dir(region: str | None) -> str:
    return "region=__HIVE_DEFAULT_PARTITION__" if region is None else f"region={region}"


# -- the lake ----------------------------------------------------------------------------------
class History:
    """One lake, its index, a long-lived handle, and the steps applied so far."""

    def __init__(self, root: str, spark, seed: int) -> None:
        self.root = f"{root}/lake"
        self.away = f"{root}/away"  # outside the lake: where directories are moved out to
        os.makedirs(self.root)
        os.makedirs(self.away)
        self.spark = spark
        self.rng = random.Random(seed)
        self.next_id = 0
        self.serial = itertools.count()
        self.kept: lakeseek.Index | None = None  # opened right after the create, never reopened
        # Opened with it, keeping the first listing it takes ("once"), and the lake's rows at
        # every check since: each of its answers must be the answer of one of them.
        self.once: lakeseek.Index | None = None
        self.states: list[list[dict]] = []
        self.steps: list[str] = []

    def log(self, text: str) -> None:
        self.steps.append(text)
        if currently_in_test_context():
            note(text)

    # -- lake changes ---------------------------------------------------------------------------
    def _table(self, rows: int, evolved: bool) -> pa.Table:
        ids = list(range(self.next_id, self.next_id + rows))
        self.next_id += rows
        columns = {
            "id": pa.array(ids, pa.int64()),
            "code": pa.array([self.rng.choice([None, 1, 2, 3, 4, 5]) for _ in ids], pa.int32()),
            "name": pa.array([self.rng.choice(NAMES) for _ in ids], pa.string()),
        }
        if evolved:
            columns["extra"] = pa.array([self.rng.choice(EXTRAS) for _ in ids], pa.string())
        return pa.table(columns)

    @staticmethod
    def _write(path: str, table: pa.Table) -> None:
        """Uncompressed and without dictionaries, so other ids of the same width keep the size."""
        with open(path, "wb") as f:
            pq.write_table(table, f, compression="none", use_dictionary=False, row_group_size=4)

    def _files(self) -> list[str]:
        return data_files(self.root)

    def _pick(self, number: int) -> str | None:
        files = self._files()
        return files[number % len(files)] if files else None

    def add(self, region: int, name: int, evolved: bool, rows: int) -> None:
        directory = f"{self.root}/{_region_dir(REGIONS[region])}"
        os.makedirs(directory, exist_ok=True)
        path = f"{directory}/{FILE_NAMES[name].format(n=next(self.serial))}"
        hidden = f"{directory}/.writing"  # written hidden, then renamed into place, as lake writers do
        self._write(hidden, self._table(rows, evolved))
        os.replace(hidden, path)
        self.log(f"add {self._rel(path)} ({rows} rows{', extra column' if evolved else ''})")

    def root_file(self, name: int, rows: int) -> None:
        """A file in the lake's root, which Spark's partition discovery reads only while no file
        sits in a partition directory."""
        path = f"{self.root}/{FILE_NAMES[name].format(n=next(self.serial))}"
        self._write(path, self._table(rows, False))
        self.log(f"add {self._rel(path)} in the root ({rows} rows)")

    def _keeps(self, leaving: list[str]) -> bool:
        """Whether the lake keeps a file once ``leaving`` leave it: an empty lake cannot be indexed.

        A lake left with only ``__HIVE_DEFAULT_PARTITION__`` files has a void partition
        column in Spark's eyes, which every comparison must treat as NULL: histories go there.
        """
        return bool(set(self._files()) - set(leaving))

    def remove(self, number: int) -> None:
        path = self._pick(number)
        if not self._keeps([path]):
            return
        os.remove(path)
        self.log(f"remove {self._rel(path)}")

    def rewrite(self, number: int, keep_mtime: bool, same_size: bool) -> None:
        """Other rows written into the same inode; with ``keep_mtime`` the old times put back."""
        path = self._pick(number)
        old = pq.read_table(path)
        if same_size:  # the same rows under new ids: same size to the byte
            table = old.set_column(0, "id", pa.array(range(self.next_id, self.next_id + old.num_rows), pa.int64()))
            self.next_id += old.num_rows
        else:
            table = self._table(self.rng.randrange(1, 12), "extra" in old.schema.names)
        before = os.stat(path)
        while True:
            self._write(path, table)
            if keep_mtime:
                os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
            after = os.stat(path)
            # A rewrite within one tick of the kernel's file clock keeps the ctime: the one
            # change lakeseek cannot see (docs/freshness.md). Wait for the next tick.
            if (after.st_ctime_ns, after.st_mtime_ns, after.st_size) != (
                before.st_ctime_ns,
                before.st_mtime_ns,
                before.st_size,
            ):
                break
            time.sleep(0.02)
        kept = (after.st_size == before.st_size, after.st_mtime_ns == before.st_mtime_ns)
        self.log(f"rewrite {self._rel(path)} in place (same size {kept[0]}, same mtime {kept[1]})")

    def rename(self, number: int, name: int) -> None:
        path = self._pick(number)
        target = f"{os.path.dirname(path)}/{FILE_NAMES[name].format(n=next(self.serial))}"
        os.rename(path, target)
        self.log(f"rename {self._rel(path)} -> {self._rel(target)}")

    def move(self, number: int, region: int) -> None:
        path = self._pick(number)
        directory = f"{self.root}/{_region_dir(REGIONS[region])}"
        os.makedirs(directory, exist_ok=True)
        target = f"{directory}/{os.path.basename(path)}"
        os.rename(path, target)  # over a file of that name: a replacement by rename
        self.log(f"move {self._rel(path)} -> {self._rel(target)}")

    def directory_out(self, region: int) -> None:
        """A partition directory moved out of the lake: its files keep their inodes and ctimes."""
        name = _region_dir(REGIONS[region])
        source, target = f"{self.root}/{name}", f"{self.away}/{name}"
        if not os.path.isdir(source) or os.path.exists(target):
            return
        if not self._keeps(data_files(source)):
            return
        os.rename(source, target)
        self.log(f"move directory {name} out of the lake")

    def directory_back(self, region: int, elsewhere: int) -> None:
        """A directory moved out comes back: to its place (same stamps), or as another partition."""
        names = sorted(os.listdir(self.away))
        if not names:
            return
        name = names[region % len(names)]
        source = f"{self.away}/{name}"
        target = f"{self.root}/{name}" if elsewhere == 0 else f"{self.root}/{_region_dir(REGIONS[elsewhere])}"
        if os.path.exists(target):
            for file in os.listdir(source):  # merged file by file (renamed: new ctimes)
                os.rename(f"{source}/{file}", f"{target}/{file}")
            os.rmdir(source)
        else:
            os.rename(source, target)
        self.log(f"move directory {name} back as {os.path.basename(target)}")

    # -- index operations -------------------------------------------------------------------------
    def _latest(self) -> lakeseek.Index | None:
        if self.kept is None:
            return None
        return lakeseek.open_index(self.root)

    def create(self, columns: list[str], row_groups: bool, chunk_rows: int, kind: str = "sorted") -> None:
        if self.kept is not None:
            self.add_column(len(columns))
            return
        if not self._keeps([]):  # see _keeps
            self.add(0, 0, False, 1)
        # The drawn settings, read as the kind's own: a skipping index with or without bloom
        # filters, and value lists of none, a few or many values.
        if kind == "sorted":
            options = {"chunk_rows": chunk_rows, "entries_per_index_file": chunk_rows * 3, "row_groups": row_groups}
        elif kind == "skipping":
            options = {"bloom": not row_groups, "value_list": chunk_rows // 4}
        elif kind == "cuckoo":  # one slot per bucket makes filters grow; 24-bit fingerprints take 3 bytes
            options = {"fingerprint_bits": 24 if row_groups else 16, "slots": max(1, chunk_rows // 16)}
        else:  # covering: the id carried (reads of it are answered from the index), small row groups
            options = {"include": ["id"], "chunk_rows": chunk_rows}
        self.log(f"create {kind} {columns} ({options})")
        default = f"{_region_dir(None)}{os.sep}"
        if "region" in columns and all(self._rel(path).startswith(default) for path in self._files()):
            with pytest.raises(lakeseek.UnsupportedColumnError):  # Spark's void column
                lakeseek.create_index(self.root, columns, spark=self.spark)
            return
        lakeseek.create_index(self.root, columns, kind=kind, spark=self.spark, **options)
        self.kept = lakeseek.open_index(self.root)
        self.once = lakeseek.open_index(self.root, lake_listing="once")

    def add_column(self, number: int) -> None:
        index = self._latest()
        if index is None:
            return
        # ``Index.schema`` is the lake's now: a column only files added since have is added too.
        missing = [c for c in COLUMNS if c in index.schema.names and c not in index.columns]
        if not missing:
            return
        column = missing[number % len(missing)]
        self.log(f"add column {column}")
        if index.root.state == "deleted":
            with pytest.raises(LakeseekError, match="restore it first"):
                lakeseek.create_index(self.root, [column], spark=self.spark)
            return
        if pa.types.is_null(index.schema.field(column).type):
            # Spark's void now (only default-partition files left): refused, unless the files the
            # index covers typed it when it recorded the schema; the checks then hold either way.
            with contextlib.suppress(lakeseek.UnsupportedColumnError):
                lakeseek.create_index(self.root, [column], spark=self.spark)
            return
        lakeseek.create_index(self.root, [column], spark=self.spark)

    def refresh(self, mode: str, engine: str) -> None:
        index = self._latest()
        if index is None:
            return
        self.log(f"refresh {mode} (engine {engine})")
        if index.root.state == "deleted":
            with pytest.raises(LakeseekError, match="restore it first"):
                lakeseek.refresh_index(self.root, mode, engine="local")
            return
        refreshed = lakeseek.refresh_index(self.root, mode, spark=self.spark, engine=engine)
        if mode != "quick":
            assert refreshed.status().is_fresh, "a refresh left the index stale on an unchanged lake"

    def optimize(self, mode: str, engine: str) -> None:
        index = self._latest()
        if index is None:
            return
        self.log(f"optimize {mode} (engine {engine})")
        if index.root.state == "deleted":
            with pytest.raises(LakeseekError, match="restore it first"):
                lakeseek.optimize_index(self.root, mode, engine="local")
            return
        lakeseek.optimize_index(self.root, mode, spark=self.spark, engine=engine)

    def set_state(self, state: str) -> None:
        index = self._latest()
        if index is None:
            return
        self.log("delete" if state == "deleted" else "restore")
        act = lakeseek.delete_index if state == "deleted" else lakeseek.restore_index
        if index.root.state == state:
            with pytest.raises(LakeseekError, match=f"already {state}"):
                act(self.root)
        else:
            act(self.root)

    def vacuum(self) -> None:
        if self.kept is None:
            return
        self.log("vacuum (retention 0)")
        lakeseek.vacuum_index(self.root, retention_hours=0)

    def apply(self, step: tuple) -> None:
        kind, *args = step
        if kind == "state":
            self.set_state(*args)
        else:
            getattr(self, kind)(*args)

    # -- checks -----------------------------------------------------------------------------------
    def _rel(self, path: str) -> str:
        return os.path.relpath(path, self.root)

    def rows(self) -> list[dict]:
        """Every row of the lake now: a plain pyarrow read of each file, region from its path."""
        rows = []
        files = self._files()
        if any(os.sep in self._rel(path) for path in files):  # partitioned: Spark reads no root file
            files = [path for path in files if os.sep in self._rel(path)]
        for path in files:
            region_part = self._rel(path).split(os.sep)[0]
            raw = region_part.partition("=")[2]
            # A file in the root (the lake holds no other now) has no region: the index's NULL.
            region = None if raw == "__HIVE_DEFAULT_PARTITION__" or os.sep not in self._rel(path) else raw
            with open(path, "rb") as f:
                table = pq.read_table(f)
            for row in table.to_pylist():
                rows.append({"extra": None, **row, "region": region, "__file": path})
        return rows

    def predicates(self, rows: list[dict], columns: set[str], seed: int) -> list[tuple]:
        rng = random.Random(seed)

        def some(column: str, default):
            values = sorted({row[column] for row in rows if row[column] is not None}, key=repr)
            return rng.choice(values) if values else default

        low = some("id", 0)
        trees = [
            ("=", "id", some("id", ABSENT_ID)),
            ("=", "id", ABSENT_ID),
            ("and", (">=", "id", low), ("<", "id", low + rng.randrange(1, 20))),
            ("=", "code", some("code", 3)),
            ("in", "code", [rng.randrange(1, 6), rng.randrange(1, 6)]),
            ("is null", "code"),
            ("=", "name", some("name", "alice")),
            ("like", "name", some("name", "a")[:1] + "%"),
            ("=", "region", some("region", "east")),
            ("is null", "region"),
            ("or", ("=", "id", some("id", 0)), ("=", "name", some("name", "Bob"))),
        ]
        if "extra" in columns:
            trees += [("=", "extra", some("extra", "p")), ("is null", "extra")]
        return rng.sample(trees, 4)

    def check(self, seed: int) -> None:
        if self.kept is None:
            return
        rows = self.rows()
        fresh = lakeseek.open_index(self.root)
        self._check_coverage(fresh, rows)
        # A column only some files ever had is in a handle's schema while its version records
        # it or a file it does not cover has it: the handles may disagree on 'extra'.
        self.states.append(rows)
        names = set(fresh.schema.names) & set(self.kept.schema.names) & set(self.once.schema.names)
        trees = self.predicates(rows, names, seed)
        for handle, which in ((fresh, "fresh handle"), (self.kept, "long-lived handle")):
            for tree in trees:
                where = to_sql(tree)
                expected = [row for row in rows if evaluate(tree, row) is True]
                got = sorted(handle.read(where, columns=["id"]).column("id").to_pylist())
                assert got == sorted(row["id"] for row in expected), f"{which}: read {where}"
                candidates = set(handle.files(where))
                assert candidates >= {row["__file"] for row in expected}, f"{which}: files {where}"
            self._check_locate(handle, rows, random.Random(seed), which)
        for tree in trees:
            where = to_sql(tree)
            got = sorted(self.once.read(where, columns=["id"]).column("id").to_pylist())
            answers = [sorted(row["id"] for row in state if evaluate(tree, row) is True) for state in self.states]
            assert got in answers, f"handle keeping its first listing: read {where} is no state the lake was in"

    def _check_locate(self, handle: lakeseek.Index, rows: list[dict], rng: random.Random, which: str) -> None:
        column = rng.choice(handle.columns)
        if pa.types.is_null(handle.schema.field(column).type):
            return  # Spark's void: no key has its type
        present = sorted({row[column] for row in rows if row[column] is not None}, key=repr)
        keys = rng.sample(present, min(3, len(present)))
        keys.append(ABSENT_ID if column in ("id", "code") else "absent")
        pairs = handle.locate(keys, column=column).to_pylist()
        # With row-group precision a pair comes once per row group holding the key.
        located = [(pair["key"], pair["file"], pair.get("row_group")) for pair in pairs]
        assert len(set(located)) == len(located), f"{which}: locate {keys} on {column} repeats a pair"
        got = sorted({(key, file) for key, file, _ in located}, key=repr)
        expected = sorted({(row[column], row["__file"]) for row in rows if row[column] in keys}, key=repr)
        assert got == expected, f"{which}: locate {keys} on {column}"

    def _check_coverage(self, index: lakeseek.Index, rows: list[dict]) -> None:
        """Every column of the latest version has entries for every indexed file holding rows."""
        if index.root.state != "active":
            return
        lineage = index.lineage()
        assert len(set(lineage.paths)) == len(lineage.paths), "a file is indexed twice"
        state = index.lake_state()
        holding = {self._rel(row["__file"]) for row in rows}
        indexed = {file_id for file_id, path in state.indexed.items() if path in holding}
        for column in index.columns:
            covered = _covered_files(index, column)
            uncovered = sorted(state.indexed[i] for i in indexed - covered)
            assert not uncovered, f"column {column} does not cover indexed files {uncovered}"


def _covered_files(index: lakeseek.Index, column: str) -> set[int]:
    """The ids of the files the index has entries (or sketches) of ``column`` for."""
    reader = index.kind_reader
    if index.root.kind == "skipping":
        segments = index.root.content.segments_of(column)
        tables = [read_segment(index.storage, f"{index.index_dir}/{s.path}", s, []) for s in segments]
        return {file_id for table in tables for file_id in table.column("file_id").to_pylist()}
    if index.root.kind == "cuckoo":
        segments = index.root.content.segments_of(column)
        return {int(i) for s in segments for i in read_directory(index.storage, index.index_dir, s)["file_id"]}
    if index.root.kind == "covering":
        paths = [f"{index.index_dir}/{f.path}" for s in index.root.content.segments_of(column) for f in s.row_files]
        return {i for path in paths for i in pq.read_table(path, columns=[ROW_FILE]).column(0).to_pylist()}
    entries = reader.range_entries(column, KeyRange())
    nulls = reader.point_entries(column, [None])
    return set(entries.column("file_id").to_pylist()) | set(nulls.column("file_id").to_pylist())


# -- the generator -----------------------------------------------------------------------------
_region = st.integers(0, len(REGIONS) - 1)
_file = st.integers(0, 99)
_engine = st.sampled_from(["local", "local", "local", "spark"])
lake_steps = st.one_of(
    st.tuples(st.just("add"), _region, st.integers(0, len(FILE_NAMES) - 1), st.booleans(), st.integers(1, 12)),
    st.tuples(st.just("remove"), _file),
    st.tuples(st.just("rewrite"), _file, st.booleans(), st.booleans()),
    st.tuples(st.just("rename"), _file, st.integers(0, len(FILE_NAMES) - 1)),
    st.tuples(st.just("move"), _file, _region),
    st.tuples(st.just("directory_out"), _region),
    st.tuples(st.just("directory_back"), _region, _region),
    st.tuples(st.just("root_file"), st.integers(0, len(FILE_NAMES) - 1), st.integers(1, 12)),
)
index_steps = st.one_of(
    st.tuples(st.just("add_column"), st.integers(0, 9)),
    st.tuples(st.just("refresh"), st.sampled_from(["incremental", "incremental", "quick", "full"]), _engine),
    st.tuples(st.just("optimize"), st.sampled_from(["quick", "full"]), _engine),
    st.tuples(st.just("vacuum")),
    st.tuples(st.just("state"), st.sampled_from(["deleted", "active"])),
)
creates = st.tuples(
    st.just("create"),
    st.lists(st.sampled_from(["id", "code", "name", "region"]), min_size=1, max_size=3, unique=True),
    st.booleans(),
    st.sampled_from([2, 4, 64]),
    st.sampled_from(["sorted", "skipping", "cuckoo", "covering"]),
)
# A round: a few lake changes, then one index operation.
rounds = st.tuples(st.lists(lake_steps, max_size=3), index_steps)
histories = st.tuples(
    st.lists(
        st.tuples(st.just("add"), _region, st.integers(0, len(FILE_NAMES) - 1), st.booleans(), st.integers(1, 12)),
        min_size=1,
        max_size=4,
    ),
    creates,
    st.lists(rounds, min_size=4, max_size=8),
    st.integers(0, 2**16),  # the seed of rows and predicates
    st.sampled_from([operations.INLINE_LINEAGE_MAX_FILES, 0]),  # lineage inline in the root, or manifests
)


def run_history(directory: str, spark, history: tuple) -> None:
    starting, create, rounds, seed, inline_max = history
    steps = [step for changes, operation in rounds for step in (*changes, operation)]
    lake = History(directory, spark, seed)
    previous = operations.INLINE_LINEAGE_MAX_FILES
    operations.INLINE_LINEAGE_MAX_FILES = inline_max
    try:
        for number, step in enumerate([*starting, create, *steps]):
            lake.apply(step)
            lake.check(seed + number)
    finally:
        operations.INLINE_LINEAGE_MAX_FILES = previous


# Every kind of step at least once, whatever hypothesis draws.
_EVERY_STEP = (
    [("add", 0, 0, False, 6), ("add", 1, 1, True, 5), ("add", 2, 2, False, 4), ("add", 3, 3, False, 3)],
    [
        ([("directory_out", 1)], ("add_column", 0)),
        ([("directory_back", 0, 0), ("rewrite", 0, True, True)], ("refresh", "incremental", "local")),
        ([("add", 1, 4, True, 7), ("rename", 1, 2), ("move", 2, 3)], ("refresh", "quick", "local")),
        ([("root_file", 0, 3), ("rewrite", 3, False, False), ("remove", 4)], ("optimize", "quick", "local")),
        ([("directory_out", 0)], ("refresh", "incremental", "spark")),
        ([("directory_back", 0, 2)], ("optimize", "full", "local")),
        ([], ("state", "deleted")),
        ([("add", 0, 1, False, 2)], ("vacuum",)),
        ([], ("state", "active")),
        ([("rewrite", 1, True, False)], ("refresh", "full", "local")),
        ([], ("add_column", 1)),
        ([("remove", 2)], ("optimize", "full", "spark")),
    ],
)


@example(history=(_EVERY_STEP[0], ("create", ["id", "region"], False, 2, "sorted"), _EVERY_STEP[1], 7, 0))
@example(history=(_EVERY_STEP[0], ("create", ["name"], True, 4, "sorted"), _EVERY_STEP[1], 8, 20_000))
@example(history=(_EVERY_STEP[0], ("create", ["code", "name"], False, 64, "skipping"), _EVERY_STEP[1], 9, 0))
@example(history=(_EVERY_STEP[0], ("create", ["id", "region"], True, 4, "skipping"), _EVERY_STEP[1], 10, 20_000))
@example(history=(_EVERY_STEP[0], ("create", ["id", "name"], True, 2, "cuckoo"), _EVERY_STEP[1], 11, 0))
@example(history=(_EVERY_STEP[0], ("create", ["code", "region"], False, 64, "cuckoo"), _EVERY_STEP[1], 12, 20_000))
@example(history=(_EVERY_STEP[0], ("create", ["name", "region"], False, 2, "covering"), _EVERY_STEP[1], 13, 0))
@settings(
    max_examples=int(FUZZ_EXAMPLES or 20),
    deadline=None,
    derandomize=FUZZ_EXAMPLES is None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(histories)
def test_generated_histories_stay_exact(tmp_path, spark, history):
    directory = str(tmp_path / f"history-{next(_examples)}")
    try:
        run_history(directory, spark, history)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


_examples = itertools.count()


# -- regressions: histories the generator found -----------------------------------------------------
def test_an_optimize_after_every_indexed_file_left_keeps_the_index_usable(tmp_path, spark):
    """Optimize full compacted a lineage whose files were all tombstoned into an empty inline
    part, which the reader took for a manifest named 'None': every query read every file,
    and status and refresh failed."""
    lake = str(tmp_path / "lake")
    os.makedirs(lake)
    pq.write_table(pa.table({"id": [1, 2]}), f"{lake}/a.parquet")
    lakeseek.create_index(lake, ["id"], spark=spark)
    os.remove(f"{lake}/a.parquet")
    lakeseek.refresh_index(lake, "quick")  # a.parquet tombstoned
    optimized = lakeseek.optimize_index(lake, "full", engine="local")
    (part,) = optimized.root.lineage.parts
    assert part.inline is not None and not len(part.inline)
    pq.write_table(pa.table({"id": [3]}), f"{lake}/b.parquet")
    index = lakeseek.open_index(lake)
    assert index.status().new_files == ["b.parquet"]
    assert index.read("id = 3").num_rows == 1
    refreshed = lakeseek.refresh_index(lake, "incremental", engine="local")
    assert refreshed.status().is_fresh and refreshed.plan("id = 3").files == ["b.parquet"]
    assert refreshed.read("id = 3").num_rows == 1 and refreshed.read("id = 1").num_rows == 0


def test_history_f18_a_column_added_while_a_partition_was_moved_out(tmp_path, spark):
    run_history(
        str(tmp_path / "h"),
        spark,
        (
            [("add", 0, 0, False, 5), ("add", 1, 0, False, 5)],
            ("create", ["id"], False, 4),
            [
                ([("directory_out", 1)], ("add_column", 0)),
                ([("directory_back", 0, 0)], ("refresh", "incremental", "local")),
            ],
            1,
            operations.INLINE_LINEAGE_MAX_FILES,
        ),
    )
