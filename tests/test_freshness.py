"""A lake changed after indexing: answers stay those of a full scan."""

from __future__ import annotations

import os
import random
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lakeseek
from tests.lakes import all_rows, data_files, ids, matching, region_dir, to_sql, typed_rows, write_file

pytestmark = pytest.mark.spark

QUERIES = [
    ("=", "id", 5),
    ("=", "id", 100_000),
    ("=", "name", "it's"),
    ("in", "code", [7, 8, 9]),
    ("is null", "small"),
    ("=", "region", "west"),
    ("or", ("=", "id", 200), ("=", "id", 100_001)),
]


def _assert_exact(lake: str) -> None:
    index = lakeseek.open_index(lake)
    rows = all_rows(lake)
    for tree in QUERIES:
        where = to_sql(tree)
        assert ids(index.read(where)) == ids(matching(rows, tree)), where
        assert set(index.files(where)) >= {r["__file"] for r in matching(rows, tree)}, where


def test_added_removed_and_rewritten_files(lake_copy):
    files = data_files(lake_copy)
    rng = random.Random(9)
    # added: new ids, and a new partition value
    write_file(f"{lake_copy}/{region_dir('north')}/part-new.parquet", typed_rows(rng, 100_000, 50))
    # removed
    os.remove(files[0])
    # rewritten in place: same path, other rows (id 5 may move out, 200 moves in)
    write_file(files[1], typed_rows(rng, 200, 40))
    status = lakeseek.open_index(lake_copy).status()
    assert (len(status.new_files), len(status.changed_files), len(status.removed_files)) == (1, 1, 1)
    _assert_exact(lake_copy)
    plan = lakeseek.open_index(lake_copy).plan("id = 5")
    assert plan.unindexed_files == 2 and plan.removed_files == 1


def test_rewritten_file_of_the_same_size_is_detected_by_mtime(lake_copy):
    target = data_files(lake_copy)[2]
    table = pq.read_table(target)
    # Same values in another order: same size, other mtime.
    pq.write_table(table.take(pa.array(range(table.num_rows - 1, -1, -1))), target)
    stat = os.stat(target)
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert lakeseek.open_index(lake_copy).status().changed_files == [os.path.relpath(target, lake_copy)]
    _assert_exact(lake_copy)


def test_every_file_removed(lake_copy):
    for path in data_files(lake_copy):
        os.remove(path)
    index = lakeseek.open_index(lake_copy)
    assert index.files("id = 5") == []
    assert index.read("id = 5").num_rows == 0


def test_listing_once_reuses_the_first_listing(lake_copy):
    index = lakeseek.open_index(lake_copy, lake_listing="once")
    assert index.read("id = 5").num_rows == 1
    os.remove(index.files("id = 5")[0])  # the snapshot does not see it go
    assert index.lake_state().is_fresh
    assert lakeseek.open_index(lake_copy).read("id = 5").num_rows == 0
    with pytest.raises(ValueError, match="lake_listing"):
        lakeseek.open_index(lake_copy, lake_listing="sometimes")
    # Reloading lists the lake again, whether or not the index changed.
    write_file(f"{lake_copy}/region=east/part-added.parquet", typed_rows(random.Random(2), 90000, 5))
    reloaded = index.reload()
    assert reloaded.read("id = 5").num_rows == 0 and reloaded.read("id = 90001").num_rows == 1


def test_large_lakes_keep_the_lineage_in_a_manifest(tmp_path, typed_lake, spark, monkeypatch):
    import shutil

    from lakeseek.operations import protocol

    lake = str(tmp_path / "lake")
    shutil.copytree(typed_lake, lake, ignore=shutil.ignore_patterns("_lakeseek"))
    monkeypatch.setattr(protocol, "INLINE_LINEAGE_MAX_FILES", 3)
    lakeseek.create_index(lake, ["id", "name"], spark=spark)
    index = lakeseek.open_index(lake)
    (part,) = index.root.lineage.parts
    assert part.inline is None and part.path.endswith(".parquet")
    os.remove(data_files(lake)[0])
    _assert_exact(lake)


# -- file identity: a rewrite that keeps size and mtime --------------------------------------------
def _plain_file(path: str, first_id: int, count: int = 200) -> None:
    """A file whose size depends only on its row count (no compression, no dictionary), so
    rewriting it with other ids keeps its size to the byte."""
    table = pa.table({"id": pa.array(range(first_id, first_id + count), pa.int64())})
    pq.write_table(table, path, compression="none", use_dictionary=False)


def _rewrite_in_place(target: str, first_id: int, scratch: str) -> None:
    """Other rows written into the same inode, then the old times set back (``touch -r``)."""
    before = os.stat(target)
    _plain_file(target, first_id)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))


def _copy_over(target: str, first_id: int, scratch: str) -> None:
    """``cp -p`` / ``rsync -t`` of a file with the old size and mtime over the indexed one."""
    before = os.stat(target)
    _plain_file(scratch, first_id)
    os.utime(scratch, ns=(before.st_atime_ns, before.st_mtime_ns))
    shutil.copy2(scratch, target)


def _replace(target: str, first_id: int, scratch: str) -> None:
    """A reproducible tarball extracted over the lake: a new file (new inode) under the old name."""
    before = os.stat(target)
    hidden = os.path.join(os.path.dirname(target), ".extracting")
    _plain_file(hidden, first_id)
    os.utime(hidden, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(hidden, target)


@pytest.mark.parametrize("rewrite", [_rewrite_in_place, _copy_over, _replace])
def test_a_rewrite_keeping_size_and_mtime_is_detected(tmp_path, spark, rewrite):
    lake = tmp_path / "lake"
    lake.mkdir()
    for n in range(3):
        _plain_file(str(lake / f"part-{n}.parquet"), n * 200)  # ids 0..599
    lakeseek.create_index(str(lake), ["id"], spark=spark)
    target = str(lake / "part-1.parquet")
    before = os.stat(target)
    rewrite(target, 5000, str(tmp_path / "scratch.parquet"))  # ids 200..399 leave, 5000..5199 arrive
    after = os.stat(target)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)

    index = lakeseek.open_index(str(lake))
    status = index.status()
    assert not status.is_fresh and status.changed_files == ["part-1.parquet"]
    everything = pa.concat_tables(pq.read_table(path) for path in data_files(str(lake)))  # a full read
    for value in (5007, 250, 450):
        expected = sorted(everything.filter(pc.equal(everything["id"], value))["id"].to_pylist())
        assert sorted(index.read(f"id = {value}")["id"].to_pylist()) == expected, value
    located = index.locate([5007, 250, 450], column="id").to_pylist()
    assert sorted((row["key"], row["file"]) for row in located) == [
        (450, str(lake / "part-2.parquet")),
        (5007, target),
    ]


# -- lineage manifests bound to the root that names them -------------------------------------------
def test_an_older_manifest_in_place_of_the_newer_one_falls_back_to_a_scan(tmp_path, typed_lake, spark, monkeypatch):
    from lakeseek.operations import protocol

    lake = str(tmp_path / "lake")
    shutil.copytree(typed_lake, lake, ignore=shutil.ignore_patterns("_lakeseek"))
    monkeypatch.setattr(protocol, "INLINE_LINEAGE_MAX_FILES", 0)  # every lineage part a manifest
    older = lakeseek.create_index(lake, ["id", "name"], spark=spark)
    os.remove(data_files(lake)[0])  # the full refresh numbers the files anew: ids shift by one
    newer = lakeseek.refresh_index(lake, "full", engine="local")
    ((older_part,), (newer_part,)) = (older.root.lineage.parts, newer.root.lineage.parts)
    assert older_part.path != newer_part.path
    index_dir = newer.index_dir
    with open(f"{index_dir}/{older_part.path}", "rb") as source, open(f"{index_dir}/{newer_part.path}", "wb") as out:
        out.write(source.read())

    rows = all_rows(lake)
    index = lakeseek.open_index(lake)
    for tree in QUERIES:
        assert ids(index.read(to_sql(tree))) == ids(matching(rows, tree)), tree
    plan = index.plan("id = 5")
    assert not plan.index_used and "lineage" in plan.reason, plan.reason


def test_the_listing_follows_spark(tmp_path):
    from lakeseek.sources import open_lake

    lake = tmp_path / "lake"
    for relative in ("a.parquet", "p=1/b.parquet", "_p=2/c.parquet", "_hidden/d.parquet", ".x/e.parquet", "_f"):
        (lake / relative).parent.mkdir(parents=True, exist_ok=True)
        (lake / relative).write_bytes(b"1234")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "g.parquet").write_bytes(b"12345")
    os.symlink(tmp_path / "elsewhere", lake / "linked")  # followed, as Spark and pyarrow do
    os.symlink(lake / "missing", lake / "broken.parquet")  # skipped
    os.symlink(lake, lake / "p=1" / "loop")  # a cycle ends
    source = open_lake(str(lake))
    listed = source.snapshot().files
    # a.parquet is in the root of a partitioned lake, which Spark's partition discovery never reads.
    assert sorted(listed) == ["_p=2/c.parquet", "linked/g.parquet", "p=1/b.parquet"]
    assert listed["linked/g.parquet"].size == 5
    os.remove(lake / "p=1" / "b.parquet")
    os.remove(lake / "_p=2" / "c.parquet")
    assert sorted(source.snapshot().files) == ["a.parquet", "linked/g.parquet"]  # no partition left
    listed = source.snapshot().files

    target = lake / "a.parquet"
    before = os.stat(target)
    target.write_bytes(b"5678")  # same size, and the old times set back
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = source.snapshot().files["a.parquet"]
    assert (after.size, after.mtime_ns) == (listed["a.parquet"].size, listed["a.parquet"].mtime_ns)
    assert after != listed["a.parquet"]


def test_a_listing_kept_for_a_time(lake_copy, monkeypatch):
    import lakeseek.index as index_module

    now = [1000.0]
    monkeypatch.setattr(index_module.time, "monotonic", lambda: now[0])
    index = lakeseek.open_index(lake_copy, lake_listing=30)
    assert index.read("id = 90001").num_rows == 0
    write_file(f"{lake_copy}/region=east/part-added.parquet", typed_rows(random.Random(2), 90000, 5))
    now[0] += 29
    assert index.read("id = 90001").num_rows == 0  # the snapshot of 29 s ago
    now[0] += 2
    assert index.read("id = 90001").num_rows == 1
    for wrong in (0, -1, True, float("inf"), "30"):
        with pytest.raises(lakeseek.InvalidArgumentError, match="lake_listing"):
            lakeseek.open_index(lake_copy, lake_listing=wrong)


def test_a_file_replaced_between_the_listing_and_its_read_is_no_torn_answer(tmp_path, monkeypatch):
    """A writer added y (holding key 7) and then replaced x by a rename with a version holding
    key 7, after a query listed the lake and before it read x: the query read x's new rows
    without y's, a state the lake was never in (found by a hunt on ``lakeseek serve``). Such a
    read now runs again on a new listing; one that a writer keeps disturbing is a one-line
    error to run the query again."""
    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int64())}), lake / "x.parquet")
    lakeseek.create_index(str(lake), ["k"], engine="local")
    read_by_path = type(lakeseek.open_index(str(lake)).lake).dataset

    def replace_x(keys: list[int]) -> None:
        pq.write_table(pa.table({"k": pa.array(keys, pa.int64())}), lake / "next.parquet")
        os.replace(lake / "next.parquet", lake / "x.parquet")

    def start(*, writer_stops: bool) -> None:
        """The lake before the writer: x not yet indexed (so read by every query), no y."""
        (lake / "y.parquet").unlink(missing_ok=True)
        replace_x([3, 4])

        def writer_between(self, paths, *args, **kwargs):
            if not (writer_stops and (lake / "y.parquet").exists()):
                pq.write_table(pa.table({"k": pa.array([7], pa.int64())}), lake / "y.parquet")
                replace_x([7, 8])
            return read_by_path(self, paths, *args, **kwargs)

        monkeypatch.setattr(type(lakeseek.open_index(str(lake)).lake), "dataset", writer_between)

    asks = {
        "read": lambda index: sorted(index.read("k = 7").column("k").to_pylist()),
        # Keys given as a generator: a run again must see them too (it located none).
        "locate": lambda index: sorted(pair["file"].rsplit("/", 1)[-1] for pair in index.locate(iter([7])).to_pylist()),
        "open_indexes": lambda index: sorted(lakeseek.open_indexes(str(lake)).read("k = 7").column("k").to_pylist()),
    }
    whole = {"read": [7, 7], "locate": ["x.parquet", "y.parquet"], "open_indexes": [7, 7]}
    for name, ask in asks.items():
        start(writer_stops=True)
        assert ask(lakeseek.open_index(str(lake))) == whole[name], name  # the lake after the writer, whole
        start(writer_stops=False)
        with pytest.raises(lakeseek.DataFileChangedError, match="changed while it was read: run it again"):
            ask(lakeseek.open_index(str(lake)))
        monkeypatch.undo()


def test_a_listing_kept_once_reads_a_file_replaced_since_as_it_is_now(tmp_path):
    """With ``lake_listing="once"`` the lake is the first listing, as a Spark DataFrame's file
    index, until a read finds a file of it replaced: then the lake is listed again (every later
    read of it failed when each run again reused the listing)."""
    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(pa.table({"k": pa.array([5, 6], pa.int64())}), lake / "x.parquet")
    lakeseek.create_index(str(lake), ["k"], engine="local")
    index = lakeseek.open_index(str(lake), lake_listing="once")
    assert index.read("k = 5").num_rows == 1
    pq.write_table(pa.table({"k": pa.array([5, 5, 7], pa.int64())}), lake / "next.parquet")
    os.replace(lake / "next.parquet", lake / "x.parquet")
    for _ in range(2):
        assert index.read("k = 5").num_rows == 2  # x as it is now: two rows of 5


@pytest.mark.parametrize("lake_listing", ["once", 3600.0])
def test_a_kept_listing_with_files_replaced_since_answers_a_state_the_lake_was_in(tmp_path, lake_listing):
    """Two files replaced after the listing a handle keeps: the index chose the files for
    ``ev IN ('a1', 'b2')`` by what they held (a1 in part-1, b2 nowhere), and part-1 read as it
    is now (b1) answered 0 rows, which neither the lake before (10 rows of a1) nor after (10 of
    b2) holds (found by the threads hunt). The read finds part-1 changed and lists again."""
    lake = tmp_path / "lake"
    lake.mkdir()

    def write(part: int, ev: str) -> None:
        pq.write_table(pa.table({"id": range(part * 10, part * 10 + 10), "ev": [ev] * 10}), lake / ".next")
        os.replace(lake / ".next", lake / f"part-{part}.parquet")

    for part in range(4):
        write(part, f"a{part}")
    lakeseek.create_index(str(lake), ["ev"], engine="local")
    index = lakeseek.open_index(str(lake), lake_listing=lake_listing)
    where = "ev IN ('a1', 'b2')"
    assert index.read(where).column("ev").to_pylist() == ["a1"] * 10
    write(1, "b1")
    write(2, "b2")
    for _ in range(2):
        assert index.read(where).column("ev").to_pylist() == ["b2"] * 10
        assert [pair["file"] for pair in index.locate(["a1", "b2"]).to_pylist()] == [str(lake / "part-2.parquet")]


@pytest.mark.parametrize("kind", ["sorted", "skipping"])
def test_a_kept_listing_reads_a_file_replaced_with_fewer_row_groups_again(tmp_path, kind):
    """An index of row groups named row group 5 of a file replaced since by one of a single row
    group: the read failed with pyarrow's raw ArrowIndexError instead of listing the lake again
    (found by the review hunt)."""
    lake = tmp_path / "lake"
    lake.mkdir()

    def write(name: str, keys: list[int], row_group_size: int) -> None:
        pq.write_table(pa.table({"id": pa.array(keys, pa.int64())}), lake / ".next", row_group_size=row_group_size)
        os.replace(lake / ".next", lake / name)

    write("a.parquet", [*range(100, 110), 5], 2)
    write("b.parquet", [2, 3], 1)
    lakeseek.create_index(str(lake), ["id"], kind=kind, row_groups=True, engine="local")
    index = lakeseek.open_index(str(lake), lake_listing="once")
    assert index.read("id = 5").num_rows == 1
    write("a.parquet", [1], 1)
    write("b.parquet", [2, 3, 5], 1)
    for _ in range(2):
        assert index.read("id = 5").column("id").to_pylist() == [5]


def test_a_listing_the_tree_changed_under_holds_no_later_file_without_an_earlier_one(tmp_path, monkeypatch):
    """A walk is no snapshot: a writer put `a` in a directory the walk had listed, then `b` in
    one it had not, and the listing held `b` without `a` (rows of a later file without an
    earlier one; found by a hunt with writers in two partition directories). A watched tree
    the walk saw change is walked again."""
    from lakeseek.io import local
    from lakeseek.sources.directory import _skip_directory, is_hidden

    lake = tmp_path / "lake"
    for name in ("d=0", "d=1"):
        (lake / name).mkdir(parents=True)
        pq.write_table(pa.table({"k": [1]}), lake / name / "first.parquet")
    scan = local._scan
    listed: list[str] = []

    def scan_and_write(directory: str, skipped):
        yield from scan(directory, skipped)
        listed.append(directory)
        if directory.rstrip("/").rsplit("/", 1)[-1].startswith("d=") and len(listed) == 2:  # one of the two listed
            written, later = ("d=0", "d=1") if directory.rstrip("/").endswith("d=0") else ("d=1", "d=0")
            pq.write_table(pa.table({"k": [2]}), lake / written / "a.parquet")
            pq.write_table(pa.table({"k": [3]}), lake / later / "b.parquet")

    monkeypatch.setattr(local, "_scan", scan_and_write)
    storage = local.LocalStorage()
    found = storage.walk_files(str(lake), skip_dir=_skip_directory, skip_file=is_hidden)
    names = {path.rsplit("/", 1)[-1] for path in found}
    assert ("b.parquet" in names) <= ("a.parquet" in names), sorted(found)
    assert {"a.parquet", "b.parquet"} <= names  # walked again: the tree as it is after the writer


def test_a_listing_kept_once_is_made_again_when_a_file_of_it_is_gone(tmp_path):
    """With ``lake_listing="once"``, a file of the kept listing removed since made every later
    read fail ("run it again"), however often it ran again: the runs now list the lake anew."""
    lake = tmp_path / "lake"
    lake.mkdir()
    for name, keys in (("x", [5, 6]), ("y", [5, 7])):
        pq.write_table(pa.table({"k": pa.array(keys, pa.int64())}), lake / f"{name}.parquet")
    lakeseek.create_index(str(lake), ["k"], engine="local")
    index = lakeseek.open_index(str(lake), lake_listing="once")
    assert index.read("k = 5").num_rows == 2
    os.remove(lake / "y.parquet")
    for _ in range(2):
        assert index.read("k = 5").num_rows == 1
        assert [pair["file"].rsplit("/", 1)[-1] for pair in index.locate([5]).to_pylist()] == ["x.parquet"]


def test_a_new_file_replaced_while_its_footer_is_read_runs_the_query_again(tmp_path, monkeypatch):
    """A file new since indexing is read for its schema first: a writer replaced it by bytes
    that are not Parquet yet, then by its next version, and the query failed with "cannot read
    data file", where the file had only changed under the read (found by a hunt with writers)."""
    import lakeseek.caches

    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(pa.table({"k": pa.array([5, 6], pa.int64())}), lake / "x.parquet")
    lakeseek.create_index(str(lake), ["k"], engine="local")
    pq.write_table(pa.table({"k": pa.array([5], pa.int64())}), lake / "y.parquet")
    read_schemas = lakeseek.caches.file_schemas
    calls = []

    def replaced_under(source, paths, *args):
        calls.append(paths)
        if len(calls) > 1:
            return read_schemas(source, paths, *args)
        (lake / "part.tmp").write_bytes(b"not yet parquet")
        os.replace(lake / "part.tmp", lake / "y.parquet")
        try:
            return read_schemas(source, paths, *args)
        finally:
            pq.write_table(pa.table({"k": pa.array([5, 5], pa.int64())}), lake / "part.tmp")
            os.replace(lake / "part.tmp", lake / "y.parquet")

    monkeypatch.setattr(lakeseek.caches, "file_schemas", replaced_under)
    assert lakeseek.open_index(str(lake)).read("k = 5").column("k").to_pylist() == [5, 5, 5]


def test_a_tree_that_changes_under_every_walk_is_an_error_to_run_again(tmp_path, monkeypatch):
    """Walked again and again while a writer never stops, a listing would still be torn: after
    three walks the listing is an error, never a listing of no moment."""
    from lakeseek.io import local
    from lakeseek.sources.directory import _skip_directory, is_hidden

    lake = tmp_path / "lake"
    (lake / "d=0").mkdir(parents=True)
    pq.write_table(pa.table({"k": [1]}), lake / "d=0" / "first.parquet")
    scan = local._scan
    written = []

    def scan_and_write(directory: str, skipped):
        yield from scan(directory, skipped)
        if directory.rstrip("/").endswith("d=0"):
            written.append(1)
            pq.write_table(pa.table({"k": [2]}), lake / "d=0" / f"more-{len(written)}.parquet")

    monkeypatch.setattr(local, "_scan", scan_and_write)
    with pytest.raises(lakeseek.DataFileChangedError, match="changed while it was listed, 3 times"):
        local.LocalStorage().walk_files(str(lake), skip_dir=_skip_directory, skip_file=is_hidden)
    assert len(written) == local.WALKS


@pytest.mark.parametrize("operation", ["create", "refresh full"])
def test_a_build_a_writer_removes_a_file_under_runs_again(tmp_path, monkeypatch, operation):
    """A file removed between the build's listing and its read failed ``create`` and
    ``refresh`` ("removed while the query read it"), where queries run again: builds do too."""
    from lakeseek.kinds.file_keys import FileKeyReader

    lake = tmp_path / "lake"
    lake.mkdir()
    for number in range(3):
        pq.write_table(pa.table({"k": pa.array([number, 10 + number], pa.int64())}), lake / f"f{number}.parquet")
    if operation != "create":
        lakeseek.create_index(str(lake), ["k"], engine="local")
    read_keys = FileKeyReader.distinct_keys
    removed: list[str] = []

    def removing_another(self, path, *args, **kwargs):
        if not removed:  # once: the writer removes a file the build listed and has not read yet
            victim = next(name for name in ("f2.parquet", "f1.parquet") if not path.endswith(name))
            os.remove(lake / victim)
            removed.append(victim)
        return read_keys(self, path, *args, **kwargs)

    monkeypatch.setattr(FileKeyReader, "distinct_keys", removing_another)
    if operation == "create":
        index = lakeseek.create_index(str(lake), ["k"], engine="local")
    else:
        index = lakeseek.refresh_index(str(lake), "full", engine="local")
    assert removed and index.lake_state().is_fresh
    expected = sorted(pq.read_table(lake).column("k").to_pylist())
    assert sorted(index.read("k >= 0").column("k").to_pylist()) == expected


def test_a_build_on_spark_a_writer_removes_a_file_under_runs_again(tmp_path, monkeypatch, spark):
    """On Spark the task's DataFileChangedError reached the driver as a SparkJobError, and the
    build failed where the same build in process ran again."""
    from lakeseek.engine.runner import SparkRunner

    lake = tmp_path / "lake"
    lake.mkdir()
    for number in range(2):
        pq.write_table(pa.table({"k": pa.array([number], pa.int64())}), lake / f"f{number}.parquet")
    run = SparkRunner.run
    runs: list[str] = []

    def removing_first(self, label, tasks, function):
        runs.append(label)
        if len(runs) == 1:  # a writer removes a file after the build listed it
            os.remove(lake / "f1.parquet")
        return run(self, label, tasks, function)

    monkeypatch.setattr(SparkRunner, "run", removing_first)
    index = lakeseek.create_index(str(lake), ["k"], spark=spark)
    assert len(runs) > 2 and index.lake_state().is_fresh
    assert index.read("k >= 0").column("k").to_pylist() == [0]
