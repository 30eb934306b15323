"""An OTree lake as a lake source (``otree``): its files are the ones its latest log entry
names, its versions the entries' numbers, and its blocks prune what every query reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

import pyarrow as pa

from lakeseek.engine.runner import Runner
from lakeseek.exceptions import IndexCorruptError, LakeNotFoundError
from lakeseek.io import Stamp, Storage
from lakeseek.lake.formats.base import ColumnStatistics
from lakeseek.lake.state import Changes
from lakeseek.layout.prune import LayoutPruner
from lakeseek.layout.table import LAYOUT_DIR, LayoutLog, LayoutState, decode_bound
from lakeseek.sources.base import LakeSchema, LakeSource, Snapshot, bounded_by_metadata

NAME = "otree"


def is_layout(storage: Storage, root: str) -> bool:
    return storage.is_dir(f"{root}/{LAYOUT_DIR}/log")


class LayoutSource(LakeSource):
    name = NAME
    spark_listing_options: ClassVar[Mapping[str, str]] = {"recursiveFileLookup": "true"}  # files under data/
    prunes_itself = True

    def __init__(self, storage: Storage, root: str) -> None:
        super().__init__(storage, root)
        self.log = LayoutLog(storage, root)
        self._state: LayoutState | None = None
        self._pruner: tuple[int, LayoutPruner] | None = None

    def state(self, version: int | None = None) -> LayoutState:
        """The latest state (or ``version``'s), read once per version."""
        if version is None:
            latest = self.log.versions()
            version = latest[-1] if latest else None
            if version is None:
                return self.log.latest()  # LakeNotFoundError, named
        if self._state is None or self._state.version != version:
            self._state = self.log.read(version)
        return self._state

    def snapshot(self, *, exclude: str | None = None) -> Snapshot:
        state = self.state()
        # Files are never rewritten in place (unique names): size and write time identify them.
        files = {path: Stamp(f.size, f.written_ms * 1_000_000, "") for path, f in state.files.items()}
        return Snapshot(files, str(state.version))

    def version(self, known: str | None = None) -> str | None:
        versions = self.log.versions()
        return str(versions[-1]) if versions else None

    def changes(self, since: str, snapshot: Snapshot) -> Changes | None:
        try:
            then = self.log.read(int(since)).files
        except (LakeNotFoundError, IndexCorruptError, ValueError):
            return None  # an entry gone or unreadable: the stamps tell
        now = set(snapshot.files)
        return Changes(frozenset(now - set(then)), frozenset(set(then) - now))

    def discover(self, files: Mapping[str, Stamp], runner: Callable[[], Runner]) -> LakeSchema:
        return LakeSchema.of(self.state().schema)

    def recorded_statistics(self, files: Sequence[str], schema: pa.Schema) -> dict[str, dict[str, ColumnStatistics]]:
        state = self.state()
        found: dict[str, dict[str, ColumnStatistics]] = {}
        for path in files:
            entry = state.files.get(path)
            if entry is None:
                continue
            found[path] = {}
            for name, (low, high, nulls) in entry.statistics.items():
                if name not in schema.names or not bounded_by_metadata(schema.field(name).type):
                    continue
                column_type = schema.field(name).type
                if low is None:
                    found[path][name] = ColumnStatistics(None, None, nulls, 0)
                    continue
                bounds = pa.array([decode_bound(low), decode_bound(high)])
                if pa.types.is_temporal(column_type):
                    bounds = bounds.cast(pa.int32() if pa.types.is_date32(column_type) else pa.int64())
                low, high = bounds.cast(column_type).to_pylist()
                found[path][name] = ColumnStatistics(low, high, nulls, entry.rows - nulls)
        return found

    def prune(self, files: Sequence[str], predicate) -> list[str]:
        """The files whose blocks may hold rows ``predicate`` (bound) keeps; files the layout
        does not name are kept."""
        # Any state read will do, without asking the log again: a file's path names one content
        # and its blocks for good, and files the state does not name are kept.
        state = self._state or self.state()
        if self._pruner is None or self._pruner[0] != state.version:
            self._pruner = (state.version, LayoutPruner(state))
        listed = [path for path in files if path in state.files]
        kept = set(self._pruner[1].files(predicate, listed))
        return [path for path in files if path in kept or path not in state.files]
