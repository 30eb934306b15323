"""The lake's data files now against what an index covers: which files the index vouches
for, and which every query must read without it (new, rewritten, or recorded by a quick
refresh) or skip (removed)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

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

    files: dict[str, Stamp]
    indexed: dict[int, str]  # file id -> relative path, for files unchanged since indexing
    new: list[str]  # in the lake, unknown to the index
    changed: list[str]  # indexed or recorded, then rewritten
    removed: list[str]  # indexed or recorded, no longer in the lake
    recorded: list[str]  # recorded by a quick refresh, unchanged since, not indexed

    @cached_property
    def unindexed(self) -> list[str]:
        """Files the index knows nothing valid about: every query must read them."""
        return self.new + self.changed + self.recorded

    @cached_property
    def indexed_bytes(self) -> int:
        """The bytes of the files the index vouches for (worked out once per state: planning
        every query on a million files must not add them up again)."""
        files = self.files
        return sum(files[path].size for path in self.indexed.values())

    @cached_property
    def unindexed_bytes(self) -> int:
        files = self.files
        return sum(files[path].size for path in self.unindexed)

    @property
    def is_fresh(self) -> bool:
        return not (self.new or self.changed or self.removed or self.recorded)


def compare(
    lineage: Lineage, files: dict[str, Stamp], pending: Lineage | None = None, changes: Changes | None = None
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
            else:
                target.append(path)
    new = [path for path in files if path not in known]
    return LakeState(files, indexed, new, changed, removed, recorded)
