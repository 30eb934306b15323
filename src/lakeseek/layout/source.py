"""An OTree lake as a lake source (``otree``): its files are the ones its latest log entry
names, its versions the entries' numbers, and its blocks prune what every query reads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import ClassVar

import pyarrow as pa

from lakeseek.engine.runner import Runner
from lakeseek.exceptions import IndexCorruptError, LakeNotFoundError
from lakeseek.io import Stamp, Storage
from lakeseek.lake.formats.base import ColumnStatistics
from lakeseek.lake.state import Changes
from lakeseek.layout.prune import pruner_of
from lakeseek.layout.table import LAYOUT_DIR, LayoutLog, LayoutState, decode_bound
from lakeseek.sources.base import LakeSchema, LakeSource, Snapshot, bounded_by_metadata

NAME = "otree"


def is_layout(storage: Storage, root: str) -> bool:
    return storage.is_dir(f"{root}/{LAYOUT_DIR}/log")


def stamps_of(state: LayoutState, paths: Iterable[str]) -> dict[str, Stamp]:
    """The stamps of ``paths`` of ``state``: files are never rewritten in place (unique
    names), so their size and write time identify them."""
    return {path: Stamp(state.files[path].size, state.files[path].written_ms * 1_000_000, "") for path in paths}


class LayoutSource(LakeSource):
    name = NAME
    spark_listing_options: ClassVar[Mapping[str, str]] = {"recursiveFileLookup": "true"}  # files under data/
    prunes_itself = True

    def __init__(self, storage: Storage, root: str) -> None:
        super().__init__(storage, root)
        self.log = LayoutLog(storage, root)
        self._state: LayoutState | None = None

    def state(self, version: int | None = None) -> LayoutState:
        """The latest state (one LIST of the log), or ``version``'s."""
        if version is None:
            self._state = self.log.latest()
        elif self._state is None or self._state.version != version:
            self._state = self.log.read(version)
        return self._state

    @property
    def current(self) -> LayoutState:
        """The state this handle read last (the latest, read now, when it read none)."""
        return self._state or self.state()

    def snapshot(self, *, exclude: str | None = None) -> Snapshot:
        state = self.state()
        return Snapshot(stamps_of(state, state.files), state.token)

    def version(self, known: str | None = None) -> str | None:
        return self.state().token if self.log.exists() else None

    def changes(self, since: str, snapshot: Snapshot) -> Changes | None:
        try:
            number, _, checksum = since.partition(":")
            entry = self.log.read(int(number))
            if str(entry.checksum) != checksum:
                return None  # another lake's entry of that number: the stamps tell
            then = entry.files
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
        state = self.current
        listed = [path for path in files if path in state.files]
        kept = set(pruner_of(state).files(predicate, listed))
        return [path for path in files if path in kept or path not in state.files]
