"""The lakes a service serves: per lake, the latest versions of its indexes, opened again
when one commits (checked per request, or every ``index_check_seconds``)."""

from __future__ import annotations

import threading
import time

from lakeseek.commits.log import IndexLog
from lakeseek.exceptions import LakeseekError
from lakeseek.index import Index
from lakeseek.indexes import IndexSet, open_indexes
from lakeseek.location import index_names
from lakeseek.service.config import LakeConfig
from lakeseek.sources import open_lake


class UnknownLakeError(LakeseekError):
    """A request names a lake the service does not serve."""


class ServedLake:
    def __init__(self, name: str, config: LakeConfig, check_seconds: float) -> None:
        self.name = name
        self.config = config
        self.check_seconds = check_seconds
        self._lock = threading.Lock()
        self._opened: tuple[IndexSet, tuple, float] | None = None  # indexes, their versions, when checked

    def indexes(self) -> IndexSet:
        """The latest versions of the lake's indexes (handles kept while none commits)."""
        opened = self._opened
        if opened is not None and time.monotonic() - opened[2] < self.check_seconds:
            return opened[0]
        with self._lock:  # one check at a time; the others wait for its answer
            opened = self._opened
            now = time.monotonic()
            if opened is not None and now - opened[2] < self.check_seconds:
                return opened[0]
            listed = _listed(opened[0]) if opened is not None else None
            if opened is not None and listed == opened[1]:
                self._opened = (opened[0], listed, now)
                return opened[0]
            lake = open_lake(self.config.location, self.config.storage_options, source_format=self.config.source_format)
            indexes = open_indexes(lake)
            if listed is None:
                listed = _listed(indexes)
            if [(name, version) for name, version, _ in listed] != _opened(indexes):
                listed = ()  # a commit landed between the listing and the opening: look again next time
            self._opened = (indexes, listed, now)
            return indexes

    @property
    def is_local(self) -> bool:
        """Whether the lake is in local storage (unknown until a request opened it: not)."""
        storage = self.storage
        return storage is not None and storage.is_local

    @property
    def storage(self):
        """The lake's storage, once a request opened the lake."""
        opened = self._opened
        return None if opened is None else opened[0].lake.storage

    def index_of(self, column: str | None) -> Index:
        """The index ``locate`` asks: one of ``column``, or the only index."""
        indexes = self.indexes().indexes
        if column is None:
            if len(indexes) == 1:
                return indexes[0]
            raise LakeseekError(f"lake '{self.name}' has several indexes: name the column to locate keys in")
        lowered = column.lower()
        for index in indexes:
            if any(name.lower() == lowered for name in index.columns):
                return index
        indexed = ", ".join(sorted({name for index in indexes for name in index.columns}))
        raise LakeseekError(f"column '{column}' of lake '{self.name}' is not indexed (indexed: {indexed})")


def _listed(indexes: IndexSet) -> tuple:
    """The committed indexes under the lake's index home: each one's name, latest version, and
    that entry's size and time (an index deleted and created again restarts its versions)."""
    location = indexes.indexes[0].location
    found = []
    for name in index_names(location.storage, location.home):
        listing = IndexLog(location.storage, f"{location.home}/{name}").listing()
        if listing:
            version = max(listing)
            found.append((name, version, (listing[version].size, listing[version].mtime_ns)))
    return tuple(found)


def _opened(indexes: IndexSet) -> list:
    return sorted((index.name, index.version) for index in indexes.indexes)


class Lakes:
    def __init__(self, lakes: dict[str, LakeConfig], check_seconds: float) -> None:
        self._lakes = {name: ServedLake(name, config, check_seconds) for name, config in lakes.items()}

    def __getitem__(self, name: str) -> ServedLake:
        found = self._lakes.get(name)
        if found is None:
            raise UnknownLakeError(f"unknown lake '{name}' (served: {', '.join(sorted(self._lakes))})")
        return found

    def names(self) -> list[str]:
        return sorted(self._lakes)
