"""Adding a storage backend, a lake source or an index kind is one new module and one
registration line: three toys, written here from the interfaces alone, each serving an index's
whole life with every answer equal to the full-scan oracle's.

- storage: pyarrow's in-memory file system, with put-if-absent under a lock (``memory://``);
- source: a toy table format whose ``_manifests/<n>.json`` list the data files of version n
  (files it dropped stay on disk, as a Delta table's do, and must never be read);
- kind: an index that names every file (and claims it names half of them: a kind's estimate may
  be wrong, its answer may not).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import lakeseek
from lakeseek.cost import Cost, Estimate
from lakeseek.exceptions import LakeseekError
from lakeseek.expressions.binding import resolve_column
from lakeseek.format.actions import ContentAction
from lakeseek.format.root import ColumnStatus
from lakeseek.io import Storage, register_storage
from lakeseek.kinds.base import LOCATION_SHIFT, Change, IndexKind, KindReader, Lookup
from lakeseek.lake.state import Changes
from lakeseek.sources.base import LakeSource, Snapshot
from tests.lakes import all_rows, ids, matching, to_sql


# -- a storage backend ------------------------------------------------------------------------------
class MemoryStorage(Storage):
    """Files in this process's memory; commits are atomic under one lock. The in-memory file
    system keeps no mtime of a write, so every write gets a generation, the files' version."""

    def __init__(self) -> None:
        super().__init__(pafs._MockFileSystem(), "memory")
        self._commits = threading.Lock()
        self._generations: dict[str, int] = {}

    def write(self, path: str, data: bytes) -> None:
        super().write(path, data)
        self._generations[path] = self._generations.get(path, 0) + 1

    def walk_files(self, directory, skip_dir, skip_file):
        found = super().walk_files(directory, skip_dir, skip_file)
        return {
            path: stamp._replace(version=str(self._generations.get(f"{directory}/{path}", 0)))
            for path, stamp in found.items()
        }

    def put_if_absent(self, path: str, data: bytes, owner: str = "") -> None:
        with self._commits:
            if self.fs.get_file_info(path).type != pafs.FileType.NotFound:
                raise FileExistsError(path)
            self.write(path, data)


MEMORY = MemoryStorage()
register_storage("memory", lambda location, options: (MEMORY, f"{urlparse(location).netloc}{urlparse(location).path}"))


# -- a lake source --------------------------------------------------------------------------------------
class ManifestLake(LakeSource):
    """Version n of the lake is the files ``_manifests/<n>.json`` lists; the newest is the lake."""

    name = "manifest"
    asked: ClassVar[list[str]] = []  # the versions ``changes`` was asked about, for the test

    def _versions(self) -> list[int]:
        found = self.storage.list_files(f"{self.root}/_manifests", recursive=False)
        return sorted(int(os.path.basename(status.path).removesuffix(".json")) for status in found)

    def _listed(self, version: int) -> set[str]:
        return set(json.loads(self.storage.read(f"{self.root}/_manifests/{version}.json"))["files"])

    def snapshot(self, *, exclude: str | None = None) -> Snapshot:
        latest = self._versions()[-1]
        on_disk = self.storage.walk_files(self.root, lambda name: name.startswith("_"), lambda name: False)
        return Snapshot({path: on_disk[path] for path in sorted(self._listed(latest))}, str(latest))

    def changes(self, since: str, snapshot: Snapshot) -> Changes:
        self.asked.append(since)
        before, after = self._listed(int(since)), self._listed(int(snapshot.version))
        return Changes(frozenset(after - before), frozenset(before - after))


lakeseek.register_source("manifest", lambda storage, root: storage.is_dir(f"{root}/_manifests"), ManifestLake)


# -- an index kind ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EveryFile:
    columns: tuple[str, ...]
    config: None = None
    size: int = 0

    @property
    def stored_columns(self) -> tuple[str, ...]:
        return self.columns

    def referenced_paths(self) -> set[str]:
        return set()

    def column_statuses(self) -> list[ColumnStatus]:
        return [ColumnStatus(column, "any", 0, 0, 1, 0) for column in self.columns]

    def to_json(self) -> dict:
        return {"columns": list(self.columns)}


@dataclass(frozen=True)
class AddColumnNames(ContentAction):
    name: ClassVar[str] = "add_column_names"
    columns: tuple[str, ...]

    def apply_content(self, content: EveryFile) -> EveryFile:
        return EveryFile(content.columns + self.columns)


class EveryFileReader(KindReader):
    def __init__(self, storage, index_dir, root) -> None:
        self.storage, self.index_dir, self.root = storage, index_dir, root

    def lookup(self, condition, indexed) -> Lookup:
        def every_file() -> np.ndarray:
            file_ids = self.root.lineage.indexed(self.storage, self.index_dir).ids
            return np.unique(np.array(file_ids, np.int64) << LOCATION_SHIFT)

        return Lookup(condition.column, Estimate(indexed.files / 2, Cost()), every_file)


class EveryFileKind(IndexKind):
    name = "every_file"

    def configure(self, options):
        if options:
            raise LakeseekError(f"the every_file index has no option {sorted(options)[0]!r}")

    def check_columns(self, names, schema, partition_columns):
        return [resolve_column(name, schema).name for name in names]

    def decode(self, raw):
        return EveryFile(tuple(raw["columns"]))

    def reader(self, storage, index_dir, root):
        return EveryFileReader(storage, index_dir, root)

    def build(self, job, config, columns, files):
        return EveryFile(tuple(columns))

    def add_columns(self, job, content, columns, files):
        return Change((AddColumnNames(tuple(columns)),))

    def add_files(self, job, content, files):
        return Change(())


lakeseek.register_kind(EveryFileKind())


# -- the tests --------------------------------------------------------------------------------------
TREES = [("=", "id", 5), ("=", "name", "bob"), ("in", "code", [1, 2]), ("is null", "name"), (">", "id", 590)]


def _copy_into_memory(local_root: str, target: str) -> None:
    for directory, _, files in os.walk(local_root):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as source:
                MEMORY.write(f"{target}/{os.path.relpath(path, local_root)}", source.read())


@pytest.mark.spark  # the typed lake's fixture builds an index with Spark (its copy here has none)
def test_a_toy_storage_backend_serves_the_whole_life_of_an_index(typed_lake):
    _copy_into_memory(typed_lake, "bucket/lake")
    lake = "memory://bucket/lake"
    rows = all_rows(typed_lake)

    copied = lakeseek.open_index(lake)
    assert not copied.status().is_fresh  # the copies are other contents (no local version tokens)
    for tree in TREES:
        assert ids(copied.read(to_sql(tree))) == ids(matching(rows, tree)), tree

    index = lakeseek.refresh_index(lake, "incremental", engine="local")
    assert index.status().is_fresh
    for tree in TREES:
        assert ids(index.read(to_sql(tree))) == ids(matching(rows, tree)), tree
    assert index.plan("id = 5").index_used
    assert all(path.startswith(f"{lake}/") for path in index.files("id = 5"))
    pairs = index.locate([5, 6], column="id")
    assert sorted(pairs.column("key").to_pylist()) == sorted(r["id"] for r in rows if r["id"] in (5, 6))

    lakeseek.optimize_index(lake, "full", engine="local")
    result = lakeseek.vacuum_index(lake, retention_hours=0)
    assert result.files_deleted > 0
    assert ids(lakeseek.open_index(lake).read("id = 5")) == ids(matching(rows, ("=", "id", 5)))

    # A new index created on the backend itself, with no Spark; a rewrite of the same size is seen.
    toy = lakeseek.create_index(lake, ["id", "name"], name="second", engine="local")
    assert toy.plan("id = 5").index_used
    (holding,) = [path.removeprefix(f"{lake}/") for path in toy.files("id = 5")]  # exact on a fresh lake
    original = MEMORY.read(f"bucket/lake/{holding}")
    MEMORY.write(f"bucket/lake/{holding}", original)  # the same bytes, written again: another generation
    again = lakeseek.open_index(lake, name="second")
    assert again.status().changed_files == [holding]
    assert ids(again.read("id = 5")) == ids(matching(rows, ("=", "id", 5)))


def _table(first_id: int, rows: int) -> pa.Table:
    numbers = range(first_id, first_id + rows)
    return pa.table(
        {
            "id": pa.array(numbers, pa.int64()),
            "name": [None if n % 7 == 0 else ["alice", "bob", "carol"][n % 3] for n in numbers],
            "code": pa.array([n % 5 for n in numbers], pa.int32()),
        }
    )


def _version(root: str, version: int, files: list[str]) -> None:
    os.makedirs(f"{root}/_manifests", exist_ok=True)
    with open(f"{root}/_manifests/{version}.json", "w") as out:
        json.dump({"files": files}, out)


def _rows(root: str, files: list[str]) -> list[dict]:
    return [row for name in files for row in pq.read_table(f"{root}/{name}").to_pylist()]


def test_a_toy_versioned_source_serves_the_whole_life_of_an_index(tmp_path):
    root = str(tmp_path / "lake")
    os.makedirs(root)
    for number in range(8):
        pq.write_table(_table(number * 100, 100), f"{root}/part-{number}.parquet")
    listed = [f"part-{n}.parquet" for n in range(5)]  # parts 5 to 7 are on disk, not in the table
    _version(root, 0, listed)

    index = lakeseek.create_index(root, ["id", "name"], engine="local")  # no Spark: the source knows its schema
    assert index.lake.name == "manifest" and index.root.source_version == "0"
    for tree in TREES:
        assert ids(index.read(to_sql(tree))) == ids(matching(_rows(root, listed), tree)), tree
    assert index.files("id = 650") == [] and index.plan("id = 5").index_used
    assert index.lake_state().is_fresh and ManifestLake.asked == []  # same version: nothing to ask

    listed = [*listed[1:], "part-6.parquet"]  # version 1 drops part 0 (still on disk) and adds part 6
    _version(root, 1, listed)
    index = lakeseek.open_index(root)
    state = index.lake_state()
    assert (state.removed, state.new) == (["part-0.parquet"], ["part-6.parquet"]) and ManifestLake.asked == ["0"]
    for tree in TREES:
        assert ids(index.read(to_sql(tree))) == ids(matching(_rows(root, listed), tree)), tree
    # Part 0 (which holds id 5) left the table: never read; part 6 is new: always read until indexed.
    assert index.files("id = 5") == index.files("id = 650") == [f"{root}/part-6.parquet"]

    index = lakeseek.refresh_index(root, "incremental", engine="local")
    assert index.root.source_version == "1" and index.lake_state().is_fresh
    assert index.files("id = 5") == [] and index.files("id = 650") == [f"{root}/part-6.parquet"]
    index = lakeseek.optimize_index(root, "full", engine="local")
    assert not index.root.lineage.removed
    for tree in TREES:
        assert ids(index.read(to_sql(tree))) == ids(matching(_rows(root, listed), tree)), tree
    assert [entry.operation for entry in index.history()] == ["create", "refresh incremental", "optimize full"]


@pytest.mark.spark  # the lake's schema is Spark's (a directory lake)
def test_a_toy_index_kind_serves_the_whole_life_of_an_index(lake_copy):
    """Beside the lake's sorted index, an index of another kind: the same answers, however wrong
    its estimates, through create, queries, refresh, optimize, status, history and vacuum."""
    with pytest.raises(LakeseekError, match="no option 'chunk_rows'"):
        lakeseek.create_index(lake_copy, ["id"], kind="every_file", name="toy", chunk_rows=4)
    toy = lakeseek.create_index(lake_copy, ["id"], kind="every_file", name="toy", engine="local")
    toy = lakeseek.create_index(lake_copy, ["name"], name="toy", engine="local")  # a column added
    assert toy.root.kind == "every_file" and toy.columns == ["id", "name"]
    with pytest.raises(LakeseekError, match="of kind every_file, not sorted"):
        lakeseek.create_index(lake_copy, ["code"], kind="sorted", name="toy")
    rows = all_rows(lake_copy)
    for tree in TREES:
        table, plan = toy.query(to_sql(tree))
        assert ids(table) == ids(matching(rows, tree)), tree
    plan = toy.plan("id = 5")
    assert plan.index_used and len(plan.files) == plan.total_files  # it claimed half, it named all
    assert sorted(toy.locate([5, 6], column="id").column("key").to_pylist()) == [5, 6]

    os.remove(f"{lake_copy}/{sorted(toy.lake.snapshot().files)[0]}")
    refreshed = lakeseek.refresh_index(lake_copy, "incremental", name="toy", engine="local")
    assert refreshed.status().is_fresh and refreshed.root.lineage.removed
    optimized = lakeseek.optimize_index(lake_copy, "full", name="toy")  # no Spark: the kind has no job to run
    assert not optimized.root.lineage.removed and optimized.status().columns[0].name == "id"
    rows = all_rows(lake_copy)
    for tree in TREES:
        assert ids(optimized.read(to_sql(tree))) == ids(matching(rows, tree)), tree
    assert [entry.operation for entry in optimized.history()] == [
        "create",
        "add columns",
        "refresh incremental",
        "optimize full",
    ]
    lakeseek.vacuum_index(lake_copy, name="toy", retention_hours=0)
    assert {i.name: i.root.kind for i in lakeseek.list_indexes(lake_copy)} == {"default": "sorted", "toy": "every_file"}
    assert ids(lakeseek.open_index(lake_copy, name="default").read("id = 5")) == ids(matching(rows, ("=", "id", 5)))
