"""The CLI: outputs compared with the oracle, and every error case as one line and exit 1."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import lakeseek
from lakeseek.cli.main import main
from tests.lakes import SCHEMA, all_rows, data_files, ids, matching, partition_of, to_sql

pytestmark = pytest.mark.spark


def _run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_create_then_query_files_status(tmp_path, typed_lake, spark):
    lake = str(tmp_path / "lake")
    shutil.copytree(typed_lake, lake, ignore=shutil.ignore_patterns("_lakeseek"))
    index_dir = str(tmp_path / "elsewhere")
    created = _run("create", lake, "--columns", "id,name", "--index", index_dir)
    assert created.exit_code == 0, created.output
    summary = f"index 'default' version 0: indexed 12 files of {lake}: id (1,800 entries, "
    assert [line for line in created.stdout.splitlines() if line.startswith(summary)], created.stdout
    assert not os.path.exists(f"{lake}/_lakeseek")

    rows = all_rows(lake)
    expected = matching(rows, ("=", "name", "it's"))
    as_json = _run("query", lake, "--index", index_dir, "--where", "name = 'it''s'", "--format", "json")
    assert as_json.exit_code == 0
    lines = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert sorted(r["id"] for r in lines) == ids(expected)
    assert all(r["name"] == "it's" for r in lines)

    as_csv = _run(
        "query", lake, "--index", index_dir, "--where", "id = 7", "--columns", "id,name,payload", "--format", "csv"
    )
    parsed = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert parsed[0] == ["id", "name", "payload"]
    assert [int(r[0]) for r in parsed[1:]] == [7]

    table = _run("query", lake, "--index", index_dir, "--where", "id = 7")
    assert table.exit_code == 0 and table.stderr == "1 row\n"
    header, *lines = table.stdout.splitlines()
    assert header.split()[0] == "id" and len(header.split()) == len(SCHEMA) + 1  # every column, region last
    assert [line.split()[0] for line in lines] == ["7"]  # one row, and its id is 7
    narrow = _run("query", lake, "--index", index_dir, "--where", "id = 7", "--columns", "id,code,region")
    (row,) = matching(rows, ("=", "id", 7))
    cells = [re.split(r" {2,}", line.strip()) for line in narrow.stdout.splitlines()]
    shown = ["NULL" if row[c] is None else str(row[c]) for c in ("code", "region")]
    assert cells == [["id", "code", "region"], ["7", *shown]]

    listed = _run("files", lake, "--index", index_dir, "--where", "name = 'it''s' OR id = 3")
    want = {r["__file"] for r in matching(rows, ("or", ("=", "name", "it's"), ("=", "id", 3)))}
    assert set(listed.stdout.splitlines()) == want

    os.remove(data_files(lake)[0])
    status = _run("status", lake, "--index", index_dir)
    assert status.exit_code == 0
    report = status.stdout.splitlines()
    assert (
        "files     12 indexed, 11 in the lake now: 0 new, 0 changed, 1 removed, 0 recorded by a quick refresh "
        "(queries read new, changed and recorded files without the index)"
    ) in report
    top = next(n for n, line in enumerate(report) if line.split()[:2] == ["column", "type"])
    name_entries = len({(r["name"], r["__file"]) for r in rows})  # one entry per value and file
    columns = [line.split()[:3] for line in report[top + 1 : top + 3]]
    assert columns == [["id", "int64", "1,800"], ["name", "string", f"{name_entries:,}"]]
    stale = _run("files", lake, "--index", index_dir, "--where", "id = 3")
    assert stale.stderr.splitlines() == [
        "note: the index is stale: 0 new or changed files were read without it, 1 removed files skipped "
        "(see `lakeseek status`)"
    ]
    as_json = json.loads(_run("status", lake, "--index", index_dir, "--format", "json").stdout)
    assert as_json["indexed_files"] == 12 and len(as_json["removed_files"]) == 1


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("nope = 1", "unknown column 'nope'"),
        ("id = 'abc'", "column 'id' is int64"),
        ("small = 1000Y", "out of the range"),
        ("day = DATE '2024-13-01'", "not a valid date"),
        ("day = '20240101'", "not a date"),
        ("name LIKE 'a\\'", "invalid LIKE pattern"),
        ("id = = 1", "malformed predicate 'id = = 1': '=' lacks its right side (at character 6)"),
        ("id BETWEEN 1", "'BETWEEN' lacks its upper bound"),
        ("id = -", "'-' lacks its operand"),
        ("id = 'unterminated", "malformed predicate"),
        ("", "empty"),
        ("id = name", "cannot compare column 'id' (int64) with column 'name' (string)"),
        ("upper(name) = 'A'", "unsupported predicate"),
        ("id = 1; DROP TABLE x", "malformed predicate"),
        ("id IS", "malformed predicate 'id IS': unexpected 'IS' after 'id'"),
        ("id = 1 adn", "unexpected 'adn' after 'id = 1'"),  # Spark: id = 1, named adn
        (";", "malformed predicate ';': expected one boolean expression"),  # was a ValueError traceback
        ("id = CAST(1 AS STRING)", "unsupported literal 'CAST(1 AS STRING)'"),  # not sqlglot's TRY_CAST(1 AS TEXT)
    ],
)
def test_bad_predicates(typed_lake, where, message):
    result = _run("query", typed_lake, "--where", where)
    assert result.exit_code == 1
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_lake_and_index(tmp_path, typed_lake):
    missing = _run("files", str(tmp_path / "nowhere"), "--where", "id = 1")
    assert missing.exit_code == 1 and "lake not found" in missing.stderr
    (tmp_path / "empty").mkdir()
    no_index = _run("status", str(tmp_path / "empty"))
    assert no_index.exit_code == 1 and "no lakeseek index" in no_index.stderr
    unknown = _run("query", typed_lake, "--where", "id = 1", "--columns", "id,bogus")
    assert unknown.exit_code == 1 and "unknown column 'bogus'" in unknown.stderr


def test_create_errors(tmp_path, typed_lake):
    exists = _run("create", typed_lake, "--columns", "id")
    assert exists.exit_code == 1 and "already covers id" in exists.stderr
    lake = str(tmp_path / "lake")
    shutil.copytree(typed_lake, lake, ignore=shutil.ignore_patterns("_lakeseek"))
    for columns, message in [("score", "floating-point"), ("bogus", "unknown column 'bogus'"), (",", "no columns")]:
        result = _run("create", lake, "--columns", columns)
        assert result.exit_code == 1 and message in result.stderr, result.stderr
        # Exactly one line: no empty one where a progress bar would be on a terminal.
        assert result.stderr.startswith("lakeseek: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert not os.path.exists(f"{lake}/_lakeseek/default/log")


def _id_index_files(lake: str) -> list[str]:
    """The index files of column ``id`` (the first indexed column: ``c0-*``)."""
    data = f"{lake}/_lakeseek/default/data"
    (build,) = os.listdir(data)
    return sorted(f"{data}/{build}/{name}" for name in os.listdir(f"{data}/{build}") if name.startswith("c0-"))


def _log_entry(lake: str) -> str:
    return f"{lake}/_lakeseek/default/log/{0:020d}.json"


def _truncate_index_files(lake):
    for path in _id_index_files(lake):
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)


def _garble_chunks(lake):
    for path in _id_index_files(lake):
        metadata = pq.read_metadata(path)
        with open(path, "r+b") as f:
            for group in range(metadata.num_row_groups):
                column = metadata.row_group(group).column(0)
                f.seek(column.data_page_offset + column.total_compressed_size - 3)
                byte = f.read(1)
                f.seek(-1, 1)
                f.write(bytes([byte[0] ^ 0xFF]))


def _remove_index_files(lake):
    for path in _id_index_files(lake):
        os.remove(path)


def _garble_log(lake):
    path = _log_entry(lake)
    text = re.sub(r'"entries": (\d+)', lambda m: f'"entries": {int(m.group(1)) + 1}', Path(path).read_text(), count=1)
    with open(path, "w") as f:
        f.write(text)


def _truncate_log(lake):
    with open(_log_entry(lake), "r+b") as f:
        f.truncate(100)


def _future_version(lake):
    from lakeseek.commits.log import decode_entry, encode_entry

    path = _log_entry(lake)
    body = decode_entry(Path(path).read_bytes(), path)
    body["format_version"] = 99
    with open(path, "wb") as f:
        f.write(encode_entry(body))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_truncate_index_files, "truncated or corrupt"),
        (_garble_chunks, "corrupt"),
        (_remove_index_files, "missing"),
    ],
)
def test_damaged_index_files_fall_back_to_a_full_scan(lake_copy, damage, message):
    rows = all_rows(lake_copy)
    damage(lake_copy)
    for tree in (("=", "id", 5), ("=", "id", 1700), ("=", "name", "alice")):
        result = _run("query", lake_copy, "--where", to_sql(tree), "--format", "json")
        assert result.exit_code == 0, result.stderr
        assert sorted(json.loads(line)["id"] for line in result.stdout.splitlines()) == ids(matching(rows, tree))
        if tree[1] == "id":
            assert "index is damaged" in result.stderr and message in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_garble_log, "corrupt (checksum mismatch)"),
        (_truncate_log, "truncated or corrupt"),
    ],
)
def test_a_damaged_log_reads_every_file_and_says_so(lake_copy, damage, message):
    rows = all_rows(lake_copy)
    damage(lake_copy)
    for tree in (("=", "id", 5), ("=", "name", "alice")):
        result = _run("query", lake_copy, "--where", to_sql(tree), "--format", "json")
        assert result.exit_code == 0, result.stderr
        assert sorted(json.loads(line)["id"] for line in result.stdout.splitlines()) == ids(matching(rows, tree))
        assert message in result.stderr and "every file is read" in result.stderr, result.stderr


def test_a_skipped_damaged_newest_entry_is_named_in_a_note(lake_copy):
    """The library's warning reaches the CLI's user, once, as notes do."""
    rows = all_rows(lake_copy)
    lakeseek.refresh_index(lake_copy, mode="full", engine="local")  # version 1, then damaged
    with open(f"{lake_copy}/_lakeseek/default/log/{1:020d}.json", "r+b") as entry:
        entry.truncate(100)
    result = _run("query", lake_copy, "--where", "id = 5", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == ids(matching(rows, ("=", "id", 5)))
    named = [line for line in result.stderr.splitlines() if "00000000000000000001.json" in line]
    assert len(named) == 1 and named[0].startswith("note: ") and "using version 0" in named[0], result.stderr


def test_an_index_of_a_future_format_is_a_clear_error(lake_copy):
    _future_version(lake_copy)
    for where in ("id = 5", "name = 'alice'"):
        result = _run("query", lake_copy, "--where", where)
        assert result.exit_code == 1, where
        assert "format version 99" in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_entry_point_prints_one_line_without_traceback(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from lakeseek.cli.main import run; run()",
            "files",
            str(tmp_path / "x"),
            "--where",
            "a = 1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip().startswith("lakeseek: error: lake not found")
    assert "Traceback" not in result.stderr
    usage = subprocess.run(
        [sys.executable, "-c", "from lakeseek.cli.main import run; run()", "query", "x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert usage.returncode == 2 and "--where" in usage.stderr
    for options in ([], ["-v"]):  # with -v it said "lakeseek: error: Missing command."
        bare = subprocess.run(
            [sys.executable, "-c", "from lakeseek.cli.main import run; run()", *options],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert bare.returncode == 2 and bare.stderr.startswith("Usage: ") and "lakeseek: error" not in bare.stderr


def test_unreadable_schema_error_is_one_line(tmp_path):
    (tmp_path / "lake").mkdir()
    pq.write_table(pa.table({"a": [1]}), tmp_path / "lake" / "f.parquet")
    result = _run("query", str(tmp_path / "lake"), "--where", "a = 1")
    assert result.exit_code == 1 and "no lakeseek index" in result.stderr


@pytest.mark.parametrize("inside", ["region=east", "idx"])
def test_an_index_home_inside_the_lake_is_a_one_line_error(tmp_path, typed_lake, inside):
    lake = str(tmp_path / "lake")
    shutil.copytree(typed_lake, lake, ignore=shutil.ignore_patterns("_lakeseek"))
    for args in (("create", lake, "--columns", "id"), ("query", lake, "--where", "id = 5")):
        result = _run(*args, "--index", f"{lake}/{inside}")
        assert result.exit_code == 1, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lakeseek: error: ") and "inside the lake" in lines[0]
        assert "Traceback" not in result.output
    assert not os.path.exists(f"{lake}/{inside}/default")


def test_tables_print_text_as_it_is_never_as_markup(tmp_path, spark):
    """Values, column names and types holding brackets print as they are (rich would read
    ``[red]`` as a style and drop it)."""
    lake = str(tmp_path / "lake")
    os.makedirs(lake)
    names = ["a[b]c", "[red]", "[/]", "x\\[y]"]
    table = pa.table(
        {"id": pa.array(range(4), pa.int64()), "n[1]": names, "ts": pa.array([0] * 4, pa.timestamp("us", tz="UTC"))}
    )
    pq.write_table(table, f"{lake}/part-0.parquet")
    assert _run("create", lake, "--columns", "id,ts").exit_code == 0
    result = _run("query", lake, "--where", "id >= 0")
    assert result.exit_code == 0, result.stderr
    assert "n[1]" in result.stdout.splitlines()[0]
    assert [line.split()[1] for line in result.stdout.splitlines()[1:]] == names
    status = _run("status", lake)
    assert "timestamp[us, tz=UTC]" in status.stdout, status.stdout


def test_tables_written_to_a_file_keep_whole_values(tmp_path, monkeypatch):
    """Off a terminal rich cut a table to 80 columns: ``query > out.txt`` held ``record…``."""
    monkeypatch.delenv("COLUMNS", raising=False)
    lake = str(tmp_path / "lake")
    os.makedirs(lake)
    long = "v" * 300
    pq.write_table(pa.table({"record_identifier": [1], "description_of_the_row": [long]}), f"{lake}/part-0.parquet")
    assert _run("create", lake, "--columns", "record_identifier", "--engine", "local").exit_code == 0
    result = _run("query", lake, "--where", "record_identifier = 1")
    assert result.stdout.split() == ["record_identifier", "description_of_the_row", "1", long], result.stdout
    assert "record_identifier" in _run("indexes", lake).stdout


def test_history_says_what_each_version_changed(lake_copy):
    extra = f"{partition_of(lake_copy)}/extra.parquet"
    shutil.copy(data_files(lake_copy)[0], extra)
    assert _run("refresh", lake_copy, "--mode", "quick").exit_code == 0
    os.remove(extra)
    assert _run("refresh", lake_copy, "--mode", "incremental", "--engine", "local").exit_code == 0
    table = _run("history", lake_copy)
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["version", "committed", "operation", "actions"]
    assert [line.split()[0] for line in lines[1:]] == ["0", "1", "2"]
    assert "refresh quick" in lines[2] and "record_files files=1" in lines[2]
    assert "record_files files=0" in lines[3]  # the recorded file is gone: nothing left to read
    entries = json.loads(_run("history", lake_copy, "--since", "1", "--format", "json").stdout)
    assert [(e["version"], e["operation"]) for e in entries] == [(2, "refresh incremental")]
    assert entries[0]["actions"] == [{"action": "record_files", "files": 0}]


def test_control_characters_in_a_table_are_shown_escaped(tmp_path):
    """A value (or a column name) holding ESC steered the terminal the table was printed to;
    a line break split its row. JSON and CSV keep values as they are."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = tmp_path / "lake"
    lake.mkdir()
    value = "\x1b[31mred\x1b[0m\nline\x9b\u2028\u202eevil"
    pq.write_table(pa.table({"id": [1], "s\x1b": [value]}), lake / "part.parquet")
    assert _run("create", str(lake), "--columns", "id", "--engine", "local").exit_code == 0
    table = _run("query", str(lake), "--where", "id = 1")
    shown = "\\x1b[31mred\\x1b[0m\\nline\\x9b\\u2028\\u202eevil"
    assert table.exit_code == 0 and shown in table.stdout and "s\\x1b" in table.stdout
    assert not any(character in table.stdout for character in "\x1b\x9b\u2028\u202e")
    as_json = _run("query", str(lake), "--where", "id = 1", "--format", "json")
    assert json.loads(as_json.stdout)["s\x1b"] == value


def test_a_lake_path_holding_control_characters_is_printed_escaped(tmp_path):
    """create and status printed the lake's path raw: an ESC in it steered the terminal (found
    by a review hunt). Every line the command line prints escapes them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = tmp_path / "lake\x1b[31m\u202e"
    lake.mkdir()
    pq.write_table(pa.table({"id": [1]}), lake / "part.parquet")
    for args in (["create", str(lake), "--columns", "id", "--engine", "local"], ["status", str(lake)]):
        result = _run(*args)
        assert result.exit_code == 0 and "lake\\x1b[31m\\u202e" in result.stdout, result.stdout
        assert not any(character in result.stdout for character in "\x1b\u202e"), result.stdout


def test_files_prints_a_path_holding_a_line_break_escaped_or_nul_ended(tmp_path):
    """A file name holding a line break split its path over two lines of `files`, which prints
    one path per line; ESC in it steered the terminal. --null prints paths as they are."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = tmp_path / "lake"
    lake.mkdir()
    names = ["a\nb.parquet", "c\x1b[2J.parquet", "plain.parquet"]
    for number, name in enumerate(names):
        pq.write_table(pa.table({"id": [number]}), lake / name)
    assert _run("create", str(lake), "--columns", "id", "--engine", "local").exit_code == 0
    lines = _run("files", str(lake), "--where", "id >= 0").stdout.splitlines()
    assert sorted(os.path.basename(line) for line in lines) == ["a\\nb.parquet", "c\\x1b[2J.parquet", "plain.parquet"]
    ended = _run("files", str(lake), "--where", "id >= 0", "--null").stdout
    assert ended.endswith("\0") and sorted(os.path.basename(p) for p in ended[:-1].split("\0")) == sorted(names)
