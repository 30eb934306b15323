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
