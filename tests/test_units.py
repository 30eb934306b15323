"""Pure unit tests, no Spark: the cost model, key ranges, key values, bloom filters,
``storage_for`` and the root's JSON form."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import os
import random
import subprocess
import sys
from decimal import Decimal

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeseek.cost import human_size
from lakeseek.exceptions import IndexCorruptError, IndexFormatError
from lakeseek.expressions.like import like_prefix
from lakeseek.format import values
from lakeseek.format.bloom import BloomFilter, filters_may_contain
from lakeseek.format.lineage import Lineage
from lakeseek.format.root import FORMAT_VERSION, LineagePart, LineageSet, Root
from lakeseek.io import storage_for
from lakeseek.kinds import decode_content
from lakeseek.kinds.keys import KeyRange
from lakeseek.kinds.sorted_index.content import ColumnIndex, IndexConfig, Segment, SortedIndex
from lakeseek.kinds.sorted_index.cost import chunks_for_share, key_share
from lakeseek.kinds.sorted_index.filters import FiltersRef
from lakeseek.kinds.sorted_index.index_file import IndexFileInfo

EPOCH = dt.date(1970, 1, 1)
UTC = dt.timezone.utc


def _info(low, high, *, entries=101, chunks=10, keys=None, path="data/op/c0-a.parquet") -> IndexFileInfo:
    return IndexFileInfo(path, low, high, entries, chunks, 10_000, 9_492, 500, 0, data_files=10, keys=keys)


# -- the cost model -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("low", "high", "share"),
    [
        (25, 75, 0.5),
        (None, 75, 0.75),
        (25, None, 0.75),
        (None, None, 1.0),
        (0, 100, 1.0),
        (-50, 150, 1.0),  # clipped to the file's range
        (10, 20, 0.1),
    ],
)
def test_key_share_interpolates_numbers(low, high, share):
    assert key_share(_info(0, 100), low, high) == pytest.approx(share)


def test_key_share_has_a_floor_of_one_key():
    # A range between two keys, or touching one end, still holds up to one key of the file.
    assert key_share(_info(0, 100, keys=50), 40, 40) == pytest.approx(1 / 50)
    assert key_share(_info(0, 100, entries=200), 100, None) == pytest.approx(1 / 200)  # keys unknown: entries


def test_key_share_of_strings_bytes_and_decimals():
    assert key_share(_info("a", "c"), "b", None) == pytest.approx(0.5)  # by their first bytes
    assert key_share(_info(b"\x00", b"\x04"), None, b"\x01") == pytest.approx(0.25)
    assert key_share(_info(Decimal("0.00"), Decimal("10.00")), Decimal("2.50"), None) == pytest.approx(0.75)


def test_key_share_without_a_span_is_the_whole_file():
    assert key_share(_info(7, 7), 7, 7) == 1.0  # one key: nothing to interpolate
    # A file starting with NULL keys: its lowest non-NULL key is unknown, so the range's
    # low stands in for it, and without a low bound nothing can be said.
    assert key_share(_info(None, 100), None, 50) == 1.0
    assert key_share(_info(None, 100), 50, None) == 1.0


@pytest.mark.parametrize(("share", "chunks"), [(0.0, 1), (0.05, 2), (0.25, 4), (0.5, 6), (0.95, 10), (1.0, 10)])
def test_chunks_for_share(share, chunks):
    # A contiguous range covering ``share`` of the keys touches that share of the chunks,
    # plus one where it starts mid-chunk, and never more chunks than the file has.
    assert chunks_for_share(_info(0, 100, chunks=10), share) == chunks


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [
        (0, "0 B"),
        (1, "1 B"),
        (1023, "1,023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (1024**2 - 1, "1,024.0 KiB"),
        (1024**2, "1.0 MiB"),
        (3.4 * 1024**2, "3.4 MiB"),
        (1024**3, "1.0 GiB"),
        (5 * 1024**4, "5,120.0 GiB"),  # GiB is the largest unit
    ],
)
def test_human_size(nbytes, text):
    assert human_size(nbytes) == text


# -- key ranges ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key_range", "low", "high", "overlaps"),
    [
        (KeyRange(10, 20), 0, 5, False),
        (KeyRange(10, 20), 0, 10, True),
        (KeyRange(10, 20), 20, 30, True),
        (KeyRange(10, 20), 21, 30, False),
        (KeyRange(10, 20), 12, 15, True),
        (KeyRange(10, 20), 0, 30, True),
        (KeyRange(10, 20, low_inclusive=False), 0, 10, False),
        (KeyRange(10, 20, high_inclusive=False), 20, 30, False),
        (KeyRange(10, 20), None, 5, False),
        (KeyRange(10, 20), None, 15, True),  # NULL first, then keys up to 15
        (KeyRange(10, 20), None, None, False),  # only NULL keys: NULL is in no range
        (KeyRange(), None, None, False),
        (KeyRange(), 1, 2, True),
        (KeyRange(None, 5), 6, 9, False),
        (KeyRange(None, 5), None, 9, True),
        (KeyRange(5, None), 1, 4, False),
        (KeyRange("b", "d"), "a", "az", False),
        (KeyRange("b", "d"), "a", "b", True),
        (KeyRange("b", "d", high_inclusive=False), "d", "e", False),
        (KeyRange("é"), "e", "z", False),  # code point order: "é" sorts after "z"
    ],
)
def test_key_range_overlaps(key_range, low, high, overlaps):
    assert key_range.overlaps(low, high) is overlaps


@pytest.mark.parametrize(
    ("key_range", "low", "high", "covers"),
    [
        (KeyRange(10, 20), 10, 20, True),
        (KeyRange(10, 20), 12, 15, True),
        (KeyRange(10, 20), 5, 15, False),
        (KeyRange(10, 20), 15, 25, False),
        (KeyRange(10, 20, low_inclusive=False), 10, 15, False),
        (KeyRange(10, 20, high_inclusive=False), 15, 20, False),
        (KeyRange(10, 20, low_inclusive=False, high_inclusive=False), 11, 19, True),
        (KeyRange(10, 20), None, 15, False),  # the file holds NULL keys, which no range holds
        (KeyRange(), 1, 2, True),
        (KeyRange(), None, 2, False),
        (KeyRange(None, 5), -(10**9), 5, True),
        (KeyRange("b", "d"), "b", "c", True),
    ],
)
def test_key_range_covers(key_range, low, high, covers):
    assert key_range.covers(low, high) is covers


def test_key_range_mask():
    keys = pa.array([None, 5, 10, 15, 20, 25], pa.int64())
    assert KeyRange(10, 20).mask(keys).to_pylist() == [False, False, True, True, True, False]
    assert KeyRange(10, 20, False, False).mask(keys).to_pylist() == [False, False, False, True, False, False]
    assert KeyRange().mask(keys).to_pylist() == [False, True, True, True, True, True]
    assert KeyRange(None, 10).mask(keys).to_pylist() == [False, True, True, False, False, False]
    assert KeyRange(20, None, low_inclusive=False).mask(keys).to_pylist() == [False] * 5 + [True]
    chunked = pa.chunked_array([["a", None], ["b", "c"]])
    assert KeyRange("b").mask(chunked).to_pylist() == [False, False, True, True]


_small = st.integers(-20, 20)


@st.composite
def _ranges(draw):
    return KeyRange(draw(st.none() | _small), draw(st.none() | _small), draw(st.booleans()), draw(st.booleans()))


def _in(key_range: KeyRange, key: int) -> bool:
    if key_range.low is not None and (key < key_range.low or (key == key_range.low and not key_range.low_inclusive)):
        return False
    return not (
        key_range.high is not None
        and (key > key_range.high or (key == key_range.high and not key_range.high_inclusive))
    )


@given(_ranges(), _small, _small, st.booleans())
def test_key_range_agrees_with_its_definition(key_range, a, b, with_null):
    """``mask`` is the range's definition; ``overlaps`` never misses a key of ``[low, high]``
    in the range (bounds are real numbers, so it may say yes for a gap between integers);
    ``covers`` holds exactly when both ends are in the (convex) range and no key is NULL."""
    low, high = min(a, b), max(a, b)
    keys = list(range(low, high + 1))
    inside = [_in(key_range, k) for k in keys]
    assert key_range.mask(pa.array([None, *keys], pa.int64())).to_pylist() == [False, *inside]
    file_low = None if with_null else low  # an index file starting with NULL keys
    if any(inside):
        assert key_range.overlaps(file_low, high)
    assert key_range.covers(file_low, high) == (not with_null and _in(key_range, low) and _in(key_range, high))


def test_like_prefix():
    """The literal text every match of a LIKE pattern starts with: the key range it reads."""
    assert like_prefix("ab%c") == "ab"
    assert like_prefix("a_c%") == "a"
    assert like_prefix("50\\% off%") == "50% off"
    assert like_prefix("a\\\\b%") == "a\\b"
    assert like_prefix("%x") == ""
    assert like_prefix("exact") == "exact"


# -- key values -------------------------------------------------------------------------------------
# (column type, values of the column) for every kind of key: the JSON form of each key is
# exact, the keys of an array are those of its values, and keys sort as the values do.
_COLUMNS = [
    (pa.int8(), [-128, -1, 0, 127]),
    (pa.int16(), [-32768, 0, 32767]),
    (pa.int32(), [-(2**31), 0, 2**31 - 1]),
    (pa.int64(), [-(2**63), -1, 0, 2**53 + 1, 2**63 - 1]),  # beyond a double's integers
    (pa.uint64(), [0, 2**64 - 1]),
    (pa.bool_(), [False, True]),
    (pa.string(), ["", "a", "it's", "z", "é", "🙂"]),
    (pa.large_string(), ["", "b"]),
    (pa.binary(), [b"", b"\x00", b"\x00\x01", b"\xff" * 3]),
    (pa.binary(2), [b"\x00\x00", b"\xff\xfe"]),
    (pa.decimal128(12, 2), [Decimal("-12.50"), Decimal("0.00"), Decimal("3.10"), Decimal("1234567890.99")]),
    (pa.decimal128(38, 0), [Decimal(-(10**37)), Decimal(10**37)]),
    (pa.date32(), [dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(2024, 2, 29)]),
    (
        pa.timestamp("us", tz="UTC"),
        [dt.datetime(1, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC)],
    ),
    (pa.timestamp("us"), [dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(2030, 6, 1)]),
    (pa.timestamp("ms", tz="UTC"), [dt.datetime(2024, 1, 1, 0, 0, 0, 5000, tzinfo=UTC)]),
    (pa.timestamp("s"), [dt.datetime(2000, 1, 1)]),
]


@pytest.mark.parametrize(("column_type", "column_values"), _COLUMNS, ids=lambda x: str(x)[:30])
def test_keys_round_trip_through_json(column_type, column_values):
    key_type = values.key_type_for(column_type, "c")
    array = pa.array([None, *column_values], column_type)
    keys = [values.key_of(scalar, key_type) for scalar in array]
    assert keys[0] is None
    assert values.keys_of(array.cast(key_type)) == keys  # the batch form agrees with the scalar one
    for key in keys:
        raw = json.loads(json.dumps(values.encode(key, key_type)))  # the root stores JSON
        decoded = values.decode(raw, key_type)
        assert decoded == key and type(decoded) is type(key), (key, raw)
    ordered = sorted(keys, key=values.sort_key)
    assert ordered == keys  # the values are listed in order: their keys keep it, NULL first


def test_dates_and_timestamps_are_their_storage_numbers():
    assert values.key_of(pa.scalar(dt.date(2024, 2, 29)), pa.date32()) == (dt.date(2024, 2, 29) - EPOCH).days
    assert values.key_of(pa.scalar(dt.date(1969, 12, 31)), pa.date32()) == -1
    instant = dt.datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC)
    micros = 1_704_112_215_123_456
    assert values.key_of(pa.scalar(instant), pa.timestamp("us", tz="UTC")) == micros
    # Coarser columns convert to microseconds.
    in_ms = pa.scalar(1_704_067_200_005, pa.timestamp("ms", tz="UTC"))
    assert values.key_of(in_ms, values.key_type_for(in_ms.type, "t")) == 1_704_067_200_005_000
    # Nanoseconds are dropped (rounded down), as the build's keys drop them.
    in_ns = pa.scalar(1_704_067_200_000_001_999, pa.timestamp("ns", tz="UTC"))
    assert values.key_of(in_ns, values.key_type_for(in_ns.type, "t")) == 1_704_067_200_000_001
    # Beyond Python's years 1-9999, as Spark holds them.
    far = pa.scalar(3_000_000, pa.date32())  # year 10,183
    assert values.key_of(far, pa.date32()) == 3_000_000
    assert values.keys_of(pa.array([None, -800_000, 3_000_000], pa.date32())) == [None, -800_000, 3_000_000]
    late = pa.scalar(300_000_000_000_000_000, pa.timestamp("us", tz="UTC"))
    assert values.key_of(late, pa.timestamp("us", tz="UTC")) == 300_000_000_000_000_000
    assert values.decode(values.encode(3_000_000, pa.date32()), pa.date32()) == 3_000_000


def test_key_json_forms():
    assert values.encode(b"\x00\xff", pa.binary()) == base64.b64encode(b"\x00\xff").decode()
    assert values.encode(Decimal("3.10"), pa.decimal128(12, 2)) == "3.10"
    assert values.encode(19782, pa.date32()) == 19782  # a number since format 5
    assert values.encode(None, pa.string()) is None and values.decode(None, pa.binary()) is None
    assert values.decode("2024-02-29", pa.date32()) == 19782  # format 4 and before: ISO dates


@pytest.mark.parametrize(
    ("raw", "key_type"),
    [
        ("12", pa.int64()),
        (True, pa.int64()),  # a bool is no integer key
        (1, pa.bool_()),
        (5, pa.string()),
        ("not base64!", pa.binary()),
        ("x", pa.decimal128(12, 2)),
        ("2024-13-01", pa.date32()),
        (1.5, pa.timestamp("us", tz="UTC")),
        ("2024-01-01 00:00:00", pa.timestamp("us", tz="UTC")),
    ],
)
def test_a_key_of_the_wrong_form_is_damage(raw, key_type):
    with pytest.raises(IndexCorruptError, match="not a"):
        values.decode(raw, key_type)


@pytest.mark.parametrize(
    ("column_type", "key_type"),
    [
        (pa.int16(), pa.int16()),
        (pa.large_string(), pa.string()),
        (pa.large_binary(), pa.binary()),
        (pa.binary(16), pa.binary()),
        (pa.date64(), pa.date32()),
        (pa.timestamp("ns", tz="Europe/Paris"), pa.timestamp("us", tz="UTC")),
        (pa.timestamp("ms"), pa.timestamp("us")),
        (pa.decimal128(7, 3), pa.decimal128(7, 3)),
        (pa.dictionary(pa.int32(), pa.string()), pa.string()),
    ],
)
def test_key_types(column_type, key_type):
    assert values.key_type_for(column_type, "c") == key_type


@pytest.mark.parametrize(
    ("column_type", "message"),
    [(pa.float64(), "floating-point"), (pa.float32(), "floating-point"), (pa.list_(pa.int64()), "cannot index")],
)
def test_unindexable_types(column_type, message):
    from lakeseek.exceptions import UnsupportedColumnError

    with pytest.raises(UnsupportedColumnError, match=message):
        values.key_type_for(column_type, "c")


# -- bloom filters --------------------------------------------------------------------------------
def _bloom_keys(kind: str, count: int, offset: int) -> list:
    numbers = range(offset, offset + count)
    if kind == "int":
        return [n * 7919 for n in numbers]
    if kind == "str":
        return [f"user-{n}" for n in numbers]
    if kind == "bytes":
        return [n.to_bytes(8, "big") for n in numbers]
    return [Decimal(n) / 100 for n in numbers]


@pytest.mark.parametrize("kind", ["int", "str", "bytes", "decimal"])
def test_bloom_filter_has_no_false_negatives_and_few_false_positives(kind):
    present = pa.array(_bloom_keys(kind, 5_000, 0))
    bloom = BloomFilter.from_bytes(BloomFilter.build(present).to_bytes())  # as stored in a footer
    assert bloom.may_contain(present).all()
    absent = pa.array(_bloom_keys(kind, 20_000, 10_000_000))
    rate = bloom.may_contain(absent).mean()
    # 10 bits per key and 7 probes: about 0.8 %, theoretically; a filter that says yes to
    # everything (or to a third of the keys) must fail here.
    assert rate < 0.02, rate
    # Probing many filters at once answers as each filter does.
    other = BloomFilter.build(absent[:100])
    filters = pa.array([bloom.to_bytes(), None, other.to_bytes()], pa.binary())
    assert filters_may_contain(filters, present[:1]).tolist() == [True, False, bool(other.may_contain(present[:1])[0])]
    assert filters_may_contain(filters, absent[:1]).tolist() == [bool(bloom.may_contain(absent[:1])[0]), False, True]


def test_bloom_filter_of_a_few_keys_and_of_none():
    empty = BloomFilter.build(pa.array([], pa.int64()))
    assert not empty.may_contain(pa.array([0, None], pa.int64())).any()
    small = BloomFilter.build(pa.array([None, "a", ""]))
    assert small.may_contain(pa.array([None, "a", ""])).all()
    assert small.bits == 64  # the minimum size


def test_bloom_filter_size_is_ten_bits_per_key():
    rng = random.Random(5)
    keys = pa.array(sorted({rng.getrandbits(60) for _ in range(1000)}))
    bloom = BloomFilter.build(keys)
    assert bloom.may_contain(keys).all()
    assert bloom.bits == 10 * len(keys) and len(bloom.to_bytes()) == 6 + (bloom.bits + 7) // 8


def test_bloom_filter_bytes_are_checked():
    data = BloomFilter.build(pa.array(range(100))).to_bytes()
    with pytest.raises(ValueError, match="not a lakeseek bloom filter"):
        BloomFilter.from_bytes(b"\x03" + data[1:])
    with pytest.raises(ValueError, match="not a lakeseek bloom filter"):
        BloomFilter.from_bytes(data[:3])
    with pytest.raises(ValueError, match="wrong length"):
        BloomFilter.from_bytes(data[:-1])


def test_bloom_filter_hashing_is_stable_across_processes():
    """Filters are written by one process and read by others: no per-process hash seed."""
    script = (
        "from lakeseek.format.bloom import BloomFilter; import pyarrow as pa;"
        "import sys; sys.stdout.write(BloomFilter.build(pa.array(['a', 'bc', None])).to_bytes().hex())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    outputs = {
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True).stdout
        for _ in range(2)
    }
    assert outputs == {BloomFilter.build(pa.array(["a", "bc", None])).to_bytes().hex()}


# -- storage_for --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("location", "path"),
    [
        ("/tmp/lake", "/tmp/lake"),
        ("/tmp/lake/", "/tmp/lake"),
        ("/tmp//lake/./x/..", "/tmp/lake"),
        ("/", "/"),
        ("file:/tmp/lake", "/tmp/lake"),
        ("file:///tmp/lake", "/tmp/lake"),
        ("file:///tmp/lake/", "/tmp/lake"),
        ("file://localhost/tmp/lake", "/tmp/lake"),
        # Taken literally, as Hadoop does: '#', '?' and '%' are part of the name.
        ("file:/tmp/lake#x", "/tmp/lake#x"),
        ("file:///tmp/lake?v=1", "/tmp/lake?v=1"),
        ("/tmp/a b/ü%20", "/tmp/a b/ü%20"),
        ("file:/tmp/a b", "/tmp/a b"),
    ],
)
def test_storage_for_local_paths_and_file_uris(location, path):
    storage, found = storage_for(location)
    assert found == path
    assert storage.is_local and storage.scheme == "file"
    assert storage is storage_for("/")[0]  # one local storage: its counters see every local read
    assert storage.uri(found) == "file://" + path


def test_storage_for_relative_and_home_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert storage_for("lake/part/")[1] == os.path.join(os.getcwd(), "lake", "part")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert storage_for("~/lake")[1] == f"{tmp_path}/home/lake"


def test_storage_for_reads_what_it_names(tmp_path):
    (tmp_path / "a#b").mkdir()
    (tmp_path / "a#b" / "f").write_bytes(b"hello")
    storage, path = storage_for(f"file://{tmp_path}/a#b")
    before = storage.stats.snapshot()
    assert storage.read(f"{path}/f") == b"hello"
    assert storage.list_dirs(str(tmp_path)) == ["a#b"]
    after = storage.stats.snapshot()
    assert (after["reads"] - before["reads"], after["bytes_read"] - before["bytes_read"]) == (1, 5)


# -- the root's JSON form -----------------------------------------------------------------------------
def _root(**changes) -> Root:
    int_key, date_key = pa.int64(), pa.date32()
    main = Segment(
        (
            _info(None, 399, entries=420, keys=400, path="data/op1/c0-a.parquet"),
            _info(400, 2**63 - 1, entries=400, keys=400, path="data/op1/c0-b.parquet"),
        )
    )
    increment = Segment((_info(-5, 17, entries=3, chunks=1, path="data/op2/c0-a.parquet"),))
    days = Segment((_info(-800_000, 3_000_000, entries=9, chunks=2, path="data/op1/c1-a.parquet"),))
    lineage = LineageSet(
        parts=(
            LineagePart(
                2,
                300,
                0,
                inline=Lineage([0, 1], ["a=1/x.parquet", "a=2/y#z.parquet"], [100, 200], [5, 6], ["1-2", ""]),
            ),
            LineagePart(3, 900, 4096, path="lineage/op2-0badcafe-4096.parquet"),
        ),
        removed=frozenset({1, 3}),
        next_file_id=5,
        pending=LineagePart(1, 50, 0, inline=Lineage([4], ["new.parquet"], [50], [7], ["9-9"])),
    )
    root = Root(
        version=7,
        operation="refresh incremental",
        timestamp_ms=1_700_000_000_000,
        state="active",
        data_version=6,
        schema=pa.schema([("id", pa.int64()), ("day", pa.date32()), ("a", pa.string())]),
        spark_schema='{"type":"struct","fields":[]}',
        partition_columns=("a",),
        lineage=lineage,
        kind="sorted",
        content=SortedIndex(
            config=IndexConfig(chunk_rows=64, entries_per_index_file=400, row_groups=True),
            indexes={
                "id": ColumnIndex("id", int_key, (main, increment)),
                "day": ColumnIndex("day", date_key, (days,)),
            },
            increment_filters=FiltersRef("data/op2/filters-12345678-77.parquet", 77),
        ),
        source_version="v3",
    )
    return dataclasses.replace(root, **changes)


def _json(root: Root) -> dict:
    return json.loads(json.dumps(root.to_json()))  # a log entry's body is JSON text


@pytest.mark.parametrize("changes", [{}, {"state": "deleted", "source_version": None}])
def test_root_round_trips_through_json(changes):
    root = _root(**changes)
    body = _json(root)
    assert body["format"] == "lakeseek" and body["format_version"] == FORMAT_VERSION
    again = Root.from_json(body, decode_content)
    assert again == root
    assert again.columns == ("id", "day")
    assert again.content.indexes["id"].segments[1].files[0].min == -5
    assert again.content.indexes["day"].files[0].max == 3_000_000  # a date key beyond year 9999, as a number
    assert again.lineage.parts[0].inline.versions == ["1-2", ""]
    assert again.referenced_paths() == root.referenced_paths()
    assert _json(again) == body  # and back to the same text


@pytest.mark.parametrize("version", [99, FORMAT_VERSION + 1, None, "5"])
def test_a_root_of_an_unknown_format_version_is_refused(version):
    body = _json(_root())
    body["format_version"] = version
    with pytest.raises(IndexFormatError, match=f"index format version {version} is not supported.*upgrade lakeseek"):
        Root.from_json(body, decode_content)


@pytest.mark.parametrize("version", [5, 2, 1, 0])
def test_a_root_of_an_earlier_format_says_to_create_the_index_again(version):
    body = _json(_root())
    body["format_version"] = version
    with pytest.raises(IndexFormatError, match=f"version {version} is not supported.*create the index again"):
        Root.from_json(body, decode_content)


def test_a_root_of_an_unknown_kind_is_refused():
    body = _json(_root())
    body["kind"] = "zorder"
    with pytest.raises(IndexFormatError, match=r"kind 'zorder'.*upgrade lakeseek"):
        Root.from_json(body, decode_content)


@pytest.mark.parametrize(
    "damage",
    [
        lambda body: body["index"].pop("columns"),
        lambda body: body["index"].update(columns={}),
        lambda body: body.pop("index"),
        lambda body: body.update(kind=["sorted"]),
        lambda body: body.update(source_version=7),
        lambda body: body.update(format="delta"),
        lambda body: body["lineage"].update(next_file_id="many"),
        lambda body: body["index"]["columns"]["id"]["segments"][0][0].update(path="../../etc/passwd"),
        lambda body: body["index"]["columns"]["id"]["segments"][0][0].update(min="abc"),
        lambda body: body["index"].update(increment_filters={"path": "/tmp/x.parquet", "size": 1}),
        lambda body: body["index"].update(increment_filters={"path": "filters/a-12345678-7.parquet", "size": 1}),
    ],
)
def test_a_damaged_root_is_refused(damage):
    body = _json(_root())
    damage(body)
    with pytest.raises(IndexCorruptError):
        Root.from_json(body, decode_content)


# -- no Spark here -----------------------------------------------------------------------------------
def test_these_units_import_without_pyspark():
    script = (
        "import sys; sys.modules['pyspark'] = None\n"
        "import lakeseek.cost, lakeseek.kinds.sorted_index.reader, lakeseek.format.values\n"
        "import lakeseek.format.root, lakeseek.format.actions, lakeseek.io.storage, lakeseek.planning\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


@given(st.integers(-(2**31), 2**31 - 1))
def test_civil_dates_round_trip_over_the_whole_date32_range(days):
    from lakeseek.expressions.types import civil_from_days, date_text, days_from_civil, parse_date

    assert days_from_civil(*civil_from_days(days)) == days
    parsed = parse_date(date_text(days))
    assert (
        parsed.value if isinstance(parsed, pa.Scalar) else days_from_civil(parsed.year, parsed.month, parsed.day)
    ) == days


def test_lru_keeps_the_most_recently_used_within_its_weight():
    from lakeseek.lru import LRU

    cache: LRU[bytes] = LRU(10, weigh=len)
    cache.put("a", b"1234")
    cache.put("b", b"1234")
    assert cache.get("a") == b"1234"  # now the most recent
    cache.put("c", b"1234")  # 12 > 10: the least recent, b, goes
    assert cache.get("b") is None and cache.get("a") == b"1234" and cache.get("c") == b"1234"
    assert cache.weight == 8 and len(cache) == 2
    cache.put("a", b"1")  # replaced: its old weight is given back
    assert cache.weight == 5
    cache.put("big", b"x" * 50)  # heavier than the capacity: not kept, and nothing else is
    assert len(cache) == 0 and cache.get("big") is None and cache.weight == 0
    assert (cache.hits, cache.misses) == (3, 2)


def test_json_lines_are_strict_json_with_nan_and_infinities():
    from lakeseek.rendering import json_lines

    table = pa.table({"x": [1.5, float("nan"), float("inf"), float("-inf"), None]})
    rows = [json.loads(line, parse_constant=lambda name: pytest.fail(f"bare {name}")) for line in json_lines(table)]
    assert [row["x"] for row in rows] == [1.5, "NaN", "Infinity", "-Infinity", None]


def test_rows_past_year_9999_render_as_arrow_writes_them():
    from lakeseek.rendering import csv_text, json_lines

    table = pa.table({"id": [1, 3], "d": pa.array([1, 3_000_000], pa.date32())})
    assert [json.loads(line)["d"] for line in json_lines(table)] == ["1970-01-02", "10183-09-21"]
    assert "".join(csv_text(table)).splitlines()[2] == "3,10183-09-21"


def test_csv_text_writes_nested_values_as_their_json_and_spark_words():
    """A list, struct or map was Python's repr in CSV (`[0, None, 1]`, `{'a': 0}`), booleans
    `True`, NaN `nan`: now each field is what the JSON lines hold (as JSON text), booleans,
    NaN and infinities as Spark writes them."""
    import csv as python_csv
    import io

    from lakeseek.rendering import csv_text, json_lines

    table = pa.table(
        {
            "l": pa.array([[0, None, 1], None], pa.list_(pa.int64())),
            "s": pa.array([{"a": 0, "b": "s0"}, None]),
            "m": pa.array([[("x", 0)], None], pa.map_(pa.string(), pa.int64())),
            "flag": [True, False],
            "f": [float("nan"), float("-inf")],
        }
    )
    rows = list(python_csv.DictReader(io.StringIO("".join(csv_text(table)))))
    expected = [json.loads(line) for line in json_lines(table)]
    for row, shown in zip(rows, expected, strict=True):
        for name in ("l", "s", "m"):
            assert (json.loads(row[name]) if row[name] else None) == shown[name]
    assert [(row["flag"], row["f"]) for row in rows] == [("true", "NaN"), ("false", "-Infinity")]


def test_csv_text_tells_an_empty_string_from_null():
    """As Spark writes CSV: NULL an empty field, an empty string (or binary) quoted."""
    import csv as python_csv
    import io

    from lakeseek.rendering import csv_text

    table = pa.table({"s": ["", None, 'a,"b"', "line\nbreak", "x"], "b": [b"", None, b"\x00", None, b"y"]})
    written = "".join(csv_text(table))
    assert written.splitlines()[:3] == ["s,b", '"",""', ","]
    read = pacsv.read_csv(
        pa.BufferReader(written.encode()),
        convert_options=pacsv.ConvertOptions(
            column_types={"s": pa.string(), "b": pa.string()},
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )
    assert read.column("s").to_pylist() == table.column("s").to_pylist()
    assert read.column("b").to_pylist() == ["", None, "AA==", None, "eQ=="]
    assert list(python_csv.reader(io.StringIO(written)))[3] == ['a,"b"', "AA=="]


def test_a_failed_spark_task_is_named_by_its_python_exception():
    """Spark's message of a task's Python exception is a line ending in a colon, then the
    traceback: the error said "Spark job failed: An exception was thrown from the Python
    worker:" and nothing more (found by the object store hunt)."""
    from lakeseek.engine.runner import _spark_message

    text = (
        "An exception was thrown from the Python worker:\n"
        "Traceback (most recent call last):\n"
        '  File "worker.py", line 4327, in invoke_udf\n'
        "    run_process()\n"
        "obstore.exceptions.GenericError: Generic S3 error: Error performing HEAD http://127.0.0.1/lake/a.parquet\n"
    )
    assert _spark_message(Exception(text)) == (
        "Spark job failed: An exception was thrown from the Python worker: obstore.exceptions.GenericError: "
        "Generic S3 error: Error performing HEAD http://127.0.0.1/lake/a.parquet"
    )
    assert _spark_message(Exception("[TASK_FAILED] the job was cancelled\nmore")) == (
        "Spark job failed: [TASK_FAILED] the job was cancelled"
    )
