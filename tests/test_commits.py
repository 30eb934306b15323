"""The commit loop: a lost race re-applies the transaction on the winner's version when its
requirements still hold, or prepares it again when they do not; the tries are bounded (and
configurable) and the message counts them truly; the log says what each version changed."""

from __future__ import annotations

import os
import shutil

import pytest

import lakeseek
from lakeseek.commits.log import IndexLog
from lakeseek.commits.transaction import DEFAULT_COMMIT_TRIES
from lakeseek.exceptions import CommitFailedError
from lakeseek.operations import refresh
from tests.lakes import data_files, partition_of

pytestmark = pytest.mark.spark  # the lake's index is built with Spark


def test_a_commit_that_always_loses_gives_up_after_the_stated_tries(lake_copy, monkeypatch):
    tries = []

    def losing(self, root, actions=(), owner=""):
        tries.append(root.version)
        raise CommitFailedError(f"version {root.version} exists")

    monkeypatch.setattr(IndexLog, "commit", losing)
    with pytest.raises(CommitFailedError, match=f"after {DEFAULT_COMMIT_TRIES} tries"):
        lakeseek.delete_index(lake_copy)
    assert len(tries) == DEFAULT_COMMIT_TRIES
    with pytest.raises(CommitFailedError, match="after 3 tries"):
        lakeseek.delete_index(lake_copy, commit_tries=3)
    assert len(tries) == DEFAULT_COMMIT_TRIES + 3
    monkeypatch.undo()
    assert lakeseek.open_index(lake_copy).root.state == "active"


def test_a_race_lost_to_a_writer_that_changed_the_data_prepares_again(lake_copy, monkeypatch):
    """A quick refresh loses its first commit to a rival quick refresh that recorded another
    new file: its change no longer applies on the rival's version, so it is prepared again
    there, and the version committed records both files."""
    real_commit, real_refresh = IndexLog.commit, refresh._refresh
    prepared = []

    def counting_refresh(op, base, mode, runner):
        prepared.append(base.version)
        return real_refresh(op, base, mode, runner)

    def commit_after_a_rival(self, root, actions=(), owner=""):
        if len(prepared) == 1:
            monkeypatch.setattr(IndexLog, "commit", real_commit)
            shutil.copy(data_files(lake_copy)[1], f"{partition_of(lake_copy)}/rival.parquet")
            lakeseek.refresh_index(lake_copy, "quick")  # prepared too: the count goes to 2
        return real_commit(self, root, actions, owner)

    monkeypatch.setattr(refresh, "_refresh", counting_refresh)
    monkeypatch.setattr(IndexLog, "commit", commit_after_a_rival)
    shutil.copy(data_files(lake_copy)[0], f"{partition_of(lake_copy)}/mine.parquet")
    index = lakeseek.refresh_index(lake_copy, "quick")
    assert len(prepared) == 3 and prepared[2] > prepared[0], prepared
    partition = os.path.relpath(partition_of(lake_copy), lake_copy)
    assert sorted(index.status().recorded_files) == [f"{partition}/mine.parquet", f"{partition}/rival.parquet"]


def test_a_race_lost_to_a_writer_that_left_the_requirements_holding_applies_on_top(lake_copy, monkeypatch):
    """A delete loses its first commit to a rival that only added files (a quick refresh): its
    requirement (the index is active) still holds on the rival's version, so the same
    transaction is applied on top of it, without being prepared again."""
    from lakeseek.format.actions import SetState
    from lakeseek.operations import state

    real_commit = IndexLog.commit
    prepared, tried = [], []

    def preparing(new_state):
        prepared.append(new_state)
        return SetState(new_state)

    def commit_after_a_rival(self, root, actions=(), owner=""):
        if root.operation == "delete" and not tried:
            tried.append(root.version)
            shutil.copy(data_files(lake_copy)[0], f"{partition_of(lake_copy)}/rival.parquet")
            lakeseek.refresh_index(lake_copy, "quick")
        return real_commit(self, root, actions, owner)

    monkeypatch.setattr(state, "SetState", preparing)
    monkeypatch.setattr(IndexLog, "commit", commit_after_a_rival)
    deleted = lakeseek.delete_index(lake_copy)
    assert prepared == ["deleted"] and deleted.version == tried[0] + 1
    rival = os.path.join(os.path.relpath(partition_of(lake_copy), lake_copy), "rival.parquet")
    assert deleted.root.state == "deleted" and deleted.status().recorded_files == [rival]


def test_the_log_says_what_each_version_changed(lake_copy):
    shutil.copy(data_files(lake_copy)[0], f"{partition_of(lake_copy)}/new.parquet")
    lakeseek.refresh_index(lake_copy, "quick")
    lakeseek.delete_index(lake_copy)
    index = lakeseek.restore_index(lake_copy)
    entries = index.history()
    assert [entry.operation for entry in entries] == ["create", "refresh quick", "delete", "restore"]
    assert entries[0].actions == ()  # a create writes the whole root
    assert {"action": "record_files", "files": 1} in entries[1].actions
    assert entries[2].actions == ({"action": "set_state", "state": "deleted"},)
    assert [entry.version for entry in index.history(since=entries[1].version)] == [
        entries[2].version,
        entries[3].version,
    ]


def _small_lake(tmp_path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "lake"
    root.mkdir()
    for number in range(3):
        pq.write_table(pa.table({"id": list(range(number * 100, number * 100 + 100))}), root / f"p{number}.parquet")
    return str(root)


def _log_puts_answer(monkeypatch, answer: str, writes: bool = True) -> None:
    """Log entries' puts that reach the store but whose answer is lost: a retry finds the entry
    there ("exists"), or no answer comes at all ("timeout")."""
    from lakeseek.io.local import LocalStorage

    put = LocalStorage.put_if_absent

    def lossy(self, path, data, owner=""):
        if "/log/" not in path:
            return put(self, path, data, owner)
        if writes:
            put(self, path, data, owner)
        raise FileExistsError(path) if answer == "exists" else TimeoutError("the store did not answer in 30 s")

    monkeypatch.setattr(LocalStorage, "put_if_absent", lossy)


@pytest.mark.parametrize("answer", ["exists", "timeout"])
def test_a_commit_whose_answer_was_lost_is_the_operations_and_keeps_its_files(tmp_path, monkeypatch, answer):
    """Found by a hunt with a proxy before moto and Azurite: the store wrote the log entry and
    the answer was lost (a retry then said the entry exists) or never came. The operation said
    another writer won ("already deleted", a timeout), deleted the files its entry references,
    and left that version committed and damaged; a refresh committed its entry twice."""
    import pyarrow as pa

    from lakeseek import layout

    lake = _small_lake(tmp_path)
    layout_rows = pa.table({"x": list(range(50))})
    _log_puts_answer(monkeypatch, answer)
    lakeseek.create_index(lake, ["id"], engine="local")
    lakeseek.refresh_index(lake, "full", engine="local")
    lakeseek.delete_index(lake)
    lakeseek.restore_index(lake)
    layout.write(layout_rows, f"{tmp_path}/otree", ["x"])
    monkeypatch.undo()
    index = lakeseek.open_index(lake)
    assert [entry.version for entry in index.history()] == [0, 1, 2, 3]
    assert index.status().problems == [] and index.plan("id = 150").index_used
    assert index.read("id = 150").num_rows == 1
    assert layout.read(f"{tmp_path}/otree").num_rows == layout_rows.num_rows


def test_a_commit_that_got_no_answer_and_is_not_there_keeps_the_operations_files(tmp_path, monkeypatch):
    """An empty place after no answer: the put may still land, so the files its entry would
    reference are kept (vacuum takes them if it never does), and the error says so."""
    lake = _small_lake(tmp_path)
    lakeseek.create_index(lake, ["id"], engine="local")
    written_before = set(_index_files(lake))
    _log_puts_answer(monkeypatch, "timeout", writes=False)
    with pytest.raises(lakeseek.CommitOutcomeUnknownError, match=r"got no answer .* its files are kept"):
        lakeseek.refresh_index(lake, "full", engine="local")
    monkeypatch.undo()
    assert set(_index_files(lake)) > written_before
    lakeseek.vacuum_index(lake, retention_hours=0)
    assert set(_index_files(lake)) == written_before


def _index_files(lake: str) -> list[str]:
    home = f"{lake}/_lakeseek/default/data"
    return [os.path.join(d, name) for d, _, names in os.walk(home) for name in names]
