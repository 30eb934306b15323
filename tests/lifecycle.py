"""Helpers for lifecycle tests: random lake changes, and exactness checks against the oracle."""

from __future__ import annotations

import os
import random

import lakeseek
from tests.lakes import REGIONS, all_rows, data_files, ids, matching, region_dir, to_sql, typed_rows, write_file


class LakeChanger:
    """Appends, removes and rewrites files of a typed lake, with fresh ids for new rows (``fs``:
    the lake's object store, for a URI ``root``)."""

    def __init__(self, root: str, rng: random.Random, first_id: int = 1_000_000, fs=None) -> None:
        self.root = root
        self.rng = rng
        self.next_id = first_id
        self.serial = 0
        self.fs = fs

    def _rows(self) -> list[dict]:
        count = self.rng.randrange(1, 60)
        rows = typed_rows(self.rng, self.next_id, count)
        self.next_id += count
        return rows

    def append(self) -> str:
        self.serial += 1
        region = self.rng.choice(REGIONS)
        path = f"{self.root}/{region_dir(region)}/added-{os.getpid()}-{self.serial}.parquet"
        write_file(path, self._rows(), self.fs)
        return path

    def remove(self) -> str | None:
        files = data_files(self.root, self.fs)
        if len(files) <= 2:
            return None
        path = self.rng.choice(files)
        if self.fs is None:
            os.remove(path)
        else:
            self.fs.delete_file(path.partition("://")[2])
        return path

    def rewrite(self) -> str | None:
        files = data_files(self.root, self.fs)
        if not files:
            return None
        path = self.rng.choice(files)
        write_file(path, self._rows(), self.fs)
        return path

    def random_change(self) -> str:
        kind = self.rng.choice(["append", "append", "remove", "rewrite"])
        getattr(self, kind)()
        return kind


def queries(rows: list[dict], rng: random.Random, count: int = 6) -> list[tuple]:
    """Point, range and LIKE queries on indexed columns for values present, absent and removed."""
    present = rng.sample(rows, min(count, len(rows)))
    trees = [("=", "id", r["id"]) for r in present]
    trees += [
        ("=", "id", 987_654_321),
        ("=", "name", rng.choice([r["name"] for r in present] or ["alice"])),
        ("in", "code", [rng.randrange(50) for _ in range(3)]),
        ("is null", "small"),
        ("or", ("=", "id", present[0]["id"] if present else 1), ("=", "code", 7)),
        ("and", ("=", "region", "east"), ("=", "flag", True)),
        (
            "and",
            (">=", "id", present[0]["id"] if present else 0),
            ("<", "id", (present[0]["id"] if present else 0) + 40),
        ),
        ("<", "id", 30),
        ("like", "name", "S%"),
    ]
    return trees


def assert_exact(
    root: str, rng: random.Random, *, name: str | None = None, fs=None, storage_options: dict | None = None
) -> lakeseek.Index:
    """Every query through the index returns the full scan's rows; candidate files cover them
    (``fs`` and ``storage_options``: the lake's object store, for a URI ``root``)."""
    index = lakeseek.open_index(root, name=name, storage_options=storage_options)
    rows = all_rows(root, fs)
    for tree in queries(rows, rng):
        where = to_sql(tree)
        expected = matching(rows, tree)
        assert ids(index.read(where)) == ids(expected), where
        assert set(index.files(where)) >= {r["__file"] for r in expected}, where
    if "id" not in index.columns:
        return index
    keys = sorted({r["id"] for r in rng.sample(rows, min(20, len(rows)))} | {987_654_321})
    pairs = index.locate(keys, column="id")
    located = sorted(zip(pairs.column("key").to_pylist(), pairs.column("file").to_pylist(), strict=True))
    assert located == sorted({(r["id"], r["__file"]) for r in rows if r["id"] in keys})
    return index
