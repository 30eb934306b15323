"""explain: what the index was used for, what it cost, and why not."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

import lakeseek
from lakeseek.caches import clear_cache
from lakeseek.cli.main import main

pytestmark = pytest.mark.spark


def test_explain_a_needle(typed_lake):
    clear_cache()  # a cold lookup: what earlier tests decoded is not reused
    index = lakeseek.open_index(typed_lake)
    result = index.explain("id = 200 AND score > 0", analyze=True)
    assert result.index_used and result.columns_used == ("id",)
    assert result.candidate_files == len(index.files("id = 200")) == 1
    assert result.total_files == 12 and result.index_reads >= 1
    assert result.estimated.total < result.scan.total and result.actual.total < result.scan.total
    assert any("score" in note for note in result.notes)
    assert result.rows == index.read("id = 200 AND score > 0").num_rows


@pytest.mark.parametrize(
    ("where", "why", "notes"),
    [
        ("score > 1", r"column 'score' is not indexed", ("column 'score' is not indexed",)),
        # code is in every file: the index could remove none
        (
            "code >= 0",
            r"reading the index \(~[0-9.,]+ K?i?B\) would cost more than it saves: ~12 of 12 files would remain",
            (),
        ),
        # id is indexed: the reason names the operator the index does not serve
        ("id <> 3", r"'<>' on 'id' is not served by the index", ("'<>' on 'id' is not served by the index",)),
        ("TRUE", r"no indexed column narrows the predicate", ()),
    ],
)
def test_explain_why_not(typed_lake, where, why, notes):
    result = lakeseek.open_index(typed_lake).explain(where)
    assert not result.index_used and result.why_not, result
    assert why is None or re.fullmatch(why, result.why_not), result.why_not
    assert result.notes == notes
    assert [line for line in result.lines() if line.startswith("note: ")] == [f"note: {note}" for note in notes]
    assert result.columns_used == () and result.index_reads == 0
    assert result.candidate_files == result.total_files == 12


def test_an_index_that_covers_no_file_of_the_lake_says_to_refresh(tmp_path):
    """Every file new since indexing: the reason said '~0 of 0 files would remain'."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(pa.table({"id": [1, 2]}), lake / "a.parquet")
    lakeseek.create_index(str(lake), ["id"], engine="local")
    pq.write_table(pa.table({"id": [3]}), lake / "b.parquet")
    (lake / "a.parquet").unlink()
    result = lakeseek.open_index(str(lake)).explain("id = 3", analyze=True)
    assert not result.index_used and result.rows == 1
    assert result.why_not.startswith("the index covers none of the lake's 1 files") and "refresh it" in result.why_not


def test_explain_cli(typed_lake):
    output = CliRunner().invoke(main, ["explain", typed_lake, "--where", "region LIKE 'Sã%'", "--analyze"])
    assert output.exit_code == 0, output.output
    assert "columns used: region" in output.output and "analyze:" in output.output
    output = CliRunner().invoke(main, ["explain", typed_lake, "--where", "nope = 1"])
    assert output.exit_code == 1 and output.output.strip().count("\n") == 0 and "unknown column 'nope'" in output.output
