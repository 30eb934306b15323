"""Lookups and reads work where pyspark cannot even be imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark

SCRIPT = """
import sys
sys.modules["pyspark"] = None  # any import of pyspark now fails
import lakeseek
index = lakeseek.open_index(sys.argv[1])
print(len(index.files("id = 5")), index.read("id = 5").num_rows)
"""


def test_lookup_without_pyspark(typed_lake):
    result = subprocess.run([sys.executable, "-c", SCRIPT, typed_lake], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "1"]
