"""A watched local lake is not listed again while nothing changed, and every change is seen:
each check below changes the lake between two queries on one handle and compares with a
fresh full scan (the oracle reads every file)."""

from __future__ import annotations

import os
import random
import shutil

import pytest

import lakeseek
from lakeseek.io import counting
from tests.lakes import all_rows, ids, matching, to_sql, typed_rows, write_file


@pytest.fixture
def lake(tmp_path):
    root = str(tmp_path / "lake")
    for number in range(4):
        write_file(f"{root}/region=east/part-{number}.parquet", typed_rows(random.Random(number), number * 100, 100))
    lakeseek.create_index(root, ["id"], engine="local")
    return root


def _exact(index: lakeseek.Index, root: str) -> None:
    rows = all_rows(root)
    for tree in (("=", "id", 5), ("and", (">=", "id", 150), ("<", "id", 260)), (">=", "id", 5000)):
        assert ids(index.read(to_sql(tree))) == ids(matching(rows, tree)), tree


def _listings(index: lakeseek.Index) -> int:
    """How many times a query listed the lake (beyond checking that its root is there)."""
    with counting() as io:
        index.files("id = 5")
    return io.lists - 1


def test_an_unchanged_lake_is_not_listed_again(lake):
    index = lakeseek.open_index(lake)
    index.files("id = 5")
    assert _listings(index) == 0
    assert _listings(lakeseek.open_index(lake)) == 0  # another handle on the same lake too


@pytest.mark.parametrize(
    "change",
    [
        "append",
        "remove",
        "rewrite in place, mtime restored",
        "new partition directory",
        "rename in",
        "truncate",
    ],
)
def test_every_change_is_seen_by_the_next_query(lake, tmp_path, change):
    index = lakeseek.open_index(lake)
    index.files("id = 5")
    target = f"{lake}/region=east/part-1.parquet"
    if change == "append":
        write_file(f"{lake}/region=east/part-9.parquet", typed_rows(random.Random(9), 9000, 10))
    elif change == "remove":
        os.remove(target)
    elif change == "rewrite in place, mtime restored":
        before = os.stat(target)
        write_file(f"{tmp_path}/new.parquet", typed_rows(random.Random(6), 9300, 10))  # outside the lake
        with open(f"{tmp_path}/new.parquet", "rb") as source, open(target, "r+b") as out:
            out.write(source.read())  # the same inode, written in place
            out.truncate()
        os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif change == "new partition directory":
        write_file(f"{lake}/region=west/deep/part-0.parquet", typed_rows(random.Random(8), 9100, 10))
    elif change == "rename in":
        write_file(f"{lake}/_staging/part-7.parquet", typed_rows(random.Random(7), 9200, 10))
        os.rename(f"{lake}/_staging/part-7.parquet", f"{lake}/region=east/part-7.parquet")
    else:
        open(target, "wb").close()  # 0 bytes: no longer a data file
    assert _listings(index) == 1
    _exact(index, lake)


@pytest.mark.parametrize("link", ["symlink", "hard link"])
def test_files_written_through_another_path_are_listed_on_every_query(lake, tmp_path, link):
    outside = str(tmp_path / "elsewhere.parquet")
    write_file(outside, typed_rows(random.Random(3), 5000, 10))
    (os.symlink if link == "symlink" else os.link)(outside, f"{lake}/region=east/linked.parquet")
    index = lakeseek.open_index(lake)
    _exact(index, lake)
    write_file(f"{tmp_path!s}/other.parquet", typed_rows(random.Random(4), 7000, 10))
    with open(f"{tmp_path!s}/other.parquet", "rb") as source, open(outside, "r+b") as target:
        target.write(source.read())  # through the outside path: no watched directory sees it
        target.truncate()
    assert _listings(index) == 1
    _exact(index, lake)


def test_a_hard_link_made_after_the_listing_and_written_through_is_seen(lake, tmp_path):
    """Found by a hunt on a warm service: a link made outside the lake after the listing, and an
    in-place write through it, raised no event on the lake's directories; the service answered
    from the old listing for good. A file is watched by its inode now."""
    index = lakeseek.open_index(lake)
    _exact(index, lake)
    target = f"{lake}/region=east/part-2.parquet"
    os.link(target, f"{tmp_path}/outside.parquet")
    write_file(f"{tmp_path}/new.parquet", typed_rows(random.Random(2), 140, 100))  # ids 140..239
    with open(f"{tmp_path}/new.parquet", "rb") as source, open(f"{tmp_path}/outside.parquet", "r+b") as out:
        out.write(source.read())
        out.truncate()
    _exact(index, lake)


def test_a_change_the_watch_missed_is_read_right_and_the_lake_listed_again(lake, tmp_path, monkeypatch):
    """A change the kernel raises no event for (a blind spot, here a watch made blind) leaves
    the watched listing with a file's old stamp, and a read of the file finds it changed. The
    read ran again on the same listing and failed every time (found by a hunt on a warm service:
    "changed while it was read: run it again", for good); now the watch that missed a change
    is dropped, and the lake listed on every query."""
    from lakeseek.io import watch

    monkeypatch.setattr(watch._Watcher, "changed", lambda self, key: False)
    index = lakeseek.open_index(lake)
    _exact(index, lake)
    target = f"{lake}/region=east/part-1.parquet"
    write_file(f"{tmp_path}/new.parquet", typed_rows(random.Random(5), 9400, 10))
    shutil.copyfile(f"{tmp_path}/new.parquet", target)
    assert ids(index.read("id = 150")) == []  # the index sends the read to the changed file
    _exact(index, lake)
    assert _listings(index) == 1  # listed on every query from now on


def test_a_file_system_mounted_in_the_lake_after_the_listing_is_seen(lake):
    """Found by a hunt on a warm service: mount(2) raises no inotify event, so a file system
    mounted over a directory of the lake went unseen (its files' rows left out for good)."""
    import subprocess

    index = lakeseek.open_index(lake)
    _exact(index, lake)
    directory = f"{lake}/region=east"
    if subprocess.run(["mount", "-t", "tmpfs", "lakeseek-test", directory], capture_output=True).returncode:
        pytest.skip("mounting a file system needs root")
    try:
        write_file(f"{directory}/part-0.parquet", typed_rows(random.Random(1), 9000, 20))
        assert ids(index.read("id = 9005")) == [9005]  # in no file the index knows: none is read
        _exact(index, lake)
    finally:
        subprocess.run(["umount", directory], check=True)


def test_a_lake_moved_away_and_back_is_listed_again(lake, tmp_path):
    index = lakeseek.open_index(lake)
    index.files("id = 5")
    shutil.move(lake, f"{tmp_path}/aside")
    shutil.copytree(f"{tmp_path}/aside", lake)
    assert _listings(index) == 1
    _exact(index, lake)


def test_lakes_beyond_the_watched_ones_stay_exact(tmp_path, monkeypatch):
    """The process watches a few trees at most: the one used least recently is unwatched (and
    listed again when next used), every answer stays exact."""
    from lakeseek.io import watch

    monkeypatch.setattr(watch, "MAX_TREES", 2)
    lakes = []
    for number in range(4):
        root = str(tmp_path / f"lake{number}")
        write_file(f"{root}/part-0.parquet", typed_rows(random.Random(number), number * 1000, 20))
        lakeseek.create_index(root, ["id"], engine="local")
        lakes.append(lakeseek.open_index(root))
    for handle in lakes * 2:
        handle.files("id = 5")
    assert _listings(lakes[-1]) == 0  # watched: used last
    assert _listings(lakes[0]) == 1  # unwatched to make room, listed (and watched) again
    for number, handle in enumerate(lakes):
        write_file(f"{handle.source}/part-1.parquet", typed_rows(random.Random(9), 50_000 + number, 1))
        assert ids(handle.read(f"id = {50_000 + number}")) == [50_000 + number]


@pytest.mark.parametrize("swap", ["parent renamed", "root symlink repointed"])
def test_a_tree_swapped_in_under_the_same_path_is_listed_again(tmp_path, swap):
    """The watches are on the old tree's directories, which the swap leaves untouched: the
    path leading to another directory must be seen (blue/green deployments of a lake)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def put(path, values):
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": pa.array(values, pa.int64())}), path)

    put(tmp_path / "blue" / "lake" / "a.parquet", [1, 2])
    put(tmp_path / "green" / "lake" / "a.parquet", [1, 2])
    put(tmp_path / "green" / "lake" / "b.parquet", [3, 4])
    if swap == "parent renamed":
        os.rename(tmp_path / "blue", tmp_path / "live")
        lake = tmp_path / "live" / "lake"
    else:
        os.symlink(tmp_path / "blue" / "lake", tmp_path / "current")
        lake = tmp_path / "current"
    lakeseek.create_index(str(lake), ["id"], engine="local")
    index = lakeseek.open_index(str(lake))
    assert sorted(r["id"] for r in index.read("id >= 1").to_pylist()) == [1, 2]
    if swap == "parent renamed":
        os.rename(tmp_path / "live", tmp_path / "old")
        os.rename(tmp_path / "green", tmp_path / "live")
    else:
        os.symlink(tmp_path / "green" / "lake", tmp_path / "next")
        os.replace(tmp_path / "next", tmp_path / "current")
    assert sorted(r["id"] for r in index.read("id >= 1").to_pylist()) == [1, 2, 3, 4]
    assert index.read("id = 3").num_rows == 1
