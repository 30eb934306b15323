"""Index files, roots and the log: round trips and damage detection (no Spark)."""

from __future__ import annotations

import datetime as dt
import threading
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from lakeseek.exceptions import CommitFailedError, IndexCorruptError
from lakeseek.format import values
from lakeseek.io import storage_for
from lakeseek.kinds.sorted_index.index_file import IndexFileInfo, read_chunk, read_footer, write_index_file


def _batches(keys, ids, size=3):
    table = pa.table({"key": keys, "file_id": pa.array(ids, pa.int32())})
    return table.to_batches(max_chunksize=size)


def _write(tmp_path, keys, ids, key_type=None, chunk_rows=4):
    key_type = key_type or pa.int64()
    storage, root = storage_for(str(tmp_path))
    data, raw = write_index_file(_batches(pa.array(keys, key_type), ids), key_type, chunk_rows)
    path = f"{root}/index.parquet"
    storage.write(path, data)
    info = IndexFileInfo.from_json({"path": "data/test/index.parquet", **raw}, key_type)
    return storage, path, info


def test_dedupes_and_cuts_chunks_only_between_keys(tmp_path):
    keys = [None, None, 1, 1, 1, 2, 2, 2, 2, 2, 3, 4, 5, 6, 7, 8]
    ids = [0, 0, 1, 1, 2, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0]
    storage, path, info = _write(tmp_path, keys, ids)
    assert info.min is None and info.max == 8 and info.entries == 14
    footer = read_footer(storage, path, info, pa.int64(), False)
    chunks = [read_chunk(storage, path, footer, c).to_pydict() for c in range(info.chunks)]
    seen = [(k, i) for chunk in chunks for k, i in zip(chunk["key"], chunk["file_id"], strict=True)]
    assert seen == sorted(set(zip(keys, ids, strict=True)), key=lambda e: (e[0] is not None, e[0] or 0, e[1]))
    for chunk in chunks:  # no key spans two chunks
        others = [c for c in chunks if c is not chunk]
        assert not set(chunk["key"]) & {k for c in others for k in c["key"]}
    assert footer.chunk_for(None) == 0
    assert footer.chunk_for(2) == next(n for n, c in enumerate(chunks) if 2 in c["key"])
    assert footer.chunk_for(9) is None


def test_unsorted_input_is_refused():
    with pytest.raises(ValueError, match="not sorted"):
        write_index_file(_batches(pa.array([1, 2, 3, 4, 0, 5]), [0] * 6), pa.int64(), 2)


def test_empty_input_writes_nothing():
    assert write_index_file(iter([]), pa.int64()) is None


@pytest.mark.parametrize(
    "keys",
    [
        pa.array([None, "a", "z", "é"]),  # code point order
        pa.array([None, b"\x00", b"\xff"]),
        pa.array([None, dt.date(2024, 1, 1), dt.date(2024, 1, 2)]),
        pa.array([None, Decimal("-1.5"), Decimal("2.0")], pa.decimal128(5, 1)),
        pa.array([None, False, True]),
        pa.array([None, dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)], pa.timestamp("us", tz="UTC")),
    ],
)
def test_other_key_types_round_trip(tmp_path, keys):
    storage, path, info = _write(tmp_path, keys, [0] * len(keys), keys.type, chunk_rows=1)
    footer = read_footer(storage, path, info, keys.type, False)
    as_keys = values.keys_of(keys)  # dates and timestamps as their storage numbers
    assert info.min is None and info.max == as_keys[-1]
    found = [read_chunk(storage, path, footer, footer.chunk_for(k)).column("key") for k in as_keys]
    assert [column.type for column in found] == [keys.type] * len(keys)
    assert [k.as_py() in column.to_pylist() for k, column in zip(keys, found, strict=True)] == [True] * len(keys)


def test_footer_checksum_catches_damage(tmp_path):
    storage, path, info = _write(tmp_path, list(range(100)), [0] * 100)
    data = bytearray(Path(path).read_bytes())
    data[info.footer_offset + 5] ^= 0xFF
    Path(path).write_bytes(bytes(data))
    with pytest.raises(IndexCorruptError, match="footer checksum"):
        read_footer(storage, path, info, pa.int64(), False)


def test_put_if_absent_has_one_winner(tmp_path):
    storage, root = storage_for(str(tmp_path))
    outcomes = []

    def attempt(n):
        try:
            storage.put_if_absent(f"{root}/log/0.json", str(n).encode())
            outcomes.append("won")
        except FileExistsError:
            outcomes.append("lost")

    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["lost"] * 7 + ["won"]
    assert [p for p in (tmp_path / "log").iterdir()] == [tmp_path / "log" / "0.json"]


def test_log_commit_conflict(tmp_path):
    from lakeseek.commits.log import IndexLog

    storage, root = storage_for(str(tmp_path))
    log = IndexLog(storage, root)
    storage.put_if_absent(log.entry_path(0), b"{}")
    with pytest.raises(CommitFailedError):
        log.commit(type("R", (), {"version": 0, "to_json": lambda self: {}})())


def test_storage_counts_reads(tmp_path):
    storage, root = storage_for(str(tmp_path))
    storage.write(f"{root}/f", b"0123456789")
    before = storage.stats.snapshot()
    assert storage.read_range(f"{root}/f", 2, 3) == b"234"
    assert storage.read(f"{root}/f") == b"0123456789"
    after = storage.stats.snapshot()
    assert after["reads"] - before["reads"] == 2
    assert after["bytes_read"] - before["bytes_read"] == 13


def test_lineage_manifests_are_bound_by_checksum_and_size(tmp_path):
    from lakeseek.format.lineage import Lineage, read_lineage, write_lineage

    storage, root = storage_for(str(tmp_path))
    first = Lineage([0, 1], ["a.parquet", "b.parquet"], [10, 20], [1, 2], ["1-5", "2-6"])
    second = Lineage([0, 1], ["b.parquet", "c.parquet"], [20, 30], [2, 3], ["2-6", "3-7"])
    first_name, first_size = write_lineage(storage, root, "op1", first)
    second_name, _ = write_lineage(storage, root, "op2", second)
    assert read_lineage(storage, f"{root}/{first_name}") == first
    assert read_lineage(storage, f"{root}/{second_name}") == second
    assert first_size == Path(root, first_name).stat().st_size
    # An older valid manifest copied over a newer one, or a truncated one, is damage, not a lineage.
    Path(root, second_name).write_bytes(Path(root, first_name).read_bytes())
    with pytest.raises(IndexCorruptError, match="checksum"):
        read_lineage(storage, f"{root}/{second_name}")
    Path(root, first_name).write_bytes(Path(root, first_name).read_bytes()[:-10])
    with pytest.raises(IndexCorruptError):
        read_lineage(storage, f"{root}/{first_name}")


def test_increment_filter_files_are_bound_by_checksum_and_size(tmp_path):
    from lakeseek.kinds.base import OperationFiles
    from lakeseek.kinds.sorted_index.filters import read_filter_bytes, write_filters

    storage, root = storage_for(str(tmp_path))
    older = write_filters(OperationFiles(storage, root, "op1"), {"data/op1/a.parquet": b"\x01" * 16})
    newer = write_filters(OperationFiles(storage, root, "op2"), {"data/op2/b.parquet": b"\x02" * 16})
    assert older.size == Path(root, older.path).stat().st_size
    assert read_filter_bytes(storage, f"{root}/{newer.path}") == {"data/op2/b.parquet": b"\x02" * 16}
    Path(root, newer.path).write_bytes(Path(root, older.path).read_bytes())
    with pytest.raises(IndexCorruptError, match="checksum"):
        read_filter_bytes(storage, f"{root}/{newer.path}")
