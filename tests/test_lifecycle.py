"""The index through its life: refreshes, optimizes, delete/restore, vacuum, leases and races."""

from __future__ import annotations

import json
import os
import random
import threading

import pytest

import lakeseek
from lakeseek.commits.leases import Lease, Leases
from lakeseek.exceptions import IndexAlreadyExistsError, LakeseekError, OperationCancelledError
from lakeseek.lru import CACHES
from tests.lakes import all_rows, data_files, files_with, ids, matching, to_sql, typed_rows, write_file
from tests.lifecycle import LakeChanger, assert_exact

pytestmark = pytest.mark.spark

OPERATIONS = [
    ("refresh", "incremental"),
    ("refresh", "incremental"),
    ("refresh", "quick"),
    ("refresh", "full"),
    ("optimize", "quick"),
    ("optimize", "full"),
    ("delete", None),
    ("restore", None),
    ("vacuum", None),
]


def _assert_served_by_the_index(index: lakeseek.Index, keys: list[int]) -> None:
    """Lookups of ``id`` go through ``index``: its files are read, and it names exactly the
    files holding each key (and the files it does not cover), not every file of the lake.

    ``assert_exact`` alone cannot tell: a query falling back to a full scan passes it."""
    rows = all_rows(index.lake_root)
    unindexed = {f"{index.lake_root}/{path}" for path in index.lake_state().unindexed}
    stats = index.storage.stats
    for key in keys:
        tree = ("=", "id", key)
        where = to_sql(tree)
        holding = set(files_with(rows, tree))
        assert holding, where  # a key the lake holds, so that the index has entries to read
        CACHES["index entries"].clear()  # decoded entries kept from before would spare the reads
        before = stats.snapshot()["reads"]
        plan = index.plan(where)
        assert plan.index_used, (where, plan.reason)
        assert stats.snapshot()["reads"] > before, where
        assert set(index.files(where)) == holding | unindexed, where
        assert len(plan.files) < plan.total_files, where


def _first_id(path: str) -> int:
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=["id"]).column("id")[0].as_py()


def _apply(lake: str, operation: str, mode: str | None, spark) -> None:
    if operation == "refresh":
        lakeseek.refresh_index(lake, mode, engine="local")
    elif operation == "optimize":
        lakeseek.optimize_index(lake, mode, engine="local")
    elif operation == "delete":
        if lakeseek.open_index(lake).root.state == "active":
            lakeseek.delete_index(lake)
    elif operation == "restore":
        if lakeseek.open_index(lake).root.state == "deleted":
            lakeseek.restore_index(lake)
    else:
        lakeseek.vacuum_index(lake, retention_hours=0)


@pytest.mark.parametrize("seed", range(6))
def test_random_changes_and_operations_stay_exact(lake_copy, spark, seed):
    rng = random.Random(seed)
    changer = LakeChanger(lake_copy, rng)
    for _ in range(14):
        for _ in range(rng.randrange(0, 3)):
            changer.random_change()
        operation, mode = rng.choice(OPERATIONS)
        if lakeseek.open_index(lake_copy).root.state == "deleted" and operation in ("refresh", "optimize"):
            operation, mode = "restore", None
        _apply(lake_copy, operation, mode, spark)
        index = assert_exact(lake_copy, rng)
        lineage = index.lineage()
        assert len(set(lineage.paths)) == len(lineage.paths), "a file is indexed twice"
        assert not set(lineage.ids) & index.root.lineage.removed


def test_incremental_refresh_adds_a_segment_and_tombstones(lake_copy):
    rng = random.Random(1)
    changer = LakeChanger(lake_copy, rng)
    before = lakeseek.open_index(lake_copy)
    main_files = {f.path for f in before.root.content.indexes["id"].files}
    changer.append()
    removed = changer.remove()
    changer.rewrite()
    after = lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    segments = after.root.content.indexes["id"].segments
    assert len(segments) == 2 and {f.path for f in segments[0].files} == main_files  # not rewritten
    assert len(after.root.lineage.removed) == 2  # the removed and the rewritten file
    assert after.status().is_fresh and removed
    assert_exact(lake_copy, rng)
    status = after.status()
    assert status.tombstoned_files == 2 and status.columns[0].segments == 2


def test_quick_refresh_records_files_for_hybrid_scan(lake_copy):
    rng = random.Random(2)
    changer = LakeChanger(lake_copy, rng)
    added = changer.append()
    index = lakeseek.refresh_index(lake_copy, "quick")
    state = index.lake_state()
    assert os.path.relpath(added, lake_copy) in state.recorded and not state.new
    assert index.root.content.segments == 1  # nothing indexed
    assert_exact(lake_copy, rng)
    indexed = lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    assert indexed.lake_state().is_fresh and indexed.root.lineage.pending is None
    assert_exact(lake_copy, rng)


def test_optimize_folds_segments_back(lake_copy, spark):
    rng = random.Random(3)
    changer = LakeChanger(lake_copy, rng)
    original = lakeseek.open_index(lake_copy).root.content.indexes["id"].segments[0].files
    for _ in range(3):
        changer.append()
        lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    changer.remove()
    lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    assert len(lakeseek.open_index(lake_copy).root.content.indexes["id"].segments) == 4
    quick = lakeseek.optimize_index(lake_copy, "quick")
    assert len(quick.root.content.indexes["id"].segments) == 2
    assert_exact(lake_copy, rng)
    full = lakeseek.optimize_index(lake_copy, "full", spark=spark)
    column = full.root.content.indexes["id"]
    assert len(column.segments) == 1 and not full.root.lineage.removed and len(full.root.lineage.parts) == 1
    # Algorithm 2: ranges that received no new ids and lost no files keep their index files.
    kept = {f.path for f in original} & {f.path for f in column.files}
    assert kept, "every index file was rewritten"
    assert_exact(lake_copy, rng)
    assert lakeseek.optimize_index(lake_copy, "full", spark=spark).version == full.version  # nothing left to do


def test_delete_restore_and_vacuum(lake_copy):
    rng = random.Random(4)
    deleted = lakeseek.delete_index(lake_copy)
    plan = deleted.plan("id = 5")
    assert not plan.index_used and "deleted" in plan.reason and len(plan.files) == plan.total_files
    assert_exact(lake_copy, rng)
    with pytest.raises(LakeseekError, match="already deleted"):
        lakeseek.delete_index(lake_copy)
    with pytest.raises(LakeseekError, match="restore it first"):
        lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    lakeseek.restore_index(lake_copy)
    assert lakeseek.open_index(lake_copy).plan("id = 5").index_used
    added = LakeChanger(lake_copy, rng).append()
    lakeseek.refresh_index(lake_copy, "full", engine="local")
    index_dir = f"{lake_copy}/_lakeseek/default"
    kept = lakeseek.vacuum_index(lake_copy)  # default retention keeps recent versions
    assert kept.files_deleted == 0 and kept.versions_deleted == 0
    result = lakeseek.vacuum_index(lake_copy, retention_hours=0)
    assert result.files_deleted > 0 and result.versions_deleted == 3
    latest = lakeseek.open_index(lake_copy)
    on_disk = {os.path.relpath(os.path.join(d, n), index_dir) for d, _, names in os.walk(index_dir) for n in names}
    assert on_disk == latest.root.referenced_paths() | {f"log/{latest.version:020d}.json"}
    assert_exact(lake_copy, rng)
    # What vacuum left still serves lookups (assert_exact passes a full scan too).
    _assert_served_by_the_index(latest, [5, 1799, _first_id(added)])


def test_create_adds_columns_and_named_indexes(lake_copy, spark):
    rng = random.Random(5)
    with pytest.raises(IndexAlreadyExistsError, match="already covers"):
        lakeseek.create_index(lake_copy, ["id"], spark=spark)
    LakeChanger(lake_copy, rng).rewrite()
    other = lakeseek.create_index(lake_copy, ["code"], spark=spark, name="codes")
    assert other.name == "codes" and other.columns == ["code"]
    assert {i.name for i in lakeseek.list_indexes(lake_copy)} == {"default", "codes"}
    assert lakeseek.open_index(lake_copy).name == "default"  # "default" wins when there are several
    assert_exact(lake_copy, rng, name="codes")
    assert_exact(lake_copy, rng)


def test_a_dead_operation_is_recovered_by_the_next(lake_copy):
    index_dir = f"{lake_copy}/_lakeseek/default"
    leases = Leases(lakeseek.open_index(lake_copy).storage, index_dir)
    dead = Lease("deadbeef" * 4, "refresh incremental", os.uname().nodename, 2**22 + 12345, 0, 2**62)
    with open(leases.path(dead.operation_id), "w") as f:
        json.dump(dead.__dict__, f)
    debris = f"{index_dir}/data/{dead.operation_id}/c0-x.parquet"
    os.makedirs(os.path.dirname(debris))
    with open(debris, "wb") as f:
        f.write(b"half an index file")
    assert lakeseek.open_index(lake_copy).status().running_operations == []
    LakeChanger(lake_copy, random.Random(6)).append()
    lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    assert not os.path.exists(debris) and not os.path.exists(leases.path(dead.operation_id))


def test_cancel_stops_an_operation_before_it_commits(lake_copy, monkeypatch):
    from lakeseek.kinds.sorted_index import build

    real = build.IndexJob.run
    cancelled = []

    def run_then_get_cancelled(self, *args, **kwargs):
        segments = real(self, *args, **kwargs)
        cancelled.extend(lakeseek.cancel_operations(lake_copy))
        return segments

    monkeypatch.setattr(build.IndexJob, "run", run_then_get_cancelled)
    LakeChanger(lake_copy, random.Random(7)).append()
    version = lakeseek.open_index(lake_copy).version
    with pytest.raises(OperationCancelledError):
        lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    assert [lease.operation for lease in cancelled] == ["refresh incremental"]
    index = lakeseek.open_index(lake_copy)
    assert index.version == version + 1 and index.root.operation == "cancel"  # the cancel is in the log
    operations = [entry.actions[0]["operations"] for entry in index.history(version)]
    assert operations == [[cancelled[0].operation_id]]
    assert not os.listdir(f"{lake_copy}/_lakeseek/default/_leases")
    assert not os.path.exists(f"{lake_copy}/_lakeseek/default/data/{cancelled[0].operation_id}")


@pytest.mark.parametrize("mode", ["incremental", "full"])
def test_a_cancel_between_the_last_check_and_the_commit_wins(lake_copy, monkeypatch, mode):
    """The operation checked its lease, then a cancel (and a vacuum) ran before its commit:
    the cancel's version takes the number the operation commits as, so the operation reads
    it, finds its lease gone and does not commit files the cancel deleted."""
    from lakeseek.commits.log import IndexLog

    real = IndexLog.commit
    cancelled = []

    def commit_after_a_cancel(self, root, actions=(), owner=""):
        if root.operation.startswith("refresh") and not cancelled:
            cancelled.extend(lakeseek.cancel_operations(lake_copy))
            lakeseek.vacuum_index(lake_copy, retention_hours=0)
        return real(self, root, actions, owner)

    monkeypatch.setattr(IndexLog, "commit", commit_after_a_cancel)
    LakeChanger(lake_copy, random.Random(7)).append()
    with pytest.raises(OperationCancelledError):
        lakeseek.refresh_index(lake_copy, mode, engine="local")
    index = lakeseek.open_index(lake_copy)
    assert cancelled and index.root.operation == "cancel" and not index.status().problems
    assert index.plan("id = 5").index_used


def test_optimize_rebases_over_a_refresh_that_committed_first(lake_copy, monkeypatch):
    """The loser of a race re-applies its still-valid work on top of the winner."""
    rng = random.Random(8)
    changer = LakeChanger(lake_copy, rng)
    for _ in range(2):
        changer.append()
        lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    import lakeseek.kinds.sorted_index as sorted_kind

    real = sorted_kind.merge_increments
    raced = []

    def merge_while_another_refreshes(*args, **kwargs):
        if not raced:
            raced.append(changer.append())
            lakeseek.refresh_index(lake_copy, "incremental", engine="local")
        return real(*args, **kwargs)

    monkeypatch.setattr(sorted_kind, "merge_increments", merge_while_another_refreshes)
    optimized = lakeseek.optimize_index(lake_copy, "quick")
    assert optimized.root.operation == "optimize quick" and optimized.version == 4
    assert len(optimized.root.content.indexes["id"].segments) == 3  # main, merged, and the racing refresh's
    assert optimized.lake_state().is_fresh
    assert_exact(lake_copy, rng)


def test_refresh_redoes_its_work_when_another_refresh_won(lake_copy, monkeypatch):
    rng = random.Random(9)
    changer = LakeChanger(lake_copy, rng)
    changer.append()
    from lakeseek.kinds.sorted_index import build

    real = build.IndexJob.run
    raced = []

    def run_while_another_refreshes(self, *args, **kwargs):
        if not raced:
            raced.append(True)
            lakeseek.refresh_index(lake_copy, "incremental", engine="local")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(build.IndexJob, "run", run_while_another_refreshes)
    changer.append()
    index = lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    lineage = index.lineage()
    assert len(set(lineage.paths)) == len(lineage.paths) == len(data_files(lake_copy))
    assert index.lake_state().is_fresh
    assert_exact(lake_copy, rng)


@pytest.mark.parametrize("operation", ["refresh", "optimize"])
def test_work_on_a_version_a_vacuum_removed_meanwhile_starts_again_on_the_newest(lake_copy, monkeypatch, operation):
    """Another writer commits and a vacuum keeping only the newest version (retention 0)
    removes the files of the version an operation read (its increment filters) before the
    operation completes: a race it lost, which it runs again on the newest version, not
    damage ("increment filter file ... is missing")."""
    rng = random.Random(10)
    changer = LakeChanger(lake_copy, rng)
    for _ in range(2):
        changer.append()
        lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    import lakeseek.kinds.sorted_index as sorted_kind

    real = sorted_kind.SortedKind.complete
    raced = []

    def complete_after_another_writer_and_a_vacuum(self, content, previous, files):
        if not raced:
            raced.append(True)
            changer.append()
            lakeseek.refresh_index(lake_copy, "incremental", engine="local")
            assert lakeseek.vacuum_index(lake_copy, retention_hours=0).files_deleted > 0
        return real(self, content, previous, files)

    monkeypatch.setattr(sorted_kind.SortedKind, "complete", complete_after_another_writer_and_a_vacuum)
    changer.append()
    if operation == "refresh":
        index = lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    else:
        index = lakeseek.optimize_index(lake_copy, "quick")
    # The other writer's refresh indexed the file this refresh was for: nothing was left to commit.
    assert raced and index.version == {"refresh": 3, "optimize": 4}[operation]
    assert index.root.operation.startswith(operation)
    assert lakeseek.open_index(lake_copy).status().problems == []
    assert_exact(lake_copy, rng)


def test_snapshot_readers_survive_optimize_and_vacuum(lake_copy):
    rng = random.Random(10)
    changer = LakeChanger(lake_copy, rng)
    first = changer.append()
    lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    reader = lakeseek.open_index(lake_copy)
    reader.read("code = 7")  # a reader that has queried: footers cached
    second = changer.append()
    lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    optimized = lakeseek.optimize_index(lake_copy, "full", engine="local")
    # The reader's version needs index files the latest one dropped: the increment of ``first``,
    # folded into the main index, and the main index file that took its ids.
    dropped = reader.root.referenced_paths() - optimized.root.referenced_paths()
    assert {path for path in dropped if path.startswith("data/")}, dropped
    lakeseek.vacuum_index(lake_copy)  # within retention: the old version's files stay
    assert all(os.path.exists(f"{reader.index_dir}/{path}") for path in dropped)
    assert reader.lake_state().unindexed == [os.path.relpath(second, lake_copy)]  # new since its version
    # Keys it never looked up, in those dropped files: read through them, not by a fallback scan.
    _assert_served_by_the_index(reader, [_first_id(first), 1799])
    rows = all_rows(lake_copy)
    assert ids(reader.read("code = 7")) == ids(matching(rows, ("=", "code", 7)))
    assert reader.plan("code = 7").index_used


def _interleaved_increments(lake: str, count: int) -> None:
    """``count`` incremental refreshes, each adding ids j, j+97, j+194... < 1800: every increment's
    key range spans the main index's, and id 1050 (1050 % 97 = 80) is in none of them."""
    rng = random.Random(11)
    for j in range(count):
        rows = typed_rows(rng, 0, 1800 // 97)
        for n, row in enumerate(rows):
            row["id"] = j + 97 * n
        write_file(f"{lake}/region=east/increment-{j}.parquet", rows)
        lakeseek.refresh_index(lake, "incremental", engine="local")


def test_increment_filters_keep_cold_lookups_cheap(lake_copy):
    _interleaved_increments(lake_copy, 6)
    index = lakeseek.open_index(lake_copy)
    content = index.root.content
    assert len(content.indexes["id"].segments) == 7 and content.increment_filters is not None
    stats = index.storage.stats
    before = stats.snapshot()["reads"]
    assert len(index.files("id = 1050")) == 1
    # main footer and chunk, and the increment filter file: no increment's footer or chunk
    assert stats.snapshot()["reads"] - before == 3
    before = stats.snapshot()["reads"]
    assert len(index.files("id = 194")) == 2  # in the main index and in increment 0
    # another main index file (footer and chunk), and increment 0's footer and chunk: no other increment's
    assert stats.snapshot()["reads"] - before == 4
    assert_exact(lake_copy, random.Random(12))
    optimized = lakeseek.optimize_index(lake_copy, "full", engine="local")
    assert optimized.root.content.increment_filters is None


def test_damaged_increment_filters_fall_back_to_a_scan(lake_copy):
    _interleaved_increments(lake_copy, 2)
    index = lakeseek.open_index(lake_copy)
    with open(f"{index.index_dir}/{index.root.content.increment_filters.path}", "r+b") as f:
        f.truncate(20)
    plan = lakeseek.open_index(lake_copy).plan("id = 1050")
    assert not plan.index_used and "increment filter file" in plan.reason
    assert_exact(lake_copy, random.Random(13))


# -- where the index may live ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("home", "name", "reason"),
    [
        ("{lake}/region=east", None, "inside the lake .* skip the data files under region=east"),
        ("{lake}/idx", None, "inside the lake .* read the index files as data"),
        ("{lake}", None, "inside the lake .* read the index files as data"),
        ("{parent}", "lake", "the lake would be inside the index directory .* vacuum"),
    ],
)
def test_an_index_home_visible_in_the_lake_is_refused(lake_copy, home, name, reason):
    home = home.format(lake=lake_copy, parent=os.path.dirname(lake_copy))
    before = data_files(lake_copy)
    with pytest.raises(LakeseekError, match=reason) as refused:
        lakeseek.create_index(lake_copy, ["id"], index=home, name=name)
    assert "\n" not in str(refused.value)
    with pytest.raises(LakeseekError, match=reason):
        lakeseek.open_index(lake_copy, index=home, name=name)
    assert data_files(lake_copy) == before  # nothing was written into the lake


def test_an_index_home_under_a_hidden_directory_of_the_lake_is_allowed(lake_copy, spark):
    home = f"{lake_copy}/_indexes/more"
    lakeseek.create_index(lake_copy, ["id"], index=home, spark=spark)
    index = lakeseek.open_index(lake_copy, index=home)
    assert index.status().is_fresh
    assert index.read("id = 5").num_rows == 1
    assert index.scan("id >= 0").num_rows == 1800


# -- F18: a column added while indexed files were out of the lake ---------------------------------
def _event_lake(lake: str) -> None:
    """3 date partitions of 2 files; every file holds rows of event 'ev-20'."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    record = 0
    for day in (1, 2, 3):
        os.makedirs(f"{lake}/date=2024-01-0{day}")
        for part in range(2):
            rows = 10 + day
            table = pa.table(
                {
                    "record_id": pa.array(range(record, record + rows), pa.int64()),
                    "event_id": pa.array([f"ev-{20 if n % 2 else n}" for n in range(rows)], pa.string()),
                }
            )
            pq.write_table(table, f"{lake}/date=2024-01-0{day}/part-{part}.parquet")
            record += rows


def _event_rows(lake: str, event: str) -> int:
    from tests.lakes import all_rows

    return sum(1 for row in all_rows(lake) if row["event_id"] == event)


def test_a_column_added_while_files_were_moved_out_covers_them_when_they_return(tmp_path, spark):
    lake, away = str(tmp_path / "lake"), str(tmp_path / "away")
    _event_lake(lake)
    kept = lakeseek.create_index(lake, ["record_id"], spark=spark)
    # A partition directory moved out and back keeps its files' inodes and ctimes: the same stamps.
    os.rename(f"{lake}/date=2024-01-02", away)
    lakeseek.create_index(lake, ["event_id"], spark=spark)  # the files of 2024-01-02 are not there to index
    os.rename(away, f"{lake}/date=2024-01-02")
    expected = _event_rows(lake, "ev-20")
    assert expected == 34

    index = lakeseek.open_index(lake)
    assert not index.status().is_fresh  # the moved-back files are not covered by every column
    assert index.read("event_id = 'ev-20'").num_rows == expected
    assert kept.read("record_id = 25").num_rows == 1  # a handle opened before the add
    assert len(index.locate(["ev-20"], column="event_id")) == 6
    refreshed = lakeseek.refresh_index(lake, "incremental", engine="local")
    assert refreshed.status().is_fresh
    assert refreshed.read("event_id = 'ev-20'").num_rows == expected
    assert refreshed.plan("event_id = 'ev-20'").unindexed_files == 0
    optimized = lakeseek.optimize_index(lake, "full", engine="local")
    assert optimized.status().is_fresh and optimized.read("event_id = 'ev-20'").num_rows == expected
    for handle in (index, refreshed, optimized, kept, lakeseek.open_index(lake)):
        assert handle.read("event_id = 'ev-20'").num_rows == expected
        assert handle.read("record_id = 25").num_rows == 1


def test_an_operation_past_its_lease_does_not_commit(lake_copy, monkeypatch):
    """Vacuum takes the files of expired leases: an operation whose lease is about to expire
    stops instead of committing files that may be gone."""
    from lakeseek.commits import leases
    from lakeseek.operations import protocol

    monkeypatch.setattr(leases, "LEASE_TTL_MS", 1000)
    monkeypatch.setattr(protocol, "COMMIT_MARGIN_MS", 2000)
    LakeChanger(lake_copy, random.Random(7)).append()
    version = lakeseek.open_index(lake_copy).version
    with pytest.raises(OperationCancelledError, match="ran too long"):
        lakeseek.refresh_index(lake_copy, "incremental", engine="local")
    assert lakeseek.open_index(lake_copy).version == version


def test_a_cancel_in_the_middle_of_a_build_is_a_cancel(lake_copy, monkeypatch):
    """The cancel deletes files the build is still writing and reading (spill files): the
    operation stops with OperationCancelledError, not with the missing file."""
    from lakeseek.kinds import file_keys

    real = file_keys.FileKeyReader.distinct_keys
    cancelled = []

    def read_then_get_cancelled(self, *args, **kwargs):
        found = real(self, *args, **kwargs)
        if not cancelled:
            cancelled.extend(lakeseek.cancel_operations(lake_copy))
        return found

    monkeypatch.setattr(file_keys.FileKeyReader, "distinct_keys", read_then_get_cancelled)
    changer = LakeChanger(lake_copy, random.Random(11))
    for _ in range(3):
        changer.append()
    with pytest.raises(OperationCancelledError):
        lakeseek.refresh_index(lake_copy, "full", engine="local")
    assert cancelled and not lakeseek.open_index(lake_copy).status().problems


def test_vacuums_at_once_each_finish(lake_copy):
    changer = LakeChanger(lake_copy, random.Random(12))
    failures = []

    def vacuum():
        try:
            lakeseek.vacuum_index(lake_copy, retention_hours=0)
        except Exception as error:
            failures.append(error)

    for _ in range(3):
        for _ in range(3):
            changer.append()
            lakeseek.refresh_index(lake_copy, "incremental", engine="local")
        lakeseek.optimize_index(lake_copy, "full", engine="local")
        threads = [threading.Thread(target=vacuum) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not failures, failures
    assert not lakeseek.open_index(lake_copy).status().problems


@pytest.mark.parametrize("operation", ["refresh", "add columns", "optimize"])
def test_work_that_loses_the_race_to_a_delete_does_not_commit_on_it(lake_copy, monkeypatch, operation):
    from lakeseek.commits.log import IndexLog

    lakeseek.create_index(lake_copy, ["id"], engine="local", name="extra")
    real = IndexLog.commit
    deleted = []

    def commit_after_a_delete(self, root, actions=(), owner=""):
        if root.operation.startswith(operation) and not deleted:
            deleted.append(lakeseek.delete_index(lake_copy, name="extra"))
        return real(self, root, actions, owner)

    monkeypatch.setattr(IndexLog, "commit", commit_after_a_delete)
    LakeChanger(lake_copy, random.Random(13)).append()
    if operation == "optimize":
        lakeseek.refresh_index(lake_copy, "incremental", engine="local", name="extra")
    work = {
        "refresh": lambda: lakeseek.refresh_index(lake_copy, "incremental", engine="local", name="extra"),
        "add columns": lambda: lakeseek.create_index(lake_copy, ["code"], engine="local", name="extra"),
        "optimize": lambda: lakeseek.optimize_index(lake_copy, "full", engine="local", name="extra"),
    }[operation]
    with pytest.raises(lakeseek.LakeseekError, match="restore it first"):
        work()
    assert deleted and lakeseek.open_index(lake_copy, name="extra").root.operation == "delete"
