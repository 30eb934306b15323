"""The cuckoo kind's part of a root: its settings and its segments, one column each.

A segment is what one build wrote for one column: a directory file (Parquet, one row per
data file: ``file_id``, ``slots`` per bucket, whether it holds NULL, its distinct keys) and a
bucket file (:mod:`.filters`). Every segment of a column has the same bucket count, chosen
when the column is first indexed, so optimize merges them by putting their buckets side by
side. The root keeps what a lookup needs to plan and to find a bucket without reading either
file's footer.
"""

from __future__ import annotations

from dataclasses import dataclass

from lakeseek.format.root import ColumnStatus
from lakeseek.format.sealed import index_path
from lakeseek.kinds.segments import SegmentedIndex

DEFAULT_BITS = 16
DEFAULT_SLOTS = 4


@dataclass(frozen=True)
class CuckooConfig:
    """``fingerprint_bits``: 16, 24 or 32 (false positives per file and lookup ~ 2·b·load/2^bits);
    ``slots``: the slots per bucket a median file gets, which sets a column's bucket count."""

    fingerprint_bits: int = DEFAULT_BITS
    slots: int = DEFAULT_SLOTS

    def to_json(self) -> dict:
        return {"fingerprint_bits": self.fingerprint_bits, "slots": self.slots}

    @classmethod
    def from_json(cls, raw: dict) -> CuckooConfig:
        bits, slots = raw["fingerprint_bits"], raw["slots"]
        if bits not in (16, 24, 32) or not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
            raise ValueError("the cuckoo index's settings are malformed")
        return cls(bits, slots)


@dataclass(frozen=True)
class FilterSegment:
    """One column's filters of ``files`` data files."""

    column: str
    directory: str  # the directory file's path, in the index directory
    directory_size: int
    directory_crc32: int  # of the whole directory file
    buckets_path: str | None  # the bucket file's (None: no file holds a key)
    buckets_size: int
    checksum_seed: int  # the bucket checksums' crc32 seed
    buckets: int  # buckets per filter
    bits: int  # fingerprint bits
    files: int
    slots: int  # slots per bucket, summed over the files: a bucket's length
    first: int  # where bucket 0's fingerprints start in the bucket file
    stride: int  # bytes from one bucket to the next
    read: int  # bytes of one bucket read (its fingerprints and checksum)
    keys: int  # distinct keys, summed over the files
    null_files: int
    distinct: float  # distinct keys over the files (estimated)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    @property
    def files_per_value(self) -> float:
        return max(self.keys / max(self.distinct, 1.0), 1.0) if self.keys else 0.0

    @property
    def false_positives(self) -> float:
        """Files a lookup of one absent key should still name: each filled slot of its two
        buckets matches a fingerprint with probability 2^-bits."""
        return 2.0 * min(self.keys, self.buckets * self.slots) / self.buckets / 2.0**self.bits

    @property
    def size(self) -> int:
        return self.directory_size + self.buckets_size

    def to_json(self) -> dict:
        return {
            "column": self.column,
            "directory": self.directory,
            "directory_size": self.directory_size,
            "directory_crc32": self.directory_crc32,
            "buckets_path": self.buckets_path,
            "buckets_size": self.buckets_size,
            "checksum_seed": self.checksum_seed,
            "buckets": self.buckets,
            "bits": self.bits,
            "files": self.files,
            "slots": self.slots,
            "first": self.first,
            "stride": self.stride,
            "read": self.read,
            "keys": self.keys,
            "null_files": self.null_files,
            "distinct": self.distinct,
        }

    @classmethod
    def from_json(cls, raw: dict) -> FilterSegment:
        path = raw["buckets_path"]
        whole = ("directory_size", "buckets_size", "buckets", "bits", "files", "slots", "first", "stride", "read")
        numbers = [int(raw[name]) for name in whole]
        if any(number < 0 for number in numbers) or numbers[2] < 1 or numbers[3] not in (16, 24, 32):
            raise ValueError("a cuckoo segment's numbers are malformed")
        checksums = [int(raw["directory_crc32"]), int(raw["checksum_seed"])]
        if any(not 0 <= number < 2**32 for number in checksums):
            raise ValueError("a cuckoo segment's checksums are malformed")
        return cls(
            str(raw["column"]),
            index_path(raw["directory"]),
            numbers[0],
            checksums[0],
            None if path is None else index_path(path),
            numbers[1],
            checksums[1],
            *numbers[2:],
            int(raw["keys"]),
            int(raw["null_files"]),
            float(raw["distinct"]),
        )


@dataclass(frozen=True)
class CuckooIndex(SegmentedIndex):
    """The cuckoo kind's part of a root (a :class:`lakeseek.format.root.IndexContent`)."""

    config: CuckooConfig
    segments: tuple[FilterSegment, ...]

    def buckets_of(self, column: str) -> int | None:
        """The column's bucket count (None: no segment fixes it yet)."""
        return next((s.buckets for s in self.segments_of(column)), None)

    def column_statuses(self) -> list[ColumnStatus]:
        statuses = []
        for column, key_type in self.key_types.items():
            segments = self.segments_of(column)
            size = sum(s.size for s in segments)
            keys = sum(s.keys for s in segments)
            statuses.append(ColumnStatus(column, str(key_type), keys, 2 * len(segments), len(segments), size))
        return statuses

    def referenced_paths(self) -> set[str]:
        paths = {s.directory for s in self.segments}
        return paths | {s.buckets_path for s in self.segments if s.buckets_path is not None}

    def to_json(self) -> dict:
        return {
            "config": self.config.to_json(),
            "columns": self.key_types_json(),
            "segments": [s.to_json() for s in self.segments],
        }

    @classmethod
    def from_json(cls, raw: dict) -> CuckooIndex:
        segments = tuple(FilterSegment.from_json(s) for s in raw["segments"])
        index = cls(CuckooConfig.from_json(raw["config"]), cls.key_types_from_json(raw), segments)
        index.check_segments()
        return index
