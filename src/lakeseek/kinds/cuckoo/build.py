"""Writing cuckoo segments: a build over some lake files, and a merge of segments (optimize).

A build is two stages of tasks (:mod:`lakeseek.engine.runner`). The first reads each data
file once and spills its distinct keys' hashes per column; the driver then fixes each new
column's bucket count from the files' distinct counts (a column already indexed keeps its
own, so its segments can be merged). The second builds every file's filters from the spills.
The driver puts the filters side by side, bucket-major, in one segment per column.
"""

from __future__ import annotations

import io
import uuid
import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakeseek.exceptions import IndexCorruptError, one_line
from lakeseek.format.hashing import distinct_estimate, hash64, smallest_hashes
from lakeseek.format.lineage import Lineage
from lakeseek.io import Stamp, Storage
from lakeseek.io.spills import read_spill, write_spill
from lakeseek.kinds.base import FILE_ID, KEY, Job, OperationFiles
from lakeseek.kinds.cuckoo.content import CuckooConfig, FilterSegment
from lakeseek.kinds.cuckoo.filters import bucket_count, build_filter, checksum_seed, encode_buckets, read_all_buckets
from lakeseek.kinds.file_keys import IndexedColumn, LakeScan, file_groups, scratch_cleared
from lakeseek.lake.files import reading_data_files

SLOTS = "slots"
NULLS = "nulls"
KEYS = "keys"
DIRECTORY_SCHEMA = pa.schema(
    [
        pa.field(FILE_ID, pa.int32(), False),
        pa.field(SLOTS, pa.int32(), False),
        pa.field(NULLS, pa.bool_(), False),
        pa.field(KEYS, pa.int64(), False),
    ]
)


@dataclass(frozen=True)
class Filters:
    """One column's filters of some files, in file order, before they are written
    (:func:`write_segment`)."""

    file_ids: np.ndarray
    slots: np.ndarray
    nulls: np.ndarray
    keys: np.ndarray
    tables: list[np.ndarray]  # per file, (buckets, slots) fingerprints


def build_segments(
    job: Job,
    config: CuckooConfig,
    columns: list[IndexedColumn],
    files: Lineage,
    buckets: dict[str, int | None],
) -> list[FilterSegment]:
    """One segment per column of ``columns`` over ``files``; ``buckets``: a column's bucket
    count, None to choose it from the files."""
    storage = job.storage
    scan = LakeScan.of(job, columns)
    with scratch_cleared(job):
        groups = file_groups(files, job.runner.parallelism) if len(files) else []
        spills = job.runner.run("hashing the lake's keys", [(scan, group) for group in groups], _hash_task)
        chosen = {}
        for number, column in enumerate(columns):
            counts = [count for spill in spills for count in spill["counts"][number]]
            chosen[column.name] = buckets.get(column.name) or bucket_count(counts, config.slots)
        spec = _FilterSpec(scan.index, tuple(chosen[c.name] for c in columns), config.fingerprint_bits)
        built = job.runner.run("building cuckoo filters", [(spec, spill["path"]) for spill in spills], _filter_task)
        parts = [_read_spill(storage, found["path"], spec.buckets) for found in built]
    segments = []
    for number, column in enumerate(columns):
        smallest = smallest_hashes([np.array(spill["smallest"][number], np.uint64) for spill in spills])
        filters = _joined([part[number] for part in parts], chosen[column.name])
        bits = config.fingerprint_bits
        segments.append(write_segment(storage, job.files, column.name, filters, chosen[column.name], bits, smallest))
    return [segment for segment in segments if segment.files]


def merge_segments(
    storage: Storage, files: OperationFiles, segments: list[FilterSegment], removed: frozenset[int]
) -> FilterSegment | None:
    """One segment of a column holding the filters of ``segments`` (all of one bucket count)
    but those of ``removed`` files. None: no file is left."""
    first = segments[0]
    ids, slots, nulls, keys, blocks = [], [], [], [], []
    for segment in segments:
        directory = read_directory(storage, files.index_dir, segment)
        kept = ~np.isin(directory[FILE_ID], np.fromiter(removed, np.int64, len(removed)))
        ids.append(directory[FILE_ID][kept])
        slots.append(directory[SLOTS][kept])
        nulls.append(directory[NULLS][kept])
        keys.append(directory[KEYS][kept])
        if segment.buckets_path is not None:
            path = f"{files.index_dir}/{segment.buckets_path}"
            matrix = read_all_buckets(storage.read(path), segment, path)
            blocks.append(matrix[:, np.repeat(kept, directory[SLOTS])])
    file_ids = np.concatenate(ids)
    if not len(file_ids):
        return None
    order = np.argsort(file_ids, kind="stable")
    matrix = np.concatenate(blocks, axis=1) if blocks else np.zeros((first.buckets, 0), np.uint32)
    slot_counts = np.concatenate(slots)
    starts = np.concatenate([[0], np.cumsum(slot_counts)[:-1]]).astype(np.int64)
    tables = [matrix[:, starts[i] : starts[i] + slot_counts[i]] for i in order]
    filters = Filters(
        file_ids[order], slot_counts[order], np.concatenate(nulls)[order], np.concatenate(keys)[order], tables
    )
    per_value = sum(s.files_per_value * s.files for s in segments) / max(sum(s.files for s in segments), 1)
    distinct = float(filters.keys.sum()) / max(per_value, 1.0)
    return write_segment(storage, files, first.column, filters, first.buckets, first.bits, distinct=distinct)


def read_directory(storage: Storage, index_dir: str, segment: FilterSegment) -> dict[str, np.ndarray]:
    """A segment's directory file as arrays, checked against the root."""
    path = f"{index_dir}/{segment.directory}"
    try:
        data = storage.read(path)
        if len(data) != segment.directory_size or zlib.crc32(data) != segment.directory_crc32:
            raise ValueError("not the file its index version wrote: checksum or size mismatch")
        table = pq.read_table(io.BytesIO(data), page_checksum_verification=True)
        if table.schema != DIRECTORY_SCHEMA:
            raise ValueError(f"its schema is {table.schema}")
    except FileNotFoundError as error:
        raise IndexCorruptError(f"the cuckoo directory file {path} is missing") from error
    except (OSError, ValueError, pa.ArrowException) as error:
        raise IndexCorruptError(f"the cuckoo directory file {path} is damaged ({one_line(error)})") from error
    found = {name: table.column(name).to_numpy() for name in DIRECTORY_SCHEMA.names}
    if len(found[FILE_ID]) != segment.files or int(found[SLOTS].sum()) != segment.slots:
        raise IndexCorruptError(f"the cuckoo directory file {path} does not match the root's segment")
    return found


def _joined(parts: list[Filters], buckets: int) -> Filters:
    order = np.argsort(np.concatenate([p.file_ids for p in parts] or [np.zeros(0, np.int32)]), kind="stable")
    tables = [table for p in parts for table in p.tables]

    def joined(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in parts] or [np.zeros(0, np.int64)])[order]

    return Filters(joined("file_ids"), joined("slots"), joined("nulls"), joined("keys"), [tables[i] for i in order])


def write_segment(
    storage: Storage,
    files: OperationFiles,
    column: str,
    filters: Filters,
    buckets: int,
    bits: int,
    smallest: np.ndarray | None = None,
    distinct: float | None = None,
) -> FilterSegment:
    """``filters`` written as a segment (a directory file, and a bucket file when any file has
    a key); ``smallest`` (the smallest distinct key hashes) or ``distinct`` estimate its
    distinct keys."""
    directory = pa.table(
        [
            pa.array(filters.file_ids, pa.int32()),
            pa.array(filters.slots, pa.int32()),
            pa.array(filters.nulls, pa.bool_()),
            pa.array(filters.keys, pa.int64()),
        ],
        schema=DIRECTORY_SCHEMA,
    )
    sink = io.BytesIO()
    pq.write_table(directory, sink, compression="zstd", write_page_checksum=True)
    directory_data = sink.getvalue()
    directory_path = f"{files.data_dir}/cuckoo-{uuid.uuid4().hex}.parquet"
    storage.write(f"{files.index_dir}/{directory_path}", directory_data)
    total = int(filters.slots.sum())
    buckets_path, buckets_size, first, stride, read = None, 0, 0, 0, 0
    seed = checksum_seed()
    if total:
        matrix = np.concatenate(filters.tables, axis=1) if filters.tables else np.zeros((buckets, 0), np.uint32)
        data, first, stride, read = encode_buckets(matrix, bits, seed)
        buckets_path = f"{files.data_dir}/buckets-{uuid.uuid4().hex}.parquet"
        storage.write(f"{files.index_dir}/{buckets_path}", data)
        buckets_size = len(data)
    return FilterSegment(
        column=column,
        directory=directory_path,
        directory_size=len(directory_data),
        directory_crc32=zlib.crc32(directory_data),
        buckets_path=buckets_path,
        buckets_size=buckets_size,
        checksum_seed=seed,
        buckets=buckets,
        bits=bits,
        files=len(filters.file_ids),
        slots=total,
        first=first,
        stride=stride,
        read=read,
        keys=int(filters.keys.sum()),
        null_files=int(filters.nulls.sum()),
        distinct=distinct if distinct is not None else distinct_estimate(smallest),
    )


# -- tasks (run on Spark executors, or in process) -------------------------------------------
def _hash_task(scan: LakeScan, files: list[tuple[int, str, Stamp]]) -> list[dict]:
    """Each file's distinct key hashes per column, spilled; their counts and smallest hashes returned."""
    reader, storage, scratch = scan.open()
    columns = scan.columns
    file_ids, per_column = [], [[] for _ in columns]
    nulls = [[] for _ in columns]
    for file_id, path, stamp in files:
        with reading_data_files(reader.source, [path]):  # a damaged file: an error naming it
            distinct = reader.distinct_keys(path, stamp, columns)
        file_ids.append(file_id)
        for number, column in enumerate(columns):
            keys = distinct[column.name].column(KEY).combine_chunks()
            nulls[number].append(keys.null_count > 0)
            per_column[number].append(hash64(keys.drop_null()))
    table = pa.table(
        {
            FILE_ID: pa.array(file_ids, pa.int32()),
            **{f"hashes_{n}": pa.array(hashes, pa.list_(pa.uint64())) for n, hashes in enumerate(per_column)},
            **{f"nulls_{n}": pa.array(flags, pa.bool_()) for n, flags in enumerate(nulls)},
        }
    )
    path = _spill(storage, scratch, table)
    return [
        {
            "path": path,
            "counts": [[len(h) for h in hashes] for hashes in per_column],
            "smallest": [smallest_hashes(hashes).tolist() for hashes in per_column],
        }
    ]


@dataclass(frozen=True)
class _FilterSpec:
    index: object  # the index directory (an Address), for the spills
    buckets: tuple[int, ...]  # per column
    bits: int


def _filter_task(spec: _FilterSpec, spill: str) -> list[dict]:
    """The filters of the files of one spill, spilled as fingerprints per column."""
    storage, _ = spec.index.open()
    table = read_spill(storage, spill)
    ids = table.column(FILE_ID).to_numpy()
    out = {FILE_ID: table.column(FILE_ID)}
    for number, buckets in enumerate(spec.buckets):
        hashes = table.column(f"hashes_{number}").combine_chunks()
        flat, offsets = hashes.values.to_numpy(), hashes.offsets.to_numpy()
        built = [
            build_filter(flat[start:end], buckets, spec.bits, seed=int(file_id))
            if end > start
            else np.zeros((buckets, 0), np.uint32)
            for file_id, start, end in zip(ids, offsets[:-1], offsets[1:], strict=True)
        ]
        out[f"slots_{number}"] = pa.array([t.shape[1] for t in built], pa.int32())
        out[f"keys_{number}"] = pa.array(np.diff(offsets), pa.int64())
        out[f"nulls_{number}"] = table.column(f"nulls_{number}")
        out[f"fingerprints_{number}"] = pa.array([t.tobytes() for t in built], pa.large_binary())
    return [{"path": _spill(storage, spill.rsplit("/", 1)[0], pa.table(out))}]


def _read_spill(storage: Storage, path: str, buckets: tuple[int, ...]) -> list[Filters]:
    """A filter task's spill: per column, its files' filters."""
    table = read_spill(storage, path)
    ids = table.column(FILE_ID).to_numpy()
    found = []
    for number, count in enumerate(buckets):
        slots = table.column(f"slots_{number}").to_numpy()
        raw = table.column(f"fingerprints_{number}").to_pylist()
        tables = [np.frombuffer(r, np.uint32).reshape(count, s) for r, s in zip(raw, slots, strict=True)]
        nulls = table.column(f"nulls_{number}").to_numpy(zero_copy_only=False)
        found.append(Filters(ids, slots, nulls, table.column(f"keys_{number}").to_numpy(), tables))
    return found


def _spill(storage: Storage, scratch: str, table: pa.Table) -> str:
    path = f"{scratch}/cuckoo-{uuid.uuid4().hex}.arrow"
    write_spill(storage, path, table)
    return path
