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


def test_what_is_read_of_a_file_is_kept_only_once_its_stamp_has_settled(tmp_path):
    """A write moves a file's modification time when it starts, so a stamp taken during a long
    write is already the final one while the old bytes are still there: a footer read then and
    kept under that stamp would misread the new content for the rest of the process. Footers
    are kept only for files left alone for a while (lakeseek.lake.files.SETTLE_NS)."""
    import os
    import time

    import pyarrow as pa
    import pyarrow.parquet as pq

    from lakeseek.lake import files

    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int64())}), lake / "part.parquet")
    lakeseek.create_index(str(lake), ["id"], engine="local")
    index = lakeseek.open_index(str(lake))
    CACHES["data file footers"].clear()
    assert index.read("id = 5").num_rows == 1
    assert len(CACHES["data file footers"]) == 0  # written just now: read afresh by every query
    old = time.time() - 3600
    os.utime(lake / "part.parquet", (old, old))  # as if written an hour ago (a new stamp: ctime moved)
    index = lakeseek.open_index(str(lake))
    assert index.read("id = 5").num_rows == 1
    assert len(CACHES["data file footers"]) == 1
    assert files.settled(files.Stamp(1, time.time_ns() - files.SETTLE_NS - 1, ""))
    assert not files.settled(files.Stamp(1, time.time_ns(), ""))
