"""The commit loop: a lost race re-applies the change on the winner's version, or prepares it
again when it no longer applies; the tries are bounded and the message counts them truly."""

from __future__ import annotations

import shutil

import pytest

import lakeseek
from lakeseek.exceptions import CommitFailedError
from lakeseek.lifecycle import operations
from tests.lakes import data_files

pytestmark = pytest.mark.spark  # the lake's index is built with Spark


def test_a_commit_that_always_loses_gives_up_after_the_stated_tries(lake_copy, monkeypatch):
    tries = []

    def losing(self, root):
        tries.append(root.version)
        raise CommitFailedError(f"version {root.version} exists")

    monkeypatch.setattr(operations._Operation, "commit", losing)
    with pytest.raises(CommitFailedError, match=f"after {operations.MAX_COMMIT_ATTEMPTS} tries"):
        lakeseek.delete_index(lake_copy)
    assert len(tries) == operations.MAX_COMMIT_ATTEMPTS
    assert lakeseek.open_index(lake_copy).root.state == "active"


def test_a_race_lost_to_a_writer_that_changed_the_data_prepares_again(lake_copy, monkeypatch):
    """A quick refresh loses its first commit to a rival quick refresh that recorded another
    new file: its change no longer applies on the rival's version, so it is prepared again
    there, and the version committed records both files."""
    real_commit, real_refresh = operations._Operation.commit, operations._refresh
    prepared = []

    def counting_refresh(op, base, mode, runner):
        prepared.append(base.version)
        return real_refresh(op, base, mode, runner)

    def commit_after_a_rival(self, root):
        if len(prepared) == 1:
            monkeypatch.setattr(operations._Operation, "commit", real_commit)
            shutil.copy(data_files(lake_copy)[1], f"{lake_copy}/rival.parquet")
            lakeseek.refresh_index(lake_copy, "quick")  # prepared too: the count goes to 2
        return real_commit(self, root)

    monkeypatch.setattr(operations, "_refresh", counting_refresh)
    monkeypatch.setattr(operations._Operation, "commit", commit_after_a_rival)
    shutil.copy(data_files(lake_copy)[0], f"{lake_copy}/mine.parquet")
    index = lakeseek.refresh_index(lake_copy, "quick")
    assert len(prepared) == 3 and prepared[2] > prepared[0], prepared
    assert sorted(index.status().recorded_files) == ["mine.parquet", "rival.parquet"]
