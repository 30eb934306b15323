"""The ``cuckoo`` kind: seed 004's aligned cuckoo-filter partition index, in segments.

Every data file has a cuckoo filter of each indexed column's values; a column's filters
share one bucket count and are stored bucket-major (:mod:`.filters`), so the files that may
hold a value are found in two ranged reads whatever the number of files. What the seed's
proof of concept lacks is here: appends as new segments (object stores cannot append),
removals that persist (tombstones, dropped by a full optimize), merges of segments, commits
through the log, and a build on Spark (:mod:`.build`). Lookups: :mod:`.reader`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from lakeseek.cost import Cost, Estimate
from lakeseek.exceptions import LakeseekError
from lakeseek.format.lineage import Lineage
from lakeseek.format.root import Root
from lakeseek.io import Storage
from lakeseek.kinds.base import Change, Hypothesis, IndexKind, Job, Values, check_options, check_whole_number
from lakeseek.kinds.cuckoo.build import build_segments, merge_segments
from lakeseek.kinds.cuckoo.content import CuckooConfig, CuckooIndex
from lakeseek.kinds.cuckoo.filters import FINGERPRINT_BITS, load
from lakeseek.kinds.cuckoo.reader import CuckooReader
from lakeseek.kinds.file_keys import indexed_columns
from lakeseek.kinds.segments import AppendSegments, merged_per_column

MAX_SLOTS = 64


# A directory row (file id, slots, NULL flag, keys), as the what-if estimate counts it.
DIRECTORY_ROW_BYTES = 16


class CuckooKind(IndexKind):
    """Options: ``fingerprint_bits`` (16, 24 or 32; default 16, the seed's) and ``slots`` (the
    slots per bucket of a median file, which sets the bucket count; default 4)."""

    name = "cuckoo"

    def configure(self, options: Mapping[str, Any]) -> CuckooConfig:
        check_options(self.name, options, ("fingerprint_bits", "slots"))
        config = CuckooConfig(**options)
        bits = config.fingerprint_bits
        if not isinstance(bits, int) or isinstance(bits, bool) or bits not in FINGERPRINT_BITS:
            raise LakeseekError(f"fingerprint_bits must be 16, 24 or 32, not {config.fingerprint_bits!r}")
        check_whole_number("slots", config.slots, 1, MAX_SLOTS)
        return config

    def check_columns(self, names: list[str], schema: pa.Schema, partition_columns: tuple[str, ...]) -> list[str]:
        return [column.name for column in indexed_columns(names, schema, partition_columns)]

    def what_if(self, config: CuckooConfig, hypothesis: Hypothesis) -> Estimate | str:
        """Two bucket reads per value, each holding every file's slots of the bucket; each file
        a false positive with chance ``2 * slots * load / 2^bits`` (the bucket count is chosen
        to fill the median file's slots to the load); IS NULL reads the directory."""
        if not isinstance(hypothesis.condition, Values):
            return f"a cuckoo filter answers = and IN on '{hypothesis.condition.column}', not ranges or LIKE"
        keys, files = hypothesis.keys, hypothesis.files
        stride = files * config.slots * config.fingerprint_bits / 8
        index = Cost(2 * keys, 2 * keys * stride) if keys else Cost(1, files * DIRECTORY_ROW_BYTES)
        per_file = 2 * config.slots * load(config.slots) / 2.0**config.fingerprint_bits
        return Estimate(min(files, hypothesis.holding + keys * files * per_file), index)

    def decode(self, raw: dict) -> CuckooIndex:
        return CuckooIndex.from_json(raw)

    def reader(self, storage: Storage, index_dir: str, root: Root) -> CuckooReader:
        return CuckooReader(storage, index_dir, root)

    def build(self, job: Job, config: CuckooConfig, columns: list[str], files: Lineage) -> CuckooIndex:
        indexed = indexed_columns(columns, job.schema, job.partition_columns)
        segments = build_segments(job, config, indexed, files, {})
        return CuckooIndex(config, {c.name: c.key_type for c in indexed}, tuple(segments))

    def add_columns(self, job: Job, content: CuckooIndex, columns: list[str], files: Lineage) -> Change:
        indexed = indexed_columns(columns, job.schema, job.partition_columns)
        segments = build_segments(job, content.config, indexed, files, {})
        return Change((AppendSegments(tuple(segments), {c.name: c.key_type for c in indexed}),))

    def add_files(self, job: Job, content: CuckooIndex, files: Lineage) -> Change:
        indexed = indexed_columns(list(content.columns), job.schema, job.partition_columns)
        buckets = {column: content.buckets_of(column) for column in content.columns}
        return Change((AppendSegments(tuple(build_segments(job, content.config, indexed, files, buckets))),))

    def optimize(self, job: Job, content: CuckooIndex, mode: str, removed: frozenset[int]) -> Change | None:
        return merged_per_column(
            content, mode, removed, lambda chosen: merge_segments(job.storage, job.files, chosen, removed)
        )


__all__ = ["CuckooIndex", "CuckooKind"]
