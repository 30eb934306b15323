"""The lake's data files now against what an index covers: which files the index vouches
for, and which every query must read without it (new, rewritten, or recorded by a quick
refresh) or skip (removed)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.format.lineage import Lineage
from lakeseek.io import Stamp


@dataclass(frozen=True)
class Changes:
    """What a lake source says changed between two of its versions: files added (rewritten
    files are removed and added again, under the same path or another) and removed."""

    added: frozenset[str]
    removed: frozenset[str]


@dataclass(frozen=True)
class LakeState:
    """The lake now, compared with an index's lineage."""

    files: Mapping[str, Stamp]
    indexed: dict[int, str]  # file id -> relative path, for files unchanged since indexing
    new: list[str]  # in the lake, unknown to the index
    changed: list[str]  # indexed or recorded, then rewritten
    removed: list[str]  # indexed or recorded, no longer in the lake
    recorded: list[str]  # recorded by a quick refresh, unchanged since, not indexed
    indexed_bytes: int  # the size of the files in ``indexed``
    declared: pa.Schema | None = None  # the table's own schema (Snapshot.schema); None: the index's

    @cached_property
    def unindexed(self) -> list[str]:
        """Files the index knows nothing valid about: every query must read them."""
        return self.new + self.changed + self.recorded

    @cached_property
    def unindexed_bytes(self) -> int:
        files = self.files
        return sum(files[path].size for path in self.unindexed)

    @cached_property
    def indexed_paths(self) -> tuple[np.ndarray, pa.Array, np.ndarray]:
        """The indexed files as arrays: their ids (sorted), their paths in that order, and each
        path's rank in path order (to sort pairs by path without comparing strings)."""
        ids = np.array(sorted(self.indexed), dtype=np.int64)
        paths = pa.array([self.indexed[int(i)] for i in ids], pa.string())
        rank = np.empty(len(ids), dtype=np.int64)
        rank[pc.sort_indices(paths).to_numpy()] = np.arange(len(ids))
        return ids, paths, rank

    @property
    def is_fresh(self) -> bool:
        return not (self.new or self.changed or self.removed or self.recorded)


class LineageFiles(Mapping[str, Stamp]):
    """The files of lineages, by path, as a lake that has not changed since holds them: a
    mapping over the lineages' own lists, each stamp made when asked for (a lake of a million
    files is then not a million objects)."""

    def __init__(self, *lineages: Lineage) -> None:
        self._sizes = [size for lineage in lineages for size in lineage.sizes]
        self._mtimes = [mtime for lineage in lineages for mtime in lineage.mtimes]
        self._versions = [version for lineage in lineages for version in lineage.versions]
        paths = [path for lineage in lineages for path in lineage.paths]
        self._position = dict(zip(paths, range(len(paths)), strict=True))  # a later lineage's stamp wins

    def __getitem__(self, path: str) -> Stamp:
        position = self._position[path]
        return Stamp(self._sizes[position], self._mtimes[position], self._versions[position])

    def __contains__(self, path: object) -> bool:
        return path in self._position

    def __iter__(self) -> Iterator[str]:
        return iter(self._position)

    def __len__(self) -> int:
        return len(self._position)


def unchanged(indexed: Lineage, recorded: Lineage) -> LakeState:
    """The lake as an index covers it while the lake has not changed: every file indexed or
    recorded, as it was."""
    files = LineageFiles(indexed, recorded)
    recorded_paths = set(recorded.paths)
    mapping = {
        file_id: path for file_id, path in zip(indexed.ids, indexed.paths, strict=True) if path not in recorded_paths
    }
    if recorded_paths:
        live = set(mapping)
        indexed_bytes = sum(size for file_id, size in zip(indexed.ids, indexed.sizes, strict=True) if file_id in live)
    else:
        indexed_bytes = sum(indexed.sizes)
    return LakeState(files, mapping, [], [], [], list(recorded.paths), indexed_bytes)


def compare(
    lineage: Lineage, files: Mapping[str, Stamp], pending: Lineage | None = None, changes: Changes | None = None
) -> LakeState:
    """The lake's files against the indexed ``lineage`` and the quick-refresh ``pending`` files.

    ``changes`` is what the lake's source says changed since the version the lineage and
    ``pending`` describe: then a known file it does not name is as it was, and one it names
    was rewritten or removed, whatever the stamps say (a table format knows what it rewrote).
    Without it the stamps tell. Files the index does not know are new either way.
    """
    touched = None if changes is None else changes.added | changes.removed
    indexed: dict[int, str] = {}
    recorded: list[str] = []
    changed: list[str] = []
    removed: list[str] = []
    known: set[str] = set()
    indexed_bytes = 0
    for listing, target in ((lineage, None), (pending, recorded)):
        if listing is None:
            continue
        stamps = zip(listing.sizes, listing.mtimes, listing.versions, strict=True)
        for file_id, path, stamp in zip(listing.ids, listing.paths, stamps, strict=True):
            known.add(path)
            current = files.get(path)
            if current is None:
                removed.append(path)
            elif current != stamp if touched is None else path in touched:
                changed.append(path)
            elif target is None:
                indexed[file_id] = path
                indexed_bytes += stamp[0]
            else:
                target.append(path)
    new = [path for path in files if path not in known]
    return LakeState(files, indexed, new, changed, removed, recorded, indexed_bytes)
