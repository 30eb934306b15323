"""Lookups, local refresh and optimize, explain, status and the CLI's lookups work where
pyspark cannot even be imported: Spark is needed only for Spark work."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark  # the lake and its index are built with Spark

SCRIPT = """
import sys
sys.modules["pyspark"] = None  # any import of pyspark now fails
sys.modules["py4j"] = None
import lakeseek
import lakeseek.spark  # the front end package loads; only its Spark work needs pyspark
from lakeseek.cli.main import main

lake = sys.argv[1]
print(lakeseek.open_index(lake).status().is_fresh)  # a copy: new inodes, every file counts as changed
index = lakeseek.refresh_index(lake, "incremental", engine="local")
print(len(index.files("id = 5")), index.read("id = 5").num_rows, index.explain("id = 5").index_used)
print(index.locate([5], column="id").num_rows, index.status().is_fresh)
print(lakeseek.optimize_index(lake, "quick").status().is_fresh)
print(lakeseek.vacuum_index(lake).files_deleted >= 0)
try:
    main(["files", lake, "--where", "id = 5"])
except SystemExit as exit:
    assert not exit.code, exit.code
"""


def test_lookups_and_local_operations_without_pyspark(typed_lake, tmp_path):
    lake = str(tmp_path / "lake")
    shutil.copytree(typed_lake, lake, copy_function=shutil.copy2)
    result = subprocess.run([sys.executable, "-c", SCRIPT, lake], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:5] == ["False", "1 1 True", "1 True", "True", "True"], lines
    assert len(lines) == 6 and lines[5].startswith(lake), lines  # the CLI printed the one file
