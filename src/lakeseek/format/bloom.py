"""Bloom filters over index keys: built and probed a whole Arrow array at a time.

The sorted kind keeps one in each increment's footer (a warm lookup then reads only the
segments that may hold a value); the skipping kind keeps one per data file and column, and
probes the filters of every file at once (:func:`filters_may_contain`).

Keys hash with :func:`lakeseek.format.hashing.hash64`; probes are ``h1 + i * h2`` (double
hashing, Kirsch and Mitzenmacher) from the hash's two halves. The serialised form is a
header (format byte, probes, bit count, little-endian) and the bits, packed little-endian.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from lakeseek.format.hashing import hash64

BITS_PER_KEY = 10  # about 0.8 % false positives with 7 probes
PROBES = 7
MIN_BITS = 64
FALSE_POSITIVE_RATE = (1 - math.exp(-PROBES / BITS_PER_KEY)) ** PROBES
_FORMAT = 2  # 1 was CRC-32 probes of the keys' text (lakeseek before index format 8)
_HEADER = 6  # format (1 byte) + probes (1 byte) + bit count (4 bytes)
_LOW = np.uint64(0xFFFFFFFF)


def _positions(hashes: np.ndarray, bits: np.ndarray | int) -> np.ndarray:
    """Bit positions probed for each hash (rows: hashes, columns: probes), in filters of
    ``bits`` bits (one count, or one per hash)."""
    first = hashes & _LOW
    second = (hashes >> np.uint64(32)) | np.uint64(1)
    steps = np.arange(PROBES, dtype=np.uint64)
    size = np.asarray(bits, dtype=np.uint64).reshape(-1, 1) if np.ndim(bits) else np.uint64(bits)
    return (first[:, None] + steps[None, :] * second[:, None]) % size


def bits_for(keys: int) -> int:
    return max(MIN_BITS, keys * BITS_PER_KEY)


def keys_held(sizes: np.ndarray) -> np.ndarray:
    """About how many keys filters of these serialised sizes were built from."""
    return np.maximum(sizes - _HEADER, 0) * 8 / BITS_PER_KEY


class BloomFilter:
    def __init__(self, bitmap: np.ndarray, bits: int) -> None:
        self.bitmap = bitmap  # packed little-endian bits
        self.bits = bits

    @classmethod
    def build(cls, keys: pa.Array | pa.ChunkedArray) -> BloomFilter:
        """A filter of ``keys`` (NULL included, as a key of its own)."""
        bits = bits_for(len(keys))
        flags = np.zeros(bits, dtype=bool)
        if len(keys):
            flags[_positions(hash64(keys), bits).ravel()] = True
        return cls(np.packbits(flags, bitorder="little"), bits)

    def may_contain(self, keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Per key, whether it may be in the filter (False: it is not)."""
        positions = _positions(hash64(keys), self.bits)
        return np.all((self.bitmap[positions >> np.uint64(3)] >> (positions & np.uint64(7)).astype(np.uint8)) & 1, 1)

    def to_bytes(self) -> bytes:
        return bytes([_FORMAT, PROBES]) + self.bits.to_bytes(4, "little") + self.bitmap.tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> BloomFilter:
        if len(data) < _HEADER or data[0] != _FORMAT or data[1] != PROBES:
            raise ValueError("not a lakeseek bloom filter")
        bits = int.from_bytes(data[2:_HEADER], "little")
        bitmap = np.frombuffer(data, dtype=np.uint8, offset=_HEADER)
        if len(bitmap) != (bits + 7) // 8:
            raise ValueError("bloom filter has the wrong length")
        return cls(bitmap, bits)


def filters_may_contain(filters: pa.Array, keys: pa.Array) -> np.ndarray:
    """For each serialised filter of ``filters`` (binary), whether any of ``keys`` may be in
    it; a NULL filter holds nothing. Every filter is probed at once: the keys' hashes and
    probes are computed once, and the bits gathered from the filters' shared buffer."""
    plain = filters.cast(pa.large_binary())
    held = np.zeros(len(plain), dtype=bool)
    present = np.flatnonzero(np.asarray(plain.is_valid()))
    if not len(present) or not len(keys):
        return held
    offsets = np.frombuffer(plain.buffers()[1], dtype=np.int64, count=plain.offset + len(plain) + 1)[plain.offset :]
    data = np.frombuffer(plain.buffers()[2], dtype=np.uint8)
    starts = offsets[present]
    if np.any(offsets[present + 1] - starts < _HEADER) or np.any(data[starts] != _FORMAT):
        raise ValueError("not a lakeseek bloom filter")
    bits = (
        data[starts + 2].astype(np.uint64)
        | data[starts + 3].astype(np.uint64) << np.uint64(8)
        | data[starts + 4].astype(np.uint64) << np.uint64(16)
        | data[starts + 5].astype(np.uint64) << np.uint64(24)
    )
    if np.any((bits + np.uint64(7)) // np.uint64(8) != (offsets[present + 1] - starts - _HEADER).astype(np.uint64)):
        raise ValueError("bloom filter has the wrong length")
    bitmaps = (starts + _HEADER).astype(np.uint64)
    found = np.zeros(len(present), dtype=bool)
    for hashed in hash64(keys):
        positions = _positions(np.full(len(present), hashed, dtype=np.uint64), bits)
        probed = data[bitmaps[:, None] + (positions >> np.uint64(3))] >> (positions & np.uint64(7)).astype(np.uint8)
        found |= np.all(probed & 1, 1)
    held[present] = found
    return held
