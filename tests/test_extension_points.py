"""Adding a storage backend is one new module and one registration line.

A toy backend, written here from the Storage interface alone: pyarrow's in-memory file
system, with put-if-absent under a lock. A lake and its index copied into it are refreshed
(local engine), queried, located and vacuumed through ``memory://`` URIs, and every answer
equals the full-scan oracle's.
"""

from __future__ import annotations

import os
import threading
from urllib.parse import urlparse

import pyarrow.fs as pafs
import pytest

import lakeseek
from lakeseek.io import Storage, register_storage
from tests.lakes import all_rows, ids, matching, to_sql

pytestmark = pytest.mark.spark  # the lake's index is built with Spark, on local disk


class MemoryStorage(Storage):
    """Files in this process's memory; commits are atomic under one lock."""

    def __init__(self) -> None:
        super().__init__(pafs._MockFileSystem(), "memory")
        self._commits = threading.Lock()

    def put_if_absent(self, path: str, data: bytes, owner: str = "") -> None:
        with self._commits:
            if self.fs.get_file_info(path).type != pafs.FileType.NotFound:
                raise FileExistsError(path)
            self.write(path, data)


MEMORY = MemoryStorage()
register_storage("memory", lambda location: (MEMORY, (urlparse(location).netloc + urlparse(location).path).rstrip("/")))


def _copy_into_memory(local_root: str, target: str) -> None:
    for directory, _, files in os.walk(local_root):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as source:
                MEMORY.write(f"{target}/{os.path.relpath(path, local_root)}", source.read())


def test_a_toy_storage_backend_serves_the_whole_life_of_an_index(typed_lake):
    _copy_into_memory(typed_lake, "bucket/lake")
    lake = "memory://bucket/lake"
    rows = all_rows(typed_lake)
    trees = [("=", "id", 5), ("=", "name", "bob"), ("in", "code", [1, 2]), ("is null", "name")]

    copied = lakeseek.open_index(lake)
    assert not copied.status().is_fresh  # the copies are other contents (no local version tokens)
    for tree in trees:
        assert ids(copied.read(to_sql(tree))) == ids(matching(rows, tree)), tree

    index = lakeseek.refresh_index(lake, "incremental", engine="local")
    assert index.status().is_fresh
    for tree in trees:
        assert ids(index.read(to_sql(tree))) == ids(matching(rows, tree)), tree
    assert index.plan("id = 5").index_used
    assert all(path.startswith(f"{lake}/") for path in index.files("id = 5"))
    pairs = index.locate([5, 6], column="id")
    assert sorted(pairs.column("key").to_pylist()) == sorted(r["id"] for r in rows if r["id"] in (5, 6))

    lakeseek.optimize_index(lake, "full", engine="local")
    result = lakeseek.vacuum_index(lake, retention_hours=0)
    assert result.files_deleted > 0
    assert ids(lakeseek.open_index(lake).read("id = 5")) == ids(matching(rows, ("=", "id", 5)))
