"""Aligned cuckoo filters (seed 004): every data file's filter of a column has the same
buckets, and a segment stores them bucket-major, so a value's candidate files are in two
buckets whatever the number of files.

A key's 64-bit hash (:func:`lakeseek.format.hashing.hash64`) gives its first bucket
(``hash mod n``) and, through a second, independent mix, its ``bits``-bit fingerprint (0 is
an empty slot, so a fingerprint of 0 becomes 1). Its other bucket is ``(H(fp) - i) mod n``,
which maps either bucket to the other for any ``n`` (the seed's rule; the cuckoo paper's XOR
needs a power of two). A file's filter has ``slots`` slots in each bucket, grown until its
keys fit.

The buckets of a segment are a Parquet file of one row group per bucket, each holding one
``fingerprints`` value (``fixed_size_binary``: every file's slots of that bucket, file after
file, little-endian) and its ``crc32``: plain, uncompressed, without statistics, so every row
group has the same size and bucket ``j`` is one ranged read at ``first + j * stride``. The
crc32 starts from a random seed the root records with the segment: a lookup reads no footer,
so the seed is what binds the file to the root (another segment's bucket file of the same
shape put in its place fails every bucket's check).
"""

from __future__ import annotations

import io
import random
import secrets
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakeseek.exceptions import IndexCorruptError, one_line
from lakeseek.format.hashing import mix64
from lakeseek.kinds.cuckoo.content import FilterSegment

FINGERPRINT_BITS = (16, 24, 32)
MAX_KICKS = 500  # the cuckoo paper's bound on evictions before a filter is declared full
# Loads a filter is sized for: slots per bucket -> the share of slots it fills (cuckoo paper, Table 2, with margin).
_LOAD = {1: 0.45, 2: 0.8, 3: 0.88}
LOAD = 0.9  # four or more slots per bucket
_FINGERPRINT_SALT = np.uint64(0xC2B2AE3D27D4EB4F)
_ALTERNATE_SALT_INT = 0x165667B19E3779F9
_ALTERNATE_SALT = np.uint64(_ALTERNATE_SALT_INT)
_MIX_1, _MIX_2, _WORD = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, (1 << 64) - 1
FINGERPRINTS = "fingerprints"
_STORED = {16: np.dtype("<u2"), 32: np.dtype("<u4")}
CRC = "crc32"


def load(slots: int) -> float:
    return _LOAD.get(slots, LOAD)


def bucket_count(distinct_per_file: list[int], slots: int) -> int:
    """Buckets for files of these distinct counts: the median file fills ``slots`` slots per
    bucket to their load (bigger files get more slots, smaller ones fewer)."""
    counts = [count for count in distinct_per_file if count > 0]
    if not counts:
        return 1
    return max(1, int(np.ceil(float(np.median(counts)) / (slots * load(slots)))))


def positions(hashes: np.ndarray, buckets: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Each hash's first bucket (int64) and fingerprint (uint32)."""
    first = (hashes % np.uint64(buckets)).astype(np.int64)
    fingerprint = (mix64(hashes ^ _FINGERPRINT_SALT) >> np.uint64(64 - bits)).astype(np.uint32)
    fingerprint[fingerprint == 0] = 1
    return first, fingerprint


def alternate(bucket: np.ndarray, fingerprint: np.ndarray, buckets: int) -> np.ndarray:
    """The other bucket of each fingerprint in ``bucket`` (an involution)."""
    spread = (mix64(fingerprint.astype(np.uint64) ^ _ALTERNATE_SALT) % np.uint64(buckets)).astype(np.int64)
    return (spread - bucket) % buckets


def build_filter(hashes: np.ndarray, buckets: int, bits: int, seed: int) -> np.ndarray:
    """One file's filter of distinct key ``hashes``: an (buckets, slots) uint32 array of
    fingerprints (0: empty), with the fewest slots per bucket its keys fit in."""
    first, fingerprint = positions(hashes, buckets, bits)
    second = alternate(first, fingerprint, buckets)
    # Keys with the same fingerprint in the same pair of buckets are one entry (a lookup cannot tell them apart).
    low = np.minimum(first, second)
    _, unique = np.unique((low.astype(np.uint64) << np.uint64(32)) | fingerprint, return_index=True)
    first, second, fingerprint = first[unique], second[unique], fingerprint[unique]
    slots = 1
    while len(first) > buckets * slots * load(slots):
        slots += 1
    rng = random.Random(seed)
    while True:
        table = _placed(first, second, fingerprint, buckets, slots, rng)
        if table is not None:
            return table
        slots += 1


def _placed(
    first: np.ndarray, second: np.ndarray, fingerprint: np.ndarray, buckets: int, slots: int, rng: random.Random
) -> np.ndarray | None:
    """The entries in a filter of ``slots`` slots per bucket, or None when kicks fail."""
    table = np.zeros((buckets, slots), np.uint32)
    fill = np.zeros(buckets, np.int64)
    left = np.arange(len(first))
    # Most entries find room without an eviction: place them a bucket at a time, vectorised.
    for choice in (first, second):
        wanted = choice[left]
        order = np.argsort(wanted, kind="stable")
        ordered = wanted[order]
        starts = np.searchsorted(ordered, ordered, side="left")
        slot = fill[ordered] + (np.arange(len(ordered)) - starts)
        fits = slot < slots
        table[ordered[fits], slot[fits]] = fingerprint[left[order[fits]]]
        np.add.at(fill, ordered[fits], 1)
        left = left[order[~fits]]
    for entry in left.tolist():
        if not _kicked_in(table, fill, int(first[entry]), int(fingerprint[entry]), buckets, slots, rng):
            return None
    return table


def _kicked_in(
    table: np.ndarray, fill: np.ndarray, bucket: int, fingerprint: int, buckets: int, slots: int, rng: random.Random
) -> bool:
    """The cuckoo paper's insertion: evict a random entry, move it to its other bucket, repeat
    (one entry at a time, in plain Python: NumPy's per-call cost dominates here)."""
    for _ in range(MAX_KICKS):
        if fill[bucket] < slots:
            table[bucket, fill[bucket]] = fingerprint
            fill[bucket] += 1
            return True
        victim = rng.randrange(slots)
        fingerprint, table[bucket, victim] = int(table[bucket, victim]), fingerprint
        bucket = (_mix(fingerprint ^ _ALTERNATE_SALT_INT) % buckets - bucket) % buckets
    return False


def _mix(value: int) -> int:
    """:func:`lakeseek.format.hashing.mix64` of one value."""
    value ^= value >> 30
    value = (value * _MIX_1) & _WORD
    value ^= value >> 27
    value = (value * _MIX_2) & _WORD
    return value ^ (value >> 31)


# -- bucket files ------------------------------------------------------------------------------
def width(bits: int) -> int:
    """Bytes per slot."""
    return bits // 8


def checksum_seed() -> int:
    """A new bucket file's crc32 seed (from the OS: forked workers share ``random``'s state)."""
    return secrets.randbits(32)


def encode_buckets(slots: np.ndarray, bits: int, seed: int) -> tuple[bytes, int, int, int]:
    """The bucket file of an (buckets, total slots) fingerprint array, its checksums started
    from ``seed``; with the offset of bucket 0's fingerprints, the stride between buckets, and
    the bytes a bucket read takes (its fingerprints, then the crc32 column chunk that ends its
    row group)."""
    buckets, total = slots.shape
    raw = _slot_bytes(slots, bits).reshape(buckets, total * width(bits))
    crcs = np.fromiter((zlib.crc32(row, seed) for row in raw), np.uint32, buckets).view(np.int32)
    size = total * width(bits)
    fingerprints = pa.FixedSizeBinaryArray.from_buffers(pa.binary(size), buckets, [None, pa.py_buffer(raw.tobytes())])
    schema = pa.schema([pa.field(FINGERPRINTS, pa.binary(size), nullable=False), pa.field(CRC, pa.int32(), False)])
    sink = io.BytesIO()
    pq.write_table(
        pa.table([fingerprints, pa.array(crcs)], schema=schema),
        sink,
        row_group_size=1,
        compression="none",
        use_dictionary=False,
        write_statistics=False,
        data_page_size=1 << 30,
        store_schema=False,
    )
    data = sink.getvalue()
    metadata = pq.ParquetFile(io.BytesIO(data)).metadata
    groups = [metadata.row_group(j) for j in range(buckets)]
    starts = [g.column(0).data_page_offset for g in groups]
    ends = [g.column(1).data_page_offset + g.column(1).total_compressed_size for g in groups]
    first = starts[0] + groups[0].column(0).total_compressed_size - size
    stride = starts[1] - starts[0] if buckets > 1 else 0
    read = ends[0] - first
    if any(
        s != starts[0] + j * stride or e - s != ends[0] - starts[0]
        for j, (s, e) in enumerate(zip(starts, ends, strict=True))
    ):
        raise AssertionError("the Parquet writer did not lay the buckets out at one stride")  # pyarrow changed
    return data, first, stride, read


def decode_bucket(data: bytes, segment: FilterSegment, where: str) -> np.ndarray:
    """A bucket read of ``segment`` (``encode_buckets``' ``read`` bytes) as its slots, checked,
    in their stored width (compare them with :func:`stored`): no copy of a large bucket."""
    bits = segment.bits
    size = segment.slots * width(bits)
    fingerprints = memoryview(data)[:size]
    if len(data) < size + 4 or zlib.crc32(fingerprints, segment.checksum_seed) != int.from_bytes(data[-4:], "little"):
        raise IndexCorruptError(f"the cuckoo bucket file {where} is damaged (a bucket's checksum does not match)")
    if bits == 24:
        return np.frombuffer(fingerprints, np.uint8).reshape(-1, 3)
    return np.frombuffer(fingerprints, _STORED[bits])


def as_stored(slots: np.ndarray, bits: int) -> np.ndarray:
    """An (buckets, total) uint32 fingerprint array as :func:`decode_bucket` gives each bucket."""
    raw = np.ascontiguousarray(_slot_bytes(slots, bits)).reshape(slots.shape[0], -1)
    return raw.reshape(slots.shape[0], -1, 3) if bits == 24 else raw.view(_STORED[bits])


def matching(slots: np.ndarray, fingerprint: int, bits: int) -> np.ndarray:
    """Positions of the slots (one bucket, as :func:`decode_bucket` gives it) holding ``fingerprint``."""
    if bits != 24:
        return np.flatnonzero(slots == np.array(fingerprint, _STORED[bits]))
    # Three bytes a slot: the low byte first (1 in 256 slots pass), then the others where it did.
    low = np.flatnonzero(slots[:, 0] == (fingerprint & 0xFF))
    rest = (slots[low, 1] == ((fingerprint >> 8) & 0xFF)) & (slots[low, 2] == (fingerprint >> 16))
    return low[rest]


def read_all_buckets(data: bytes, segment: FilterSegment, where: str) -> np.ndarray:
    """Every bucket of ``segment``'s bucket file (a merge), as an (buckets, slots) array, checked."""
    buckets, total, bits, seed = segment.buckets, segment.slots, segment.bits, segment.checksum_seed
    try:
        table = pq.read_table(io.BytesIO(data))
    except (OSError, pa.ArrowException) as error:
        raise IndexCorruptError(f"the cuckoo bucket file {where} is damaged ({one_line(error)})") from error
    if table.num_rows != buckets:
        raise IndexCorruptError(f"the cuckoo bucket file {where} has {table.num_rows} buckets, not {buckets}")
    raw = table.column(FINGERPRINTS).combine_chunks()
    crcs = table.column(CRC).to_numpy().view(np.uint32)
    rows = np.frombuffer(raw.buffers()[1], np.uint8, buckets * total * width(bits)).reshape(buckets, -1)
    if any(zlib.crc32(row, seed) != crc for row, crc in zip(rows, crcs, strict=True)):
        raise IndexCorruptError(f"the cuckoo bucket file {where} is damaged (a bucket's checksum does not match)")
    return _fingerprints_of(rows.tobytes(), bits).reshape(buckets, total)


def _slot_bytes(slots: np.ndarray, bits: int) -> np.ndarray:
    little = np.ascontiguousarray(slots, "<u4")
    if bits == 32:
        return little.view(np.uint8)
    if bits == 16:
        return little.astype("<u2").view(np.uint8)
    return little.view(np.uint8).reshape(*slots.shape, 4)[..., :3].copy()


def _fingerprints_of(data: bytes, bits: int) -> np.ndarray:
    if bits == 32:
        return np.frombuffer(data, "<u4").astype(np.uint32)
    if bits == 16:
        return np.frombuffer(data, "<u2").astype(np.uint32)
    triples = np.frombuffer(data, np.uint8).reshape(-1, 3).astype(np.uint32)
    return triples[:, 0] | (triples[:, 1] << 8) | (triples[:, 2] << 16)
