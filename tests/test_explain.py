"""explain: what the index was used for, what it cost, and why not."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import lakeseek
from lakeseek.cli.main import main

pytestmark = pytest.mark.spark


def test_explain_a_needle(typed_lake):
    index = lakeseek.open_index(typed_lake)
    result = index.explain("id = 200 AND score > 0", analyze=True)
    assert result.index_used and result.columns_used == ("id",)
    assert result.candidate_files == len(index.files("id = 200")) == 1
    assert result.total_files == 12 and result.index_reads >= 1
    assert result.estimated.total < result.scan.total and result.actual.total < result.scan.total
    assert any("score" in note for note in result.notes)
    assert result.rows == index.read("id = 200 AND score > 0").num_rows


@pytest.mark.parametrize(
    ("where", "why"),
    [("score > 1", "no indexed column"), ("code >= 0", "cost more than it saves"), ("id <> 3", "no indexed column")],
)
def test_explain_why_not(typed_lake, where, why):
    result = lakeseek.open_index(typed_lake).explain(where)
    assert not result.index_used and why in result.why_not
    assert result.candidate_files == result.total_files


def test_explain_cli(typed_lake):
    output = CliRunner().invoke(main, ["explain", typed_lake, "--where", "region LIKE 'Sã%'", "--analyze"])
    assert output.exit_code == 0, output.output
    assert "columns used: region" in output.output and "analyze:" in output.output
    output = CliRunner().invoke(main, ["explain", typed_lake, "--where", "nope = 1"])
    assert output.exit_code == 1 and output.output.strip().count("\n") == 0 and "unknown column 'nope'" in output.output
