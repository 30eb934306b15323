"""Point lookups in an index (the paper's Algorithm 3): value -> ids of the files holding it.

No Spark. A cold lookup of one value reads the index file's footer (one exact ranged read;
the root gives its offset) and one chunk; footers stay cached in the reader, so a warm
lookup is one read. A value outside every index file's range, or outside every chunk's
range, reads nothing. Each segment of a column is searched; a delta segment whose bloom filter
(from the version's delta filter file, read once) rules the value out costs no read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.format.bloom import BloomFilter
from lakeseek.format.filters import read_filters
from lakeseek.format.index_file import FILE_ID, KEY, IndexFileFooter, read_chunk, read_footer
from lakeseek.format.lineage import Lineage, read_lineage
from lakeseek.format.root import ColumnIndex, LineagePart, Root
from lakeseek.format.values import KeyValue
from lakeseek.io import Storage


class IndexReader:
    """Reads one index version; caches its footers and lineage for the reader's lifetime."""

    def __init__(self, storage: Storage, index_dir: str, root: Root) -> None:
        self.storage = storage
        self.index_dir = index_dir
        self.root = root
        self._footers: dict[str, IndexFileFooter] = {}
        self._lineage: Lineage | None = None
        self._filters: dict[str, BloomFilter] | None = None

    def lineage(self) -> Lineage:
        """The indexed files (tombstoned ones left out)."""
        if self._lineage is None:
            lineage = self.root.lineage
            self._lineage = Lineage.concat([self._part(p) for p in lineage.parts]).without(lineage.removed)
        return self._lineage

    def pending(self) -> Lineage:
        """Files a quick refresh recorded without indexing them."""
        part = self.root.lineage.pending
        return Lineage.concat([]) if part is None else self._part(part)

    def _may_hold(self, delta_path: str, value: KeyValue) -> bool:
        if self.root.delta_filters is None:
            return True
        if self._filters is None:
            self._filters = read_filters(self.storage, f"{self.index_dir}/{self.root.delta_filters.path}")
        bloom = self._filters.get(delta_path)
        return bloom is None or bloom.may_contain(value)

    def _part(self, part: LineagePart) -> Lineage:
        return part.inline or read_lineage(self.storage, f"{self.index_dir}/{part.path}")

    def lookup(self, column: str, values: Iterable[KeyValue]) -> set[int]:
        """Ids of the indexed files holding any of ``values`` (None stands for NULL)."""
        index = self.root.columns[column]
        wanted: dict[str, list[KeyValue]] = defaultdict(list)
        files = {}
        for value in {_as_key(v, index) for v in values}:
            for position, segment in enumerate(index.segments):
                info = segment.file_for(value)
                if info is not None and position and not self._may_hold(info.path, value):
                    continue  # the delta's bloom filter rules the value out: not even its footer is read
                if info is not None:
                    wanted[info.path].append(value)
                    files[info.path] = info
        found: set[int] = set()
        for path, keys in wanted.items():
            footer = self._footer(index, files[path])
            chunks: dict[int, list[KeyValue]] = defaultdict(list)
            for key in keys:
                chunk = footer.chunk_for(key) if footer.may_contain(key) else None
                if chunk is not None:
                    chunks[chunk].append(key)
            for chunk, chunk_keys in sorted(chunks.items()):
                entries = read_chunk(self.storage, f"{self.index_dir}/{path}", footer, chunk)
                found.update(_matching_ids(entries, chunk_keys, index.key_type))
        return found

    def _footer(self, index: ColumnIndex, info) -> IndexFileFooter:
        footer = self._footers.get(info.path)
        if footer is None:
            footer = read_footer(self.storage, f"{self.index_dir}/{info.path}", info, index.key_type)
            self._footers[info.path] = footer
        return footer


def _as_key(value: KeyValue, index: ColumnIndex) -> KeyValue:
    return None if value is None else pa.scalar(value, type=index.key_type).as_py()


def _matching_ids(entries: pa.Table, keys: list[KeyValue], key_type: pa.DataType) -> list[int]:
    column = entries.column(KEY)
    present = [k for k in keys if k is not None]
    mask = pc.is_in(column, value_set=pa.array(present, type=key_type)) if present else None
    if len(present) < len(keys):
        nulls = pc.is_null(column)
        mask = nulls if mask is None else pc.or_(mask, nulls)
    return pc.unique(entries.column(FILE_ID).filter(mask)).to_pylist()
