"""The cuckoo kind: aligned per-file cuckoo filters against a full scan, and what they cost.

Generated predicates over every indexable type (NULLs included) must read exactly a full
scan's rows and never leave out a file holding a match; filters never lose a key (generated
key sets, bucket counts and fingerprint widths), and their false positives match the
seed's 2·b·load/2^f; a warm lookup reads two buckets; the lifecycle (appended segments,
removals, quick and full optimize) stays exact; damage costs a full scan, never rows.
"""

from __future__ import annotations

import os
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import lakeseek
from lakeseek.cli.main import main
from lakeseek.exceptions import LakeseekError
from lakeseek.format.hashing import hash64
from lakeseek.io import counting
from lakeseek.kinds.cuckoo.filters import alternate, build_filter, load, positions
from tests.lakes import (
    INDEXABLE,
    all_rows,
    check_generated_predicates,
    fuzz_settings,
    ids,
    make_typed_lake,
)


@pytest.fixture(scope="module")
def filtered_lake(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("cuckoo") / "lake")
    make_typed_lake(root, files_per_region=4, rows_per_file=40, seed=4)
    # One slot per bucket: most files outgrow it, so filters grow on failed kicks.
    lakeseek.create_index(root, INDEXABLE, kind="cuckoo", engine="local", slots=1)
    return root, all_rows(root)


@fuzz_settings(60)
@given(st.data())
def test_generated_predicates_read_a_full_scans_rows(filtered_lake, data):
    root, rows = filtered_lake
    check_generated_predicates(lakeseek.open_index(root), rows, data)


@fuzz_settings(80)
@given(
    keys=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=400, unique=True),
    buckets=st.integers(1, 300),
    bits=st.sampled_from([16, 24, 32]),
)
def test_a_filter_never_loses_a_key(keys, buckets, bits):
    hashes = hash64(pa.array(keys, pa.int64()))
    table = build_filter(hashes, buckets, bits, seed=len(keys))
    first, fingerprint = positions(hashes, buckets, bits)
    second = alternate(first, fingerprint, buckets)
    assert (alternate(second, fingerprint, buckets) == first).all()
    assert bool(np.all(fingerprint < 2**bits)) and bool(np.all(fingerprint > 0))
    for at in range(len(keys)):
        assert (table[first[at]] == fingerprint[at]).any() or (table[second[at]] == fingerprint[at]).any()


def test_false_positives_match_the_seeds_formula():
    """Per file and absent key: 2·b·load / 2^f, b slots per bucket filled to ``load``."""
    buckets, files, keys_per_file, bits = 64, 400, 230, 16
    rng = np.random.default_rng(7)
    tables = [
        build_filter(hash64(pa.array(rng.integers(0, 2**62, keys_per_file))), buckets, bits, seed=n)
        for n in range(files)
    ]
    absent = hash64(pa.array(-rng.integers(1, 2**62, 3000)))
    first, fingerprint = positions(absent, buckets, bits)
    second = alternate(first, fingerprint, buckets)
    hits = 0
    slots = 0
    for table in tables:
        slots += table.shape[1]
        held = (table[first] == fingerprint[:, None]).any(axis=1) | (table[second] == fingerprint[:, None]).any(axis=1)
        hits += int(held.sum())
    measured = hits / (files * len(absent))
    occupancy = keys_per_file / (buckets * slots / files)
    expected = 2 * (slots / files) * occupancy / 2**bits
    assert occupancy <= load(4) + 0.01
    assert 0.8 * expected <= measured <= 1.2 * expected, (measured, expected)


def _lake(root: str, files: int, start: int = 0) -> None:
    os.makedirs(root, exist_ok=True)
    for number in range(start, start + files):
        ids_ = np.arange(number * 2000, number * 2000 + 2000)
        pq.write_table(
            pa.table({"id": ids_, "user": [f"u{i % 977}" if i % 89 else None for i in ids_.tolist()]}),
            f"{root}/part-{number:03d}.parquet",
        )


def test_a_warm_lookup_reads_two_buckets(tmp_path):
    root = str(tmp_path / "lake")
    _lake(root, 12)
    lakeseek.create_index(root, ["id"], kind="cuckoo", engine="local", fingerprint_bits=24)
    index = lakeseek.open_index(root, lake_listing="once")
    index.plan("id = 5")  # cold: the directory file, once per version
    for value in (7, 4321, 23999, -3):
        with counting() as io:
            plan = index.plan(f"id = {value}")
        assert io.reads == 2, value
        assert plan.files == ([] if value < 0 else [f"part-{value // 2000:03d}.parquet"])


def test_the_lifecycle_stays_exact(tmp_path):
    root = str(tmp_path / "lake")
    _lake(root, 6)
    lakeseek.create_index(root, ["id", "user"], kind="cuckoo", engine="local")
    queries = ["id = 4001", "id IN (1, 13999, 20001)", "user = 'u5'", "user IS NULL", "user IN ('u1', 'nobody')"]

    def check(segments: int) -> None:
        index = lakeseek.open_index(root)
        assert len(index.root.content.segments_of("id")) == segments
        for where in queries:
            assert ids(index.read(where, columns=["id"])) == ids(index.scan(where, columns=["id"])), where
            plan = index.plan(where)
            assert plan.index_used or "cost more" in plan.reason, where

    _lake(root, 2, start=6)
    lakeseek.refresh_index(root, "incremental", engine="local")
    check(2)
    _lake(root, 1, start=8)
    lakeseek.refresh_index(root, "incremental", engine="local")
    check(3)
    lakeseek.optimize_index(root, "quick", engine="local")
    check(2)
    os.remove(f"{root}/part-002.parquet")
    lakeseek.refresh_index(root, "incremental", engine="local")
    lakeseek.optimize_index(root, "full", engine="local")
    check(1)
    index = lakeseek.open_index(root)
    assert sum(s.files for s in index.root.content.segments_of("id")) == 8
    assert index.plan("id = 4001").files == []
    lakeseek.refresh_index(root, "full", engine="local")
    check(1)


def test_a_damaged_bucket_file_costs_a_full_scan_not_rows(tmp_path):
    root = str(tmp_path / "lake")
    _lake(root, 4)
    lakeseek.create_index(root, ["id"], kind="cuckoo", engine="local")
    index = lakeseek.open_index(root)
    segment = index.root.content.segments[0]
    path = f"{index.index_dir}/{segment.buckets_path}"
    with open(path, "r+b") as damaged:  # one byte of every bucket flipped
        for bucket in range(segment.buckets):
            damaged.seek(segment.first + bucket * segment.stride + 1)
            byte = damaged.read(1)
            damaged.seek(-1, os.SEEK_CUR)
            damaged.write(bytes([byte[0] ^ 0xFF]))
    fresh = lakeseek.open_index(root)
    wheres = [f"id = {value}" for value in range(0, 8000, 997)]
    for where in wheres:
        plan = fresh.plan(where)
        assert not plan.index_used and "damaged" in plan.reason, where
        assert ids(fresh.read(where, columns=["id"])) == ids(fresh.scan(where, columns=["id"]))
    assert any("bucket file" in problem for problem in fresh.status().problems)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"chunk_rows": 5}, "the cuckoo index has no option 'chunk_rows'"),
        ({"fingerprint_bits": 8}, "fingerprint_bits must be 16, 24 or 32"),
        ({"slots": 0}, "slots must be a whole number from 1 to 64"),
    ],
)
def test_bad_options_are_named(tmp_path, options, message):
    root = str(tmp_path / "lake")
    _lake(root, 1)
    with pytest.raises(LakeseekError, match=message):
        lakeseek.create_index(root, ["id"], kind="cuckoo", engine="local", **options)


def test_the_cli_creates_and_queries_a_cuckoo_index(tmp_path):
    root = str(tmp_path / "lake")
    _lake(root, 3)
    runner = CliRunner()
    created = runner.invoke(
        main,
        ["create", root, "--columns", "id", "--kind", "cuckoo", "--option", "fingerprint_bits=32", "--engine", "local"],
    )
    assert created.exit_code == 0, created.output
    assert lakeseek.open_index(root).root.content.config.fingerprint_bits == 32
    listed = runner.invoke(main, ["files", root, "--where", "id = 2500"])
    assert listed.exit_code == 0 and listed.output.strip().endswith("part-001.parquet")
    ranged = runner.invoke(main, ["explain", root, "--where", "id > 2500"])
    assert ranged.exit_code == 0 and "not ranges or LIKE" in ranged.output


def test_from_an_adversarial_hunt_uint64_and_wide_decimals_are_hashed(tmp_path):
    root = str(tmp_path / "lake")
    os.makedirs(root)
    for number in range(4):
        big = [2**64 - 1 - number, 2**63 + number, number]
        wide = pa.array([Decimal(10**39 + number), Decimal(-number), None], pa.decimal256(40, 0))
        pq.write_table(pa.table({"u": pa.array(big, pa.uint64()), "d": wide}), f"{root}/f{number}.parquet")
    lakeseek.create_index(root, ["u", "d"], kind="cuckoo", engine="local")
    index = lakeseek.open_index(root)
    for where in ["u = 18446744073709551615", "u = 9223372036854775810"]:
        plan = index.plan(where)
        assert plan.index_used and len(plan.files) == 1, where
        assert index.read(where).num_rows == index.scan(where).num_rows == 1, where
    assert index.read("d IS NULL").num_rows == 4  # the wide decimals were hashed at build
    with pytest.raises(LakeseekError, match=r"fingerprint_bits must be 16, 24 or 32, not 16\.0"):
        lakeseek.create_index(root, ["u"], kind="cuckoo", name="other", engine="local", fingerprint_bits=16.0)
