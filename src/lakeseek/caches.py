"""What the handles on one index share in this process: per version, its kind's reader (with
the footers it read), its lineage, the latest comparison with the lake and its schema; per
index, data files' schemas by stamp and the warnings already given. Safe to use from several
threads: values are computed once and replaced whole, never changed in place."""

from __future__ import annotations

import threading
from collections import OrderedDict

import pyarrow as pa

from lakeseek.exceptions import IndexCorruptError
from lakeseek.format.lineage import Lineage
from lakeseek.format.root import Root
from lakeseek.kinds import kind_named
from lakeseek.lake.files import file_schemas, settled
from lakeseek.lake.state import LakeState, unchanged
from lakeseek.location import Location
from lakeseek.lru import CACHES


class Once:
    """A value computed on first use, then kept (computed once even when threads race)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = None

    def get(self, compute):
        with self._lock:
            if self._value is None:
                self._value = compute()
            return self._value


class VersionCache:
    """What is learned about one version of an index: its kind's reader, its lineage, the
    latest comparison with the lake and the schema of it."""

    def __init__(self, location: Location, root: Root) -> None:
        self.root = root
        self.location = location
        self.reader = kind_named(root.kind).reader(location.storage, location.index_dir, root)
        self._lineage = Once()
        self._unchanged = Once()
        self._recorded = Once()
        self._partition_types = Once()
        # The latest comparison with the lake and its schema: replaced whole, never changed in place.
        self.state: LakeState | None = None
        # The latest comparison with a version of a source that names its versions (a table
        # format): a version's files never change, so its comparison holds while it is the latest.
        self.state_at_version: tuple[str, LakeState] | None = None
        self.schema_of: tuple[LakeState, pa.Schema] | None = None

    def unchanged_state(self) -> LakeState:
        """The lake as this version covers it: every file indexed or recorded, as it was."""
        return self._unchanged.get(lambda: unchanged(self.lineage(), self.recorded()))

    def lineage(self) -> Lineage:
        return self._lineage.get(lambda: self.root.lineage.indexed(self.location.storage, self.location.index_dir))

    def recorded(self) -> Lineage:
        return self._recorded.get(lambda: self.root.lineage.recorded(self.location.storage, self.location.index_dir))

    def partition_types(self) -> dict[str, pa.DataType]:
        """The partition types the lake source gives the files the index was built on (see
        :func:`lakeseek.lake.schemas.current_partition_types`)."""

        def infer() -> dict[str, pa.DataType]:
            try:
                paths = self.lineage().paths + self.recorded().paths
            except IndexCorruptError:
                paths = []
            return dict(self.location.source.partition_types(paths, self.root.partition_columns))

        return self._partition_types.get(infer)


class IndexCache:
    """What the handles on one index in this process share: the versions they opened (a few),
    the data files' schemas by stamp, and the warnings already given."""

    VERSIONS = 4
    FILE_SCHEMAS = 100_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._versions: OrderedDict[int, VersionCache] = OrderedDict()
        self._schemas: OrderedDict[tuple, pa.Schema] = OrderedDict()
        self._said: set[str] = set()

    def version(self, location: Location, root: Root) -> VersionCache:
        with self._lock:
            found = self._versions.get(root.version)
            if found is None or found.root != root:
                found = VersionCache(location, root)
                self._versions[root.version] = found
            self._versions.move_to_end(root.version)
            while len(self._versions) > self.VERSIONS:
                self._versions.popitem(last=False)
            return found

    def file_schemas(self, source, paths: list[str], state: LakeState) -> list[tuple[str, pa.Schema]]:
        """``(path, schema)`` of the distinct schemas among ``paths`` (footers read once per
        stamp, once a file's stamp has settled: see lakeseek.lake.files.settled)."""
        keys = {path: (path, tuple(state.files[path])) for path in paths}
        with self._lock:
            known = {path: self._schemas.get(key) for path, key in keys.items()}
        missing = [path for path, schema in known.items() if schema is None]
        sizes = {path: state.files[path].size for path in missing}
        stamps = {path: state.files[path] for path in missing}
        for path, schema in zip(missing, file_schemas(source, missing, sizes, stamps), strict=True):
            known[path] = schema
        with self._lock:
            for path in missing:
                if settled(state.files[path]):
                    self._schemas[keys[path]] = known[path]
            while len(self._schemas) > self.FILE_SCHEMAS:
                self._schemas.popitem(last=False)
        distinct: dict[pa.Schema, str] = {}
        for path in paths:
            distinct.setdefault(known[path], path)
        return [(path, found) for found, path in distinct.items()]

    def first_time(self, message: str) -> bool:
        with self._lock:
            if message in self._said:
                return False
            self._said.add(message)
            return True


_SHARED: dict[tuple[int, str], IndexCache] = {}
_SHARED_LOCK = threading.Lock()


def clear_cache() -> None:
    """Forget what every handle in this process learned by reading (footers, lineages, data
    files' schemas, decoded index entries, data files' footers, parsed layout entries): the
    next queries read as cold ones do, for measuring them."""
    with _SHARED_LOCK:
        _SHARED.clear()
    for cache in CACHES.values():
        cache.clear()


def cache_for(location: Location) -> IndexCache:
    """The cache every handle on this index in the process shares."""
    key = (id(location.storage), location.index_dir)
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = IndexCache()
        return found
