"""Lookups in a cuckoo index: a value's two buckets, read in every segment of its column.

A value's hash gives its two buckets and fingerprint (:mod:`.filters`). In each segment, the
two buckets are two ranged reads of the bucket file (one read of the whole file when it is
small: an increment); a slot holding the fingerprint belongs to the file whose slots span it,
found from the directory's slot counts (read once per version). IS NULL reads the
directory's NULL flags. Ranges and LIKE are not what a membership filter answers.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

from lakeseek.cost import Cost, Estimate, LakeSize
from lakeseek.exceptions import IndexCorruptError
from lakeseek.expressions.binding import value_type
from lakeseek.format.hashing import hash64
from lakeseek.format.root import Root
from lakeseek.io import Storage
from lakeseek.kinds.base import FILE_ID, KEY, LOCATION_SHIFT, REPAIR, Condition, KindReader, Lookup, Values
from lakeseek.kinds.cuckoo.build import NULLS, SLOTS, read_directory
from lakeseek.kinds.cuckoo.content import CuckooIndex, FilterSegment
from lakeseek.kinds.cuckoo.filters import alternate, as_stored, decode_bucket, matching, positions, read_all_buckets
from lakeseek.kinds.keys import bound_key

# A bucket file this small is read whole, in one read, and kept (an increment's).
SMALL_BUCKET_FILE = 64 * 1024


class CuckooReader(KindReader):
    def __init__(self, storage: Storage, index_dir: str, root: Root) -> None:
        self.storage = storage
        self.index_dir = index_dir
        self.content: CuckooIndex = root.content
        self.schema = root.schema
        self._lock = threading.Lock()
        self._directories: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # ids, slot ends, null files
        self._small: dict[str, np.ndarray] = {}  # small bucket files, whole

    def lookup(self, condition: Condition, indexed: LakeSize) -> Lookup | str:
        column = condition.column
        if column not in self.content.key_types:
            return f"column '{column}' is not indexed"
        if not isinstance(condition, Values):
            return f"a cuckoo filter answers = and IN on '{column}', not ranges or LIKE"
        key_type = self.content.key_types[column]
        column_type = value_type(self.schema.field(column).type)
        keys = [None if v is None else bound_key(v, column_type, key_type) for v in condition.values]
        values = pa.array(list(dict.fromkeys(k for k in keys if k is not None)), key_type)
        null = None in keys
        segments = self.content.segments_of(column)
        return Lookup(column, _estimate(segments, len(values), null), lambda: self._locations(segments, values, null))

    def key_type(self, column: str, column_type: pa.DataType) -> pa.DataType:
        return self.content.key_types[column]

    def locate(self, column: str, keys: pa.Array) -> tuple[pa.Table, bool]:
        """Candidate files per key: not exact (a fingerprint may match another key), so the
        files named are read to keep the pairs that hold."""
        hashes = hash64(keys)
        found_keys, found_ids = [], []
        for segment in self.content.segments_of(column):
            positions_of_keys, ids = self._matches(segment, hashes)
            found_keys.append(positions_of_keys)
            found_ids.append(ids)
        at = np.concatenate(found_keys) if found_keys else np.zeros(0, np.int64)
        ids = np.concatenate(found_ids) if found_ids else np.zeros(0, np.int32)
        return pa.table({KEY: keys.take(pa.array(at)), FILE_ID: pa.array(ids, pa.int32())}), False

    def problems(self) -> list[str]:
        found = []
        for segment in self.content.segments:
            try:
                read_directory(self.storage, self.index_dir, segment)
                if segment.buckets_path is not None:
                    path = f"{self.index_dir}/{segment.buckets_path}"
                    read_all_buckets(self.storage.read(path), segment, path)
            except (IndexCorruptError, FileNotFoundError) as error:
                found.append(f"{error}: queries on '{segment.column}' read every file; {REPAIR}")
        return found

    # -- lookups --------------------------------------------------------------------------------
    def _locations(self, segments: list[FilterSegment], values: pa.Array, null: bool) -> np.ndarray:
        hashes = hash64(values) if len(values) else np.zeros(0, np.uint64)
        found = []
        for segment in segments:
            if len(hashes):
                found.append(self._matches(segment, hashes)[1])
            if null:
                ids, _, nulls = self._directory(segment)
                found.append(ids[nulls])
        ids = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
        return ids.astype(np.int64) << LOCATION_SHIFT

    def _matches(self, segment: FilterSegment, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position of the key in ``hashes``, file id) for every slot matching a key's fingerprint."""
        if segment.buckets_path is None or not len(hashes):
            return np.zeros(0, np.int64), np.zeros(0, np.int32)
        ids, ends, _ = self._directory(segment)
        first, fingerprint = positions(hashes, segment.buckets, segment.bits)
        second = alternate(first, fingerprint, segment.buckets)
        keys_at, files_at = [], []
        for bucket in np.unique(np.concatenate([first, second])).tolist():
            slots = self._bucket(segment, bucket)
            for key in np.flatnonzero((first == bucket) | (second == bucket)).tolist():
                hits = matching(slots, int(fingerprint[key]), segment.bits)
                if len(hits):
                    keys_at.append(np.full(len(hits), key, np.int64))
                    files_at.append(ids[np.searchsorted(ends, hits, side="right")])
        if not files_at:
            return np.zeros(0, np.int64), np.zeros(0, np.int32)
        keys = np.concatenate(keys_at)
        files = np.concatenate(files_at)
        # A key whose two buckets are one, or several slots of one file: each pair once.
        pairs = np.unique(np.stack([keys, files.astype(np.int64)]), axis=1)
        return pairs[0], pairs[1].astype(np.int32)

    def _bucket(self, segment: FilterSegment, bucket: int) -> np.ndarray:
        path = f"{self.index_dir}/{segment.buckets_path}"
        if segment.buckets_size <= SMALL_BUCKET_FILE:
            with self._lock:
                whole = self._small.get(path)
            if whole is None:
                matrix = read_all_buckets(self._read(path), segment, path)
                whole = as_stored(matrix, segment.bits)
                with self._lock:
                    self._small[path] = whole
            return whole[bucket]
        try:
            data = self.storage.read_range(path, segment.first + bucket * segment.stride, segment.read)
        except FileNotFoundError as error:
            raise IndexCorruptError(f"the cuckoo bucket file {path} is missing") from error
        return decode_bucket(data, segment, path)

    def _read(self, path: str) -> bytes:
        try:
            return self.storage.read(path)
        except FileNotFoundError as error:
            raise IndexCorruptError(f"the cuckoo bucket file {path} is missing") from error

    def _directory(self, segment: FilterSegment) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        with self._lock:
            known = self._directories.get(segment.directory)
        if known is None:
            directory = read_directory(self.storage, self.index_dir, segment)
            known = (directory[FILE_ID], np.cumsum(directory[SLOTS]), directory[NULLS])
            with self._lock:
                self._directories[segment.directory] = known
        return known


def _estimate(segments: list[FilterSegment], keys: int, null: bool) -> Estimate:
    """Per segment: two bucket reads per key (one read of a small file), the files holding a
    key and the fingerprints' false positives; the directory's NULL flags for IS NULL."""
    index = Cost()
    candidates = 0.0
    for segment in segments:
        if keys and segment.buckets_path is not None:
            if segment.buckets_size <= SMALL_BUCKET_FILE:
                index = index + Cost(1, segment.buckets_size)
            else:
                index = index + Cost(2 * keys, 2 * keys * segment.read)
            per_key = segment.files_per_value + segment.false_positives
            candidates += min(segment.files, keys * per_key)
        if null:
            candidates += segment.null_files
    return Estimate(candidates, index)
