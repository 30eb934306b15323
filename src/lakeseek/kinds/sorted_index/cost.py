"""The sorted kind's cost model: from the root alone (no read), what a lookup reads and leaves.

The root keeps, per index file, its entries, distinct keys and distinct data files (overall
and summed per chunk), so the number of data files a selection of keys leaves (``|F(Q)|``) is
estimated as the lower of two bounds: Cardenas' formula for scattered keys (an index file
whose ``e = entries / data_files`` entries per data file are selected with probability ``p``
leaves each of its data files with probability ``1 - (1 - p) ** e``), and the files of the
chunks read, for clustered keys.
"""

from __future__ import annotations

import math

from lakeseek.cost import Cost, Estimate
from lakeseek.format.values import KeyValue
from lakeseek.kinds.keys import key_number
from lakeseek.kinds.sorted_index.index_file import IndexFileInfo

# What reading one chunk on its own costs beyond its bytes (its row group opened from the
# footer and decoded apart), in bytes read: benchmarks/seek_scan.py measured 0.05 ms of it
# beside 0.13 ms for the bytes of a 34 KiB chunk.
CHUNK_OVERHEAD_BYTES = 16 << 10


def reads_whole(info: IndexFileInfo, chunks: int) -> bool:
    """Whether ``chunks`` of the index file cost more than the whole file (Hudi's seek or scan,
    by cost). Both are one round trip: chunks are read at once (in parallel and merged when
    near on an object store); the chunks cost their bytes and each its own decoding."""
    return info.chunks > 1 and info.size <= chunks * (info.size / info.chunks + CHUNK_OVERHEAD_BYTES)


def estimate_files(infos: list[tuple[IndexFileInfo, float, int]], total_files: int) -> Estimate:
    """The cost of reading ``(index file, share of its keys selected, chunks read)`` and the
    data files left."""
    index = Cost()
    candidates = 0.0
    for info, share, chunks in infos:
        if reads_whole(info, chunks):
            index = index + Cost(1, info.size)  # read whole, in one read
        else:
            index = index + Cost(1 + chunks, info.footer_length + chunks * info.size / max(info.chunks, 1))
        data_files = info.data_files or info.entries
        per_file = info.entries / max(data_files, 1)
        scattered = data_files * (1 - (1 - min(share, 1.0)) ** per_file)
        # Clustered keys (a time column) put few files in each chunk: the chunks read bound
        # the files better than Cardenas' formula, which assumes keys scattered at random.
        clustered = chunks * info.chunk_files / info.chunks if info.chunk_files else scattered
        candidates += min(scattered, clustered)
    return Estimate(min(candidates, total_files), index)


def key_share(info: IndexFileInfo, low: KeyValue, high: KeyValue) -> float:
    """The share of an index file's key range ``[info.min, info.max]`` inside ``[low, high]``
    (None: unbounded), by linear interpolation of the keys as numbers."""
    # A file starting with NULL keys: its lowest non-NULL key is unknown, the range's low stands in.
    a, b = key_number(info.min if info.min is not None else low), key_number(info.max)
    if a is None or b is None or b <= a:
        return 1.0
    lo = a if low is None else max(a, key_number(low))
    hi = b if high is None else min(b, key_number(high))
    share = (hi - lo) / (b - a)
    return min(1.0, max(share, 1 / max(info.keys or info.entries, 1)))


def chunks_for_share(info: IndexFileInfo, share: float) -> int:
    """Chunks a contiguous key range covering ``share`` of an index file touches."""
    return min(info.chunks, math.ceil(share * info.chunks) + 1)
