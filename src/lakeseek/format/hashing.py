"""64-bit hashes of index keys, computed a whole Arrow array at a time.

Membership filters (bloom filters, cuckoo fingerprints and buckets) hash keys in builds of
millions of values and in lookups of one: hashing in Python, value by value, would cost more
than reading the data. Keys hash by their key type's canonical form (see
:mod:`lakeseek.format.values`): integers, booleans, dates and timestamps as 64-bit integers,
decimals by their 16 bytes, text and bytes by their bytes, eight at a time. The hash is
stable across processes, machines and Python versions: it is part of the index format
(docs/format.md).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

# SplitMix64's finalizer (Steele, Lea and Flood, 2014): every input bit reaches every output bit.
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_NULL_HASH = np.uint64(0x6A09E667F3BCC909)  # what NULL hashes to (the fractional bits of sqrt(2))


def mix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer over uint64 values (a bijection: distinct in, distinct out)."""
    x = values.astype(np.uint64, copy=True)
    x ^= x >> np.uint64(30)
    x *= _MIX_1
    x ^= x >> np.uint64(27)
    x *= _MIX_2
    x ^= x >> np.uint64(31)
    return x


def hash64(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The 64-bit hash of each key (uint64; NULL has one fixed hash), by the array's type."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    key_type = keys.type
    if pa.types.is_dictionary(key_type):
        keys = keys.cast(key_type.value_type)
        key_type = keys.type
    if pa.types.is_decimal(key_type):
        hashed = _hash_words(_decimal_words(keys))
    elif _is_text_or_bytes(key_type):
        hashed = _hash_bytes(keys)
    else:
        as_int = keys.cast(pa.int32()) if pa.types.is_date32(key_type) else keys
        if not (pa.types.is_int64(as_int.type) or pa.types.is_uint64(as_int.type)):
            as_int = as_int.cast(pa.int64())  # a uint64 is hashed by its bits: those of an int64 of its value
        hashed = mix64(as_int.fill_null(0).to_numpy(zero_copy_only=False).view(np.uint64) + _GOLDEN)
    if keys.null_count:
        hashed[np.asarray(keys.is_null())] = _NULL_HASH
    return hashed


def _is_text_or_bytes(key_type: pa.DataType) -> bool:
    return (
        pa.types.is_string(key_type)
        or pa.types.is_large_string(key_type)
        or pa.types.is_string_view(key_type)
        or pa.types.is_binary(key_type)
        or pa.types.is_large_binary(key_type)
        or pa.types.is_binary_view(key_type)
        or pa.types.is_fixed_size_binary(key_type)
    )


def _decimal_words(keys: pa.Array) -> np.ndarray:
    """A decimal array's values as little-endian 64-bit words each (rows x 2; a decimal of more
    than 38 digits, rows x 4)."""
    if keys.type.bit_width != 128 and keys.type.precision <= 38:
        keys = keys.cast(pa.decimal128(keys.type.precision, keys.type.scale))
    words = keys.type.bit_width // 64
    raw = np.frombuffer(keys.buffers()[1], dtype=np.uint64, count=words * (keys.offset + len(keys)))
    return raw.reshape(-1, words)[keys.offset :]


def _hash_words(words: np.ndarray) -> np.ndarray:
    hashed = mix64(np.full(len(words), words.shape[1], dtype=np.uint64) + _GOLDEN)
    for column in range(words.shape[1]):
        hashed = mix64((hashed ^ words[:, column]) + _GOLDEN)
    return hashed


def _hash_bytes(keys: pa.Array) -> np.ndarray:
    """Bytes hashed eight at a time: the strings still longer than ``8 * w`` take word ``w``,
    its bytes past the string's end masked to zero."""
    plain = keys.cast(pa.large_binary())
    offsets = np.frombuffer(plain.buffers()[1], dtype=np.int64, count=plain.offset + len(plain) + 1)[plain.offset :]
    data_buffer = plain.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    hashed = mix64(lengths.astype(np.uint64) + _GOLDEN)
    longest = int(lengths.max()) if len(lengths) else 0
    if not longest:
        return hashed
    padded = np.zeros(int(offsets[-1]) + 8, dtype=np.uint8)
    padded[: int(offsets[-1])] = data[: int(offsets[-1])]
    # A little-endian word starting at every byte (unaligned reads, no copy).
    words_at = np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    for word in range((longest + 7) // 8):
        remaining = lengths - 8 * word
        alive = np.flatnonzero(remaining > 0)
        words = words_at[offsets[alive] + 8 * word] & _MASKS[np.minimum(remaining[alive], 8)]
        hashed[alive] = mix64((hashed[alive] ^ words) + _GOLDEN)
    return hashed


# The low ``n`` bytes of a word, for n = 0..8.
_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)


# Smallest distinct hashes kept to estimate distinct values (KMV: ~3 % error).
DISTINCT_SAMPLE = 1024


def smallest_hashes(hashes: list[np.ndarray]) -> np.ndarray:
    """The DISTINCT_SAMPLE smallest distinct hashes among ``hashes`` (each array's own
    smallest first: the union's are among them)."""
    smallest = [_sorted_distinct(part)[:DISTINCT_SAMPLE] for part in hashes]
    return _sorted_distinct(np.concatenate(smallest))[:DISTINCT_SAMPLE] if smallest else np.zeros(0, np.uint64)


def _sorted_distinct(values: np.ndarray) -> np.ndarray:
    """``values`` sorted without repeats (a sort: NumPy's hash-based unique is slower on uint64)."""
    ordered = np.sort(values)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered


def distinct_estimate(smallest: np.ndarray) -> float:
    """Distinct values from the smallest distinct hashes (Bar-Yossef et al.'s KMV estimate)."""
    if len(smallest) < DISTINCT_SAMPLE:
        return float(len(smallest))
    return (DISTINCT_SAMPLE - 1) / (float(smallest[-1]) / 2.0**64)
