"""The sorted kind's index files (the paper's Table 3) as Parquet.

An index file holds ``(key, file_id)`` rows sorted by key, for one disjoint key range of
one column; an index built with row-group precision adds ``row_group`` (the Parquet row
group of the data file that holds the key). Each Parquet row group is a chunk; a chunk never splits the entries of one
key, so a value lives in exactly one chunk. The footer's key-value metadata carries
every chunk's ``[min, max]``, so once the footer is read the one chunk to read is known.
``file_id`` points into the lineage (the list of indexed data files).
"""

from __future__ import annotations

import base64
import bisect
import itertools
import json
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeseek.exceptions import IndexCorruptError, one_line
from lakeseek.format import values
from lakeseek.format.bloom import BloomFilter
from lakeseek.format.footers import FileStamp, check_stamp, footer_crc32, is_stamped
from lakeseek.format.sealed import index_path
from lakeseek.format.values import KeyValue, sort_key
from lakeseek.io import Storage
from lakeseek.kinds.base import FILE_ID, KEY, ROW_GROUP

CHUNKS_METADATA = b"lakeseek.chunks"
BLOOM_METADATA = b"lakeseek.bloom"
DEFAULT_CHUNK_ROWS = 32_768


def entry_schema(key_type: pa.DataType, row_groups: bool = False) -> pa.Schema:
    fields = [pa.field(KEY, key_type), pa.field(FILE_ID, pa.int32(), nullable=False)]
    if row_groups:
        fields.append(pa.field(ROW_GROUP, pa.int32(), nullable=False))
    return pa.schema(fields)


def entry_order(row_groups: bool) -> list[tuple]:
    """The order of entries in index files: by key (NULL first), then data file, then row group."""
    order = [(KEY, "ascending", "at_start"), (FILE_ID, "ascending")]
    return [*order, (ROW_GROUP, "ascending")] if row_groups else order


@dataclass(frozen=True)
class IndexFileInfo:
    """What the root keeps of an index file: enough to read its footer in one exact read."""

    path: str
    min: KeyValue
    max: KeyValue
    entries: int
    chunks: int
    size: int
    footer_offset: int
    footer_length: int
    footer_crc32: int
    # For the cost model (None in indexes written before they were kept):
    data_files: int | None = None  # distinct data files its entries point at
    keys: int | None = None  # distinct keys
    chunk_files: int | None = None  # sum over chunks of the distinct data files each points at

    def to_json(self, key_type: pa.DataType) -> dict:
        return {
            "path": self.path,
            "min": values.encode(self.min, key_type),
            "max": values.encode(self.max, key_type),
            "entries": self.entries,
            "chunks": self.chunks,
            "size": self.size,
            "footer_offset": self.footer_offset,
            "footer_length": self.footer_length,
            "footer_crc32": self.footer_crc32,
            "data_files": self.data_files,
            "keys": self.keys,
            "chunk_files": self.chunk_files,
        }

    @classmethod
    def from_json(cls, raw: dict, key_type: pa.DataType) -> IndexFileInfo:
        """The entry, checked for what lakeseek never writes (ValueError): a footer outside
        the file, no chunk, a range whose minimum is above its maximum."""
        info = cls(
            path=index_path(raw["path"]),
            min=values.decode(raw["min"], key_type),
            max=values.decode(raw["max"], key_type),
            entries=int(raw["entries"]),
            chunks=int(raw["chunks"]),
            size=int(raw["size"]),
            footer_offset=int(raw["footer_offset"]),
            footer_length=int(raw["footer_length"]),
            footer_crc32=int(raw["footer_crc32"]),
            data_files=None if raw.get("data_files") is None else int(raw["data_files"]),
            keys=None if raw.get("keys") is None else int(raw["keys"]),
            chunk_files=None if raw.get("chunk_files") is None else int(raw["chunk_files"]),
        )
        footer_in_file = info.footer_length > 0 and info.footer_offset == info.size - 8 - info.footer_length >= 4
        if not footer_in_file or info.entries < 1 or not 1 <= info.chunks <= info.entries:
            raise ValueError(f"index file {info.path} has an impossible footer, entry count or chunk count")
        if sort_key(info.min) > sort_key(info.max):
            raise ValueError(f"index file {info.path} has its minimum above its maximum")
        return info


# -- writing -----------------------------------------------------------------------------
def write_index_file(
    batches: Iterable[pa.RecordBatch],
    key_type: pa.DataType,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    *,
    bloom: bool = False,
) -> tuple[bytes, dict] | None:
    """Encode sorted ``(key, file_id)`` batches as one index file.

    The batches may carry a ``row_group`` column (row-group precision). Duplicate entries
    are dropped. With ``bloom``, the footer carries a bloom filter of
    the keys (increments: lookups skip the segments that cannot hold a value).
    Returns the file's bytes and its root entry (without ``path``), or None when there
    were no entries.
    """
    batches = iter(batches)
    first_batch = next(batches, None)
    if first_batch is None:
        return None
    schema = entry_schema(key_type, ROW_GROUP in first_batch.schema.names)
    stamp = FileStamp()
    batches = itertools.chain([first_batch], batches)
    sink = pa.BufferOutputStream()
    writer: pq.ParquetWriter | None = None
    chunk_ranges: list[list] = []
    entries = 0
    first: KeyValue = None
    last: KeyValue = None
    keys: list[pa.Array] = []
    file_ids: list[np.ndarray] = []
    distinct_keys = 0
    for chunk in _chunks(_deduplicated(batches, schema), chunk_rows):
        low, high = values.key_of(chunk.column(KEY)[0], key_type), values.key_of(chunk.column(KEY)[-1], key_type)
        if writer is None:
            writer = pq.ParquetWriter(sink, FileStamp.schema(schema), **_writer_options(schema, key_type))
            first = low
        elif not sort_key(last) < sort_key(low) or sort_key(high) < sort_key(low):
            # Lookups bisect chunk ranges in Python's order; never write an index they would misread.
            raise ValueError(f"index entries are not sorted: chunk [{low!r}, {high!r}] after {last!r}")
        last = high
        chunk_ranges.append([values.encode(low, key_type), values.encode(high, key_type)])
        writer.write_table(stamp.on(chunk), row_group_size=chunk.num_rows)
        entries += chunk.num_rows
        file_ids.append(np.unique(chunk.column(FILE_ID).to_numpy()))
        distinct_keys += pc.count_distinct(chunk.column(KEY), mode="all").as_py()  # a key never spans chunks
        if bloom:
            keys.append(pc.unique(chunk.column(KEY).combine_chunks()))
    if writer is None:
        return None
    metadata = {CHUNKS_METADATA: json.dumps(chunk_ranges), **stamp.footer}
    if bloom:
        distinct = pa.concat_arrays(keys)
        metadata[BLOOM_METADATA] = base64.b64encode(BloomFilter.build(distinct).to_bytes()).decode()
    writer.add_key_value_metadata(metadata)
    writer.close()
    data = sink.getvalue().to_pybytes()
    footer_length = int.from_bytes(data[-8:-4], "little")
    footer_offset = len(data) - 8 - footer_length
    info = {
        "min": values.encode(first, key_type),
        "max": values.encode(last, key_type),
        "entries": entries,
        "chunks": len(chunk_ranges),
        "size": len(data),
        "footer_offset": footer_offset,
        "footer_length": footer_length,
        "footer_crc32": footer_crc32(data),
        "data_files": len(np.unique(np.concatenate(file_ids))),
        "keys": distinct_keys,
        "chunk_files": sum(len(ids) for ids in file_ids),
    }
    return data, info


def _writer_options(schema: pa.Schema, key_type: pa.DataType) -> dict:
    delta_encoding = None
    if pa.types.is_integer(key_type) or pa.types.is_date(key_type) or pa.types.is_timestamp(key_type):
        delta_encoding = "DELTA_BINARY_PACKED"  # sorted keys: deltas are small
    elif pa.types.is_string(key_type) or pa.types.is_binary(key_type):
        delta_encoding = "DELTA_BYTE_ARRAY"  # sorted keys share prefixes
    return {
        **FileStamp.options(schema, "zstd", [FILE_ID] if delta_encoding else [KEY, FILE_ID]),
        "column_encoding": {KEY: delta_encoding} if delta_encoding else None,
        "write_page_checksum": True,
        "write_statistics": True,
    }


def _same(a: pa.Array, b: pa.Array) -> pa.Array:
    """Element-wise equality where NULL equals NULL."""
    return pc.or_(pc.fill_null(pc.equal(a, b), False), pc.and_(pc.is_null(a), pc.is_null(b)))


def _deduplicated(batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.Table]:
    previous: pa.Table | None = None  # the last row kept, to compare across batch boundaries
    for batch in batches:
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch]).select(schema.names).cast(schema)
        extended = table if previous is None else pa.concat_tables([previous, table])
        keys = extended.column(KEY).combine_chunks()
        repeated = _same(keys[1:], keys[:-1])
        for name in schema.names[1:]:
            other = extended.column(name).combine_chunks()
            repeated = pc.and_(repeated, pc.equal(other[1:], other[:-1]))
        keep = pc.invert(repeated)
        if previous is None:
            keep = pa.concat_arrays([pa.array([True]), keep])
        kept = table.filter(keep)
        previous = table.slice(table.num_rows - 1)
        if kept.num_rows:
            yield kept


def _chunks(tables: Iterable[pa.Table], chunk_rows: int) -> Iterator[pa.Table]:
    """Regroup rows into chunks of at least ``chunk_rows`` rows, cut only where the key changes."""
    pending: list[pa.Table] = []
    pending_rows = 0
    for table in tables:
        pending.append(table)
        pending_rows += table.num_rows
        while pending_rows > chunk_rows:
            combined = pa.concat_tables(pending)
            cut = _first_key_change(combined.column(KEY).combine_chunks(), chunk_rows)
            if cut is None:
                pending = [combined]
                break
            yield combined.slice(0, cut).combine_chunks()
            rest = combined.slice(cut)
            pending, pending_rows = [rest], rest.num_rows
    if pending_rows:
        yield pa.concat_tables(pending).combine_chunks()


def split_at_key_changes(table: pa.Table, max_rows: int) -> list[pa.Table]:
    """Sorted entries cut into pieces of about ``max_rows``, never between entries of one key."""
    pieces = []
    while table.num_rows > max_rows:
        cut = _first_key_change(table.column(KEY).combine_chunks(), max_rows)
        if cut is None:
            break
        pieces.append(table.slice(0, cut))
        table = table.slice(cut)
    return [*pieces, table]


def _first_key_change(keys: pa.Array, start: int) -> int | None:
    changed = pc.invert(_same(keys[start:], keys[start - 1 : -1]))
    position = pc.index(changed, True).as_py()
    return None if position < 0 else start + position


# -- reading -----------------------------------------------------------------------------
@dataclass(frozen=True)
class IndexFileFooter:
    metadata: pq.FileMetaData
    chunk_min: list[KeyValue]
    chunk_max: list[KeyValue]
    bloom: BloomFilter | None = None

    def may_contain(self, keys: pa.Array) -> np.ndarray:
        """Per key, whether the file may hold it."""
        return np.ones(len(keys), dtype=bool) if self.bloom is None else self.bloom.may_contain(keys)

    def chunk_for(self, value: KeyValue) -> int | None:
        """The chunk whose range holds ``value``, if any."""
        key = sort_key(value)
        position = bisect.bisect_right(self._chunk_keys, key) - 1
        if position < 0 or key > sort_key(self.chunk_max[position]):
            return None
        return position

    def chunk_span(self, chunk: int) -> tuple[int, int]:
        """The byte range ``[start, end)`` of a chunk's column chunks in the index file."""
        group = self.metadata.row_group(chunk)
        columns = [group.column(i) for i in range(group.num_columns)]
        starts = [c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset for c in columns]
        return min(starts), max(s + c.total_compressed_size for s, c in zip(starts, columns, strict=True))

    @cached_property
    def _chunk_keys(self) -> list[tuple]:
        return [sort_key(value) for value in self.chunk_min]


def read_footer(
    storage: Storage, path: str, info: IndexFileInfo, key_type: pa.DataType, row_groups: bool
) -> IndexFileFooter:
    """Read and check an index file's footer with one exact ranged read: its checksum, and that
    it describes the file the root says (entries, chunks, columns)."""
    try:
        tail = storage.read_range(path, info.footer_offset, info.footer_length + 8)
    except FileNotFoundError as error:
        raise IndexCorruptError(f"index file {path} is missing") from error
    if len(tail) != info.footer_length + 8 or zlib.crc32(tail) != info.footer_crc32:
        raise IndexCorruptError(f"index file {path} is truncated or corrupt (footer checksum mismatch)")
    try:
        metadata = pq.read_metadata(pa.BufferReader(tail))
        ranges = json.loads(metadata.metadata[CHUNKS_METADATA])
        bloom_text = metadata.metadata.get(BLOOM_METADATA)
        bloom = None if bloom_text is None else BloomFilter.from_bytes(base64.b64decode(bloom_text))
    except (pa.ArrowException, OSError, KeyError, ValueError, TypeError) as error:
        raise IndexCorruptError(f"index file {path} has an unreadable footer") from error
    columns = FileStamp.schema(entry_schema(key_type, row_groups)).names
    described = (metadata.num_row_groups, metadata.num_rows, metadata.schema.names)
    consistent = len(ranges) == metadata.num_row_groups and described == (info.chunks, info.entries, columns)
    if not consistent or not is_stamped(metadata):
        raise IndexCorruptError(f"index file {path} has a footer inconsistent with the index's root")
    return IndexFileFooter(
        metadata=metadata,
        chunk_min=[values.decode(low, key_type) for low, _ in ranges],
        chunk_max=[values.decode(high, key_type) for _, high in ranges],
        bloom=bloom,
    )


def read_chunk(storage: Storage, path: str, footer: IndexFileFooter, chunk: int) -> pa.Table:
    """Read one chunk (row group) with one ranged read, verifying page checksums."""
    return read_chunks(storage, path, footer, [chunk])[0]


def read_chunks(storage: Storage, path: str, footer: IndexFileFooter, chunks: Sequence[int]) -> list[pa.Table]:
    """Read chunks (row groups) of one index file at once (one ranged read each, which an
    object store issues in parallel), verifying page checksums."""
    if not chunks:
        return []
    spans = [footer.chunk_span(chunk) for chunk in chunks]
    try:
        parts = storage.read_ranges(path, [(start, end - start) for start, end in spans])
    except FileNotFoundError as error:
        raise IndexCorruptError(f"index file {path} is missing") from error
    read = zip(chunks, spans, parts, strict=True)
    return [_decoded_chunk(path, footer, chunk, span, data) for chunk, span, data in read]


def _decoded_chunk(path: str, footer: IndexFileFooter, chunk: int, span: tuple[int, int], data: bytes) -> pa.Table:
    start, end = span
    if len(data) != end - start:
        raise IndexCorruptError(f"index file {path} is truncated")
    # pyarrow addresses the chunk by its offsets in the file: place the bytes there in an
    # uninitialised buffer (untouched pages cost nothing) and decode from memory.
    buffer = pa.allocate_buffer(end)
    np.frombuffer(buffer, dtype=np.uint8)[start:end] = np.frombuffer(data, dtype=np.uint8)
    check_stamp(footer.metadata, chunk, start, data, path)
    try:
        parquet = pq.ParquetFile(pa.BufferReader(buffer), metadata=footer.metadata, page_checksum_verification=True)
        return parquet.read_row_group(chunk, columns=footer.metadata.schema.names[:-1])
    except (pa.ArrowException, OSError) as error:
        raise IndexCorruptError(f"index file {path} is corrupt: {one_line(error)}") from error


def read_entries(storage: Storage, path: str, info: IndexFileInfo, key_type: pa.DataType) -> pa.Table:
    """Every entry of an index file (for optimize), with its footer and page checksums verified."""
    try:
        data = storage.read(path)
    except FileNotFoundError as error:
        raise IndexCorruptError(f"index file {path} is missing") from error
    if len(data) != info.size or zlib.crc32(data[info.footer_offset :]) != info.footer_crc32:
        raise IndexCorruptError(f"index file {path} is truncated or corrupt (footer checksum mismatch)")
    try:
        table = pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
    except (pa.ArrowException, OSError) as error:
        raise IndexCorruptError(f"index file {path} is corrupt: {one_line(error)}") from error
    schema = entry_schema(key_type, ROW_GROUP in table.column_names)
    return table.select(schema.names).cast(schema)
