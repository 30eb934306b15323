"""What-if (Hyperspace's whatIf): how a query would run with indexes not built yet, estimated
from the data files' statistics, checked against the same indexes once built."""

from __future__ import annotations

import random
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import lakeseek
from lakeseek.cli.main import main

FILES = 12
ROWS = 400


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """``day`` clustered by file, ``id`` unique and spread over every file, ``status`` of four
    values in every file, ``note`` NULL in every other file."""
    root = tmp_path_factory.mktemp("what_if") / "lake"
    root.mkdir()
    rng = random.Random(7)
    ids = list(range(FILES * ROWS))
    rng.shuffle(ids)
    for number in range(FILES):
        part = ids[number * ROWS : (number + 1) * ROWS]
        table = pa.table(
            {
                "id": pa.array(part, pa.int64()),
                "day": pa.array([number * 10 + rng.randrange(10) for _ in part], pa.int32()),
                "status": [rng.choice(["ok", "failed", "retry", "timeout"]) for _ in part],
                "note": [None if number % 2 else f"n{value}" for value in part],
            }
        )
        pq.write_table(table, root / f"part-{number:03d}.parquet")
    return str(root)


@pytest.mark.parametrize(
    "where",
    ["day = 35", "day BETWEEN 20 AND 41", "day > 100 OR day = 5", "note IS NULL", "day IN (3, 77, 1000)", "day < 0"],
)
def test_min_max_floor_is_what_a_bounds_only_sketch_leaves(lake, tmp_path, where):
    report = lakeseek.imagine_indexes(lake, where, ["skipping:day,id,note;bloom=false;value_list=0"])
    (imagined,) = report.results
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    lakeseek.create_index(str(copy), ["day", "id", "note"], kind="skipping", engine="local", bloom=False, value_list=0)
    plan = lakeseek.open_index(str(copy)).plan(where)
    # Both plans read through their index here (a tiny lake's scan is cheap: the cost model
    # may refuse an index a few files cannot pay for).
    assert plan.index_used and imagined.used
    assert imagined.floor_files == len(plan.files)


def test_estimates_follow_the_data(lake):
    def files(where: str, spec: str) -> float:
        (result,) = lakeseek.imagine_indexes(lake, where, [spec]).results
        assert result.used, result.why_not
        return result.estimated_files

    # A unique key spread over every file: one file holds it, whatever its bounds say.
    assert files("id = 1234", "sorted:id") == pytest.approx(1, abs=0.5)
    assert 1 <= files("id = 1234", "cuckoo:id") < 1.5
    # A clustered column: the files whose range holds the value.
    assert files("day = 35", "sorted:day") == pytest.approx(1, abs=0.5)
    assert files("day BETWEEN 20 AND 49", "skipping:day") == 3
    # IS NULL: the files with NULLs, from the footers' counts.
    assert files("note IS NULL", "sorted:note") == FILES // 2


@pytest.mark.parametrize("rows", [200, 5_000])
def test_a_few_values_in_every_file_are_estimated_in_every_file(tmp_path, rows):
    """Four status codes in each dictionary-encoded file: the estimate took the chunk's bytes
    per value (its dictionary indices, under a byte each) for a dictionary entry's, counted
    hundreds of distinct values and estimated ~1 file (found by the docs hunt)."""
    rng = random.Random(3)
    for number in range(20):
        status = [rng.choice(["ok", "err", "it's", "retry"]) for _ in range(rows)]
        pq.write_table(pa.table({"status": status}), tmp_path / f"part-{number:02d}.parquet")
    for kind in ("sorted", "skipping"):
        (result,) = lakeseek.imagine_indexes(str(tmp_path), "status = 'ok'", [f"{kind}:status"]).results
        assert result.estimated_files >= 18, (kind, result)


def test_a_covered_read_opens_no_file_and_unserved_kinds_say_why(lake):
    report = lakeseek.imagine_indexes(
        lake, "id = 77", ["covering:id;include=day,status,note", "cuckoo:day", "cuckoo:id"]
    )
    covering, cuckoo_day, cuckoo_id = report.results
    assert covering.used and covering.covered and covering.estimated_files == 0
    assert not cuckoo_day.used and "'id' is not indexed" in cuckoo_day.why_not
    assert cuckoo_id.used and cuckoo_id.estimated < report.scan.total
    ranged = lakeseek.imagine_indexes(lake, "id > 5", ["cuckoo:id"]).results[0]
    assert not ranged.used and "not ranges" in ranged.why_not


def test_explain_of_an_index_weighs_hypothetical_ones(lake, tmp_path):
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    lakeseek.create_index(str(copy), ["day"], kind="skipping", engine="local")
    explained = lakeseek.open_index(str(copy)).explain("id = 9", what_if=["sorted:id"])
    assert not explained.index_used
    (imagined,) = explained.what_if
    assert imagined.used and imagined.estimated_files < 2
    assert any(line.startswith("what if") for line in explained.lines())
    through_set = lakeseek.open_indexes(str(copy)).explain("id = 9", what_if=["sorted:id"])
    assert through_set.what_if[0].floor_files == imagined.floor_files


def test_cli_what_if_on_a_lake_without_indexes(lake):
    result = CliRunner().invoke(main, ["explain", lake, "--where", "day = 35", "--what-if", "skipping:day"])
    assert result.exit_code == 0, result.output
    assert f"every one of the {FILES} files is read" in result.output
    assert "+ skipping:day" in result.output and "min/max floor 1 of 12 files" in result.output


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("sorted", "is not KIND:COLUMNS"),
        ("bloomy:id", "unknown index kind 'bloomy'"),
        ("sorted:nope", "unknown column 'nope'"),
        ("cuckoo:id;fingerprint_bits=7", "fingerprint_bits must be 16, 24 or 32"),
        ("skipping:id;bloom", "is not KEY=VALUE"),
    ],
)
def test_bad_what_if_specs_are_one_line_errors(lake, spec, message):
    result = CliRunner().invoke(main, ["explain", lake, "--where", "id = 1", "--what-if", spec])
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
