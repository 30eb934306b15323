"""Hostile inputs through the real command line: one line, a non-zero exit, no traceback.

Each case runs the installed ``lakeseek`` command in a new process, so arguments reach it
as raw bytes (not UTF-8 ones included), as a shell would pass them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import lakeseek
from tests.lakes import ids

LAKESEEK = os.path.join(os.path.dirname(sys.executable), "lakeseek")


def _lakeseek(*args: str | bytes) -> subprocess.CompletedProcess:
    return subprocess.run([LAKESEEK, *args], capture_output=True, timeout=300, check=False)


def _assert_one_line_error(result: subprocess.CompletedProcess, words: str) -> None:
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode in (1, 2), stderr  # 2: a usage error, as click reports them
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert words in stderr, stderr


DEEP = {
    "an OR of 500 equalities": " OR ".join(f"id = {n}" for n in range(500)),
    "an AND of 10,000 comparisons": " AND ".join(f"id >= {-n}" for n in range(10_000)),
    "300 nested parentheses": "(" * 300 + "id = 7" + ")" * 300,
    "NOT 5,001 times": "NOT " * 5_001 + "id <> 7",
    "300 nested ORs": "".join(f"(id = {n + 1000} OR " for n in range(300)) + "id = 7" + ")" * 300,
}


@pytest.mark.parametrize("where", list(DEEP.values()), ids=list(DEEP))
def test_deep_predicates_are_answered(index, rows, where):
    expected = sorted(row["id"] for row in rows if row["id"] == 7)
    if where.startswith("id = 0 OR"):
        expected = sorted(row["id"] for row in rows if 0 <= row["id"] < 500)
    elif where.startswith("id >= 0 AND"):
        expected = sorted(row["id"] for row in rows if row["id"] >= 0)
    elif where.startswith("(id = 1000"):
        expected = sorted(row["id"] for row in rows if row["id"] == 7 or 1000 <= row["id"] < 1300)
    assert ids(index.read(where)) == expected


def test_a_predicate_too_deep_is_refused_in_one_line(typed_lake):
    where = "(" * 30_000 + "id = 7" + ")" * 30_000
    _assert_one_line_error(_lakeseek("query", typed_lake, "--where", where), "nests too deeply")
    with pytest.raises(lakeseek.LakeseekError, match="nests too deeply"):
        lakeseek.open_index(typed_lake).plan(where)


def test_deep_predicate_through_the_command_line(typed_lake):
    result = _lakeseek("query", typed_lake, "--where", DEEP["NOT 5,001 times"], "--format", "csv")
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().splitlines()[1].startswith("7,")


@pytest.mark.parametrize(
    ("where", "words"),
    [
        (b"name = '\xff'", "not valid UTF-8"),
        (b"name LIKE 'caf\xe9%'", "not valid UTF-8"),
        (b"\xfe = 1", "not valid UTF-8"),
    ],
)
def test_bytes_that_are_not_utf8_in_a_predicate(typed_lake, where, words):
    _assert_one_line_error(_lakeseek("query", typed_lake, "--where", where), words)


@pytest.mark.parametrize(
    ("where", "words"),
    [
        ("name = 1.50", "the decimal literal 1.50 does not fit it"),  # was Decimal('1.50')
        ("day = 2.5", "the decimal literal 2.5 does not fit it"),
        ("name = X'0A'", "the hex literal '0a' does not fit it"),
    ],
)
def test_a_literal_that_does_not_fit_is_shown_as_written(index, where, words):
    with pytest.raises(lakeseek.PredicateTypeError, match=re.escape(words)):
        index.files(where)


def test_a_source_that_is_not_utf8(tmp_path):
    source = os.fsencode(str(tmp_path)) + b"/lake-\xff"
    _assert_one_line_error(_lakeseek("query", source, "--where", "id = 1"), "lakeseek: error:")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["create", "{lake}", "--columns", "id", "--chunk-rows", "99999999999999999999"], "--chunk-rows"),
        (["create", "{lake}", "--columns", "id", "--chunk-rows", "0"], "--chunk-rows"),
        (["query", "{lake}", "--where", "id = 1", "--columns", "id,name,id"], "column 'id' is asked for twice"),
        (["create", "{file}", "--columns", "id"], "is not a directory"),
        (["query", "{lake}/..", "--where", "id = 1"], "lakeseek: error:"),
        (["create", "{lake}", "--columns", "id", "--index", "{lake}/p=0"], "inside the lake"),
        (
            ["layout", "write", "{lake}", "{tmp}/otree", "--columns", "id", "--headroom", "nan", "--engine", "local"],
            "headroom",
        ),
    ],
)
def test_bad_options_are_one_line(typed_lake, tmp_path, args, words):
    a_file = tmp_path / "a-file.parquet"
    a_file.write_bytes(b"PAR1")
    filled = [arg.format(lake=typed_lake, file=a_file, tmp=tmp_path) for arg in args]
    _assert_one_line_error(_lakeseek(*filled), words)


def test_api_options_are_checked(typed_lake):
    with pytest.raises(lakeseek.LakeseekError, match="chunk_rows must be"):
        lakeseek.create_index(typed_lake, ["id"], chunk_rows=10**20)


def test_a_store_that_cannot_be_reached_is_a_one_line_error():
    """obstore's errors are no OSError: `lakeseek files s3://...` on a store it could not reach
    printed a 60-line traceback (found by a hunt on `lakeseek serve`, which failed to start so)."""
    unreachable = ["AWS_ENDPOINT_URL=http://127.0.0.1:9", "AWS_ALLOW_HTTP=true", "AWS_REGION=us-east-1"]
    unreachable += ["AWS_ACCESS_KEY_ID=key", "AWS_SECRET_ACCESS_KEY=secret"]
    options = [arg for setting in unreachable for arg in ("--storage-option", setting)]
    _assert_one_line_error(_lakeseek("files", "s3://nobucket/lake", "--where", "x = 1", *options), "S3 error")
