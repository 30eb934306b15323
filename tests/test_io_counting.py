"""Each query counts its own storage calls: ``explain`` on handles used by many threads at once
reports what a lone run reports (the counters are per query, not one global tally), while the
handles share what they learned (footers, the lineage): a query on a new handle reads only
what no handle read before."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

import lakeseek
from lakeseek.caches import clear_cache
from lakeseek.io import counting, storage_for
from lakeseek.lru import CACHES

pytestmark = pytest.mark.spark  # the lake's index is built with Spark


def _reads(lake: str, where: str) -> tuple[int, int]:
    explanation = lakeseek.open_index(lake).explain(where)  # a new handle, on the shared caches
    return explanation.index_reads, explanation.index_bytes


def test_concurrent_queries_count_their_own_reads(typed_lake, monkeypatch):
    wheres = ["id = 5", "id = 77", "name = 'bob'", "id IN (1, 2, 3, 4, 5, 6, 7, 8, 9)"]
    clear_cache()
    monkeypatch.setattr(CACHES["index entries"], "capacity", 0)  # chunks read by every query
    cold = {where: _reads(typed_lake, where) for where in wheres}  # footers read, and kept for every handle
    alone = {where: _reads(typed_lake, where) for where in wheres}  # chunks only: not kept here
    assert all(reads > 0 for reads, _ in alone.values()), alone
    assert sum(reads for reads, _ in cold.values()) > sum(reads for reads, _ in alone.values()), (cold, alone)
    work = wheres * 8
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda where: _reads(typed_lake, where), work))
    assert together == [alone[where] for where in work]


def test_counting_sees_only_its_block_and_its_thread(tmp_path):
    storage, root = storage_for(str(tmp_path))
    storage.put_if_absent(f"{root}/a", b"12345")
    with counting() as outer:
        storage.read(f"{root}/a")
        with counting() as inner:
            storage.read_range(f"{root}/a", 1, 2)
        with ThreadPoolExecutor(1) as pool:  # another thread, not carrying the counters
            pool.submit(storage.read, f"{root}/a").result()
    assert (inner.reads, inner.bytes_read) == (1, 2)
    assert (outer.reads, outer.bytes_read) == (2, 7)
