"""Bloom filters over index keys, kept in the footers of increments.

An incremental refresh adds a segment per column; a lookup would otherwise read one
chunk per segment. With a filter in each increment's footer (cached with the
footer), a warm lookup reads only the segments that may hold the value: about one.

Keys hash through a canonical byte form and two CRC-32s (double hashing), which is
stable across processes and Python versions, unlike ``hash()``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import numpy as np

from lakeseek.format.values import KeyValue

BITS_PER_KEY = 10  # about 1 % false positives with 7 probes
PROBES = 7
_SECOND_SEED = 0x5BD1E995
_HEADER = 5  # probes (1 byte) + bit count (4 bytes)


def _key_bytes(value: KeyValue) -> bytes:
    if value is None:
        return b"\xff\x00null"
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return str(value).encode()


def _probes(data: bytes, bits: int) -> np.ndarray:
    first = zlib.crc32(data)
    second = zlib.crc32(data, _SECOND_SEED) | 1
    return (first + np.arange(PROBES, dtype=np.uint64) * second) % bits


class BloomFilter:
    def __init__(self, bitmap: np.ndarray, bits: int) -> None:
        self.bitmap = bitmap  # packed little-endian bits
        self.bits = bits

    @classmethod
    def build(cls, keys: Iterable[KeyValue]) -> BloomFilter:
        hashed = [_key_bytes(k) for k in keys]
        bits = max(64, len(hashed) * BITS_PER_KEY)
        flags = np.zeros(bits, dtype=bool)
        if hashed:
            first = np.fromiter((zlib.crc32(h) for h in hashed), dtype=np.uint64, count=len(hashed))
            second = np.fromiter((zlib.crc32(h, _SECOND_SEED) | 1 for h in hashed), dtype=np.uint64, count=len(hashed))
            probes = np.arange(PROBES, dtype=np.uint64)
            flags[((first[:, None] + probes[None, :] * second[:, None]) % bits).ravel()] = True
        return cls(np.packbits(flags, bitorder="little"), bits)

    def may_contain(self, value: KeyValue) -> bool:
        positions = _probes(_key_bytes(value), self.bits)
        return bool(np.all((self.bitmap[positions // 8] >> (positions % 8).astype(np.uint8)) & 1))

    def to_bytes(self) -> bytes:
        return bytes([PROBES]) + self.bits.to_bytes(4, "little") + self.bitmap.tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> BloomFilter:
        if len(data) < _HEADER or data[0] != PROBES:
            raise ValueError("not a lakeseek bloom filter")
        bits = int.from_bytes(data[1:_HEADER], "little")
        bitmap = np.frombuffer(data, dtype=np.uint8, offset=_HEADER)
        if len(bitmap) != (bits + 7) // 8:
            raise ValueError("bloom filter has the wrong length")
        return cls(bitmap, bits)
